//! The schema evolves by versioned migrations: a journal made by the first
//! schema (every release before versioning) is upgraded in place, migrations
//! run once under a lock when several processes open a journal together, and a
//! journal migrated by a newer crate is refused.

use std::time::Duration;

use reqwest_resilience_journal::{
    Claimed, IntentState, JournalError, JournalStore, Outcome, SqliteStore, Worker,
};

use crate::support::sqlite_path;

use crate::support::schema::LATEST;

/// The first schema, exactly as releases before versioning created it.
const SQLITE_V1: &str = include_str!("../../migrations/sqlite/0001_initial.sql");

/// A row as the first schema stored it: an `unknown` intent due long ago.
const V1_ROW: &str = "INSERT INTO journal_intents (key, key_on_wire, method, url, headers,
    body, deadline_ms, retention_end_ms, state, owner, lease_until_ms, fence, runs, due_at_ms,
    status, locator, detail, created_ms, updated_ms)
    VALUES ('old-1', 1, 'POST', 'http://127.0.0.1:9/payments',
    X'636F6E74656E742D747970653A206170706C69636174696F6E2F6A736F6E0D0A',
    X'7B7D', 5000, 9999999999999, 'unknown', 'worker-old', NULL, 3, 3, 1000,
    NULL, NULL, 'response lost', 1000, 1000)";

/// A result recorded under the first schema, before acknowledgements existed.
fn v1_result() -> String {
    V1_ROW
        .replace("'old-1'", "'old-paid'")
        .replace("'unknown'", "'succeeded'")
}

/// Results from before version 4 count as delivered; one recorded after the
/// upgrade is listed until acknowledged.
async fn only_new_results_are_unacknowledged(store: &impl JournalStore, claimed: &Claimed) {
    assert!(
        store.unacknowledged(10).await.unwrap().is_empty(),
        "a result from before the upgrade counts as acknowledged"
    );
    let paid = Outcome::Succeeded {
        status: 201,
        locator: None,
    };
    store.record(&claimed.lease, &paid).await.unwrap();
    let listed: Vec<_> = store
        .unacknowledged(10)
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.key)
        .collect();
    assert_eq!(listed, ["old-1"]);
}

#[test]
fn a_first_schema_sqlite_journal_is_upgraded_in_place() {
    let path = sqlite_path("v1");
    {
        let v1 = rusqlite::Connection::open(&path).unwrap();
        v1.execute_batch(SQLITE_V1).unwrap();
        v1.execute(V1_ROW, []).unwrap();
        v1.execute(&v1_result(), []).unwrap();
        let version: u32 = v1
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 0, "the first schema recorded no version");
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), LATEST);
    assert_eq!(
        crate::support::schema::user_version(&path),
        0,
        "the journal no longer writes user_version"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let row = store.get("old-1").await.unwrap().expect("the old row");
        assert_eq!(row.state, IntentState::Unknown);
        assert_eq!((row.fence, row.runs), (3, 3));
        assert_eq!(row.body, b"{}");
        assert_eq!(row.headers["content-type"], "application/json");
        assert_eq!(
            row.incarnation, None,
            "the new column is empty for old rows"
        );
        let claimed = store
            .claim(&Worker::new("upgraded"), Duration::from_secs(60), 10)
            .await
            .unwrap();
        assert_eq!(
            claimed.len(),
            1,
            "the old row is claimable after the upgrade"
        );
        assert_eq!(claimed[0].record.fence, 4);
        assert_eq!(
            claimed[0].record.incarnation.as_deref(),
            Some(Worker::this_process_incarnation())
        );
        only_new_results_are_unacknowledged(&store, &claimed[0]).await;
    });
    drop(store);
    // Opening again applies nothing and keeps the version.
    assert_eq!(
        SqliteStore::open(&path).unwrap().schema_version().unwrap(),
        LATEST
    );
}

#[test]
fn sqlite_migrations_run_once_when_opened_together() {
    // Eight opens race for the WAL switch, which SQLite refuses at once (no busy
    // handler) while another connection holds the file: about one run in nine
    // failed with four opens before the switch was retried.
    let path = sqlite_path("together");
    let opens: Vec<_> = (0..8)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || SqliteStore::open(path).map(|s| s.schema_version()))
        })
        .collect();
    for open in opens {
        let version = open.join().unwrap().expect("opened").expect("version");
        assert_eq!(version, LATEST);
    }
}

#[test]
fn a_journal_from_a_newer_crate_is_refused() {
    let path = sqlite_path("newer");
    SqliteStore::open(&path).unwrap();
    // A newer crate records its step in the journal's versions table.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO journal_schema_versions (version, name) VALUES (?1, '0006_future')",
            [LATEST + 1],
        )
        .unwrap();
    let error = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(error, JournalError::Schema(_)), "{error}");
    assert!(error.to_string().contains("newer"), "{error}");
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use reqwest_resilience_journal::PostgresStore;

    const POSTGRES_V1: &str = include_str!("../../migrations/postgres/0001_initial.sql");

    async fn client(conninfo: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
    }

    async fn versions(conninfo: &str) -> Vec<i32> {
        client(conninfo)
            .await
            .query(
                "SELECT version FROM journal_schema_versions ORDER BY version",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_first_schema_postgres_journal_is_upgraded_in_place() {
        let Some(conninfo) = crate::support::pg::fresh_schema("v1").await else {
            return;
        };
        let v1 = client(&conninfo).await;
        v1.batch_execute(POSTGRES_V1).await.unwrap();
        // The same row in PostgreSQL's literals (boolean, bytea).
        let row = V1_ROW
            .replace("1, 'POST'", "true, 'POST'")
            .replace("X'636F", "'\\x636F")
            .replace("0D0A'", "0D0A'::bytea")
            .replace("X'7B7D'", "'\\x7B7D'::bytea");
        v1.batch_execute(&row).await.unwrap();
        let result = row
            .replace("'old-1'", "'old-paid'")
            .replace("'unknown'", "'succeeded'");
        v1.batch_execute(&result).await.unwrap();
        let store = PostgresStore::connect(&conninfo).await.unwrap();
        assert_eq!(versions(&conninfo).await, [1, 2, 3, 4, 5]);
        let row = store.get("old-1").await.unwrap().expect("the old row");
        assert_eq!((row.state, row.fence), (IntentState::Unknown, 3));
        assert_eq!(row.incarnation, None);
        let claimed = store
            .claim(&Worker::new("upgraded"), Duration::from_secs(60), 10)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        only_new_results_are_unacknowledged(&store, &claimed[0]).await;
        drop(store);
        PostgresStore::connect(&conninfo).await.unwrap();
        assert_eq!(versions(&conninfo).await, [1, 2, 3, 4, 5], "each step once");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_migrations_run_once_when_workers_start_together() {
        let Some(conninfo) = crate::support::pg::fresh_schema("together").await else {
            return;
        };
        let connects: Vec<_> = (0..4)
            .map(|_| {
                let conninfo = conninfo.clone();
                tokio::spawn(async move { PostgresStore::connect(&conninfo).await.map(drop) })
            })
            .collect();
        for connect in connects {
            connect.await.unwrap().expect("connected and migrated");
        }
        assert_eq!(versions(&conninfo).await, [1, 2, 3, 4, 5]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_migration_refused_for_lack_of_privileges_is_a_schema_error() {
        let Some(conninfo) = crate::support::pg::fresh_schema("noddl").await else {
            return;
        };
        // `… user=postgres … options='-csearch_path=SCHEMA'` (the throwaway form).
        let Some(schema) = conninfo
            .split("search_path=")
            .nth(1)
            .map(|rest| rest.trim_end_matches('\''))
        else {
            return eprintln!("DATABASE_URL in URL form: privilege test skipped");
        };
        let role = format!("r_{schema}");
        client(&conninfo)
            .await
            .batch_execute(&format!(
                "CREATE ROLE {role} LOGIN; GRANT USAGE ON SCHEMA {schema} TO {role};"
            ))
            .await
            .unwrap();
        let as_role = conninfo.replace("user=postgres", &format!("user={role}"));
        let error = PostgresStore::connect(&as_role).await.unwrap_err();
        assert!(
            matches!(error, reqwest_resilience_journal::JournalError::Schema(_)),
            "{error:?}"
        );
        let text = error.to_string();
        assert!(text.contains("migration was refused"), "{text}");
        assert!(text.contains("permission denied"), "{text}");
    }
}
