//! A journal made by the released schema (version 4, what 0.2.0 writes) is
//! migrated to the narrowed write path (version 5) with its rows as they were,
//! and resumes them: a row in every state, written by that schema's own steps
//! run by the storage crate's migrator, exactly as the released crate runs them.

use std::time::SystemTime;

use idempotency_storage::{Migration, Schema, VersionRecord};
use reqwest_resilience_journal::rusqlite;
use reqwest_resilience_journal::IntentState;

use crate::support::backend::{client, Backend};
use crate::support::server::Server;

crate::e2e_on_both_backends!(a_released_journal_keeps_its_rows_and_resumes_after_the_migration);

macro_rules! released {
    ($backend:literal) => {
        Schema::new(
            VersionRecord::Table {
                name: "journal_schema_versions",
                names: true,
            },
            &[
                released!($backend, 1, "0001_initial"),
                released!($backend, 2, "0002_worker_incarnation"),
                released!($backend, 3, "0003_outbox_queued"),
                released!($backend, 4, "0004_acknowledged"),
            ],
        )
    };
    ($backend:literal, $version:literal, $name:literal) => {
        Migration::new(
            $version,
            $name,
            include_str!(concat!("../../migrations/", $backend, "/", $name, ".sql")),
        )
    };
}

const RELEASED_SQLITE: Schema = released!("sqlite");
#[cfg(feature = "postgres")]
const RELEASED_POSTGRES: Schema = released!("postgres");

const HEADERS: &[u8] = b"content-type: application/json\r\n";

/// One row of the released table, every column.
struct Row {
    key: &'static str,
    state: &'static str,
    owner: Option<&'static str>,
    incarnation: Option<&'static str>,
    /// Relative to now, ms.
    lease_until: Option<i64>,
    due_at: Option<i64>,
    fence: i64,
    runs: i64,
    status: Option<i32>,
    locator: Option<&'static str>,
    detail: Option<&'static str>,
    acknowledged: Option<i64>,
}

/// A row in every state; the three due ones are resumed, the live lease is not.
const ROWS: [Row; 8] = [
    Row::open("r-queued", "queued", 0, Some(-1_000), None),
    Row::open("r-in-flight-expired", "in_flight", 1, None, Some(-1_000)),
    Row::open("r-in-flight-live", "in_flight", 1, None, Some(3_600_000)),
    Row {
        status: Some(503),
        detail: Some("response lost"),
        ..Row::open("r-unknown", "unknown", 2, Some(-1_000), None)
    },
    Row {
        status: Some(201),
        locator: Some("/payments/1"),
        acknowledged: Some(-500),
        ..Row::open("r-succeeded-acknowledged", "succeeded", 1, None, None)
    },
    Row {
        status: Some(201),
        ..Row::open("r-succeeded", "succeeded", 1, None, None)
    },
    Row {
        status: Some(422),
        detail: Some("mismatch"),
        ..Row::open("r-failed", "failed", 1, None, None)
    },
    Row {
        detail: Some("by hand"),
        ..Row::open("r-abandoned", "abandoned", 2, None, None)
    },
];

impl Row {
    const fn open(
        key: &'static str,
        state: &'static str,
        fence: i64,
        due_at: Option<i64>,
        lease_until: Option<i64>,
    ) -> Row {
        let leased = lease_until.is_some();
        Row {
            key,
            state,
            owner: if leased { Some("old-worker") } else { None },
            incarnation: if leased { Some("old-process") } else { None },
            lease_until,
            due_at,
            fence,
            runs: fence,
            status: None,
            locator: None,
            detail: None,
            acknowledged: None,
        }
    }

    fn body(&self) -> Vec<u8> {
        format!(r#"{{"pay":"{}"}}"#, self.key).into_bytes()
    }
}

const INSERT_COLUMNS: &str = "key, key_on_wire, method, url, headers, body, deadline_ms,
    retention_end_ms, state, owner, incarnation, lease_until_ms, fence, runs, due_at_ms,
    status, locator, detail, created_ms, updated_ms, acknowledged_ms";

fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap();
    i64::try_from(since.as_millis()).unwrap()
}

/// Makes the released journal with [`ROWS`] (created a second apart, oldest
/// first), every request to `url`.
async fn released_journal(backend: &Backend, url: &str) {
    let now = now_ms();
    let at = |offset: Option<i64>| offset.map(|offset| now + offset);
    match backend {
        Backend::Sqlite(path) => {
            let mut conn = rusqlite::Connection::open(path).unwrap();
            idempotency_storage::sqlite::migrate(&mut conn, &RELEASED_SQLITE).unwrap();
            for (i, row) in (0i64..).zip(&ROWS) {
                let created = now - 60_000 + i * 1_000;
                conn.execute(
                    &format!(
                        "INSERT INTO journal_intents ({INSERT_COLUMNS}) VALUES (?1, 1, 'POST',
                         ?2, ?3, ?4, 5000, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                         ?16, ?16, ?17)"
                    ),
                    rusqlite::params![
                        row.key,
                        url,
                        HEADERS,
                        row.body(),
                        now + 86_400_000,
                        row.state,
                        row.owner,
                        row.incarnation,
                        at(row.lease_until),
                        row.fence,
                        row.runs,
                        at(row.due_at),
                        row.status,
                        row.locator,
                        row.detail,
                        created,
                        at(row.acknowledged),
                    ],
                )
                .unwrap();
            }
        }
        #[cfg(not(feature = "postgres"))]
        Backend::Postgres(_) => unreachable!("built without the postgres feature"),
        #[cfg(feature = "postgres")]
        Backend::Postgres(conninfo) => {
            let mut client = pg_client(conninfo).await;
            idempotency_storage::postgres::migrate(&mut client, &RELEASED_POSTGRES, 0x7465_7374)
                .await
                .unwrap();
            for (i, row) in (0i64..).zip(&ROWS) {
                let created = now - 60_000 + i * 1_000;
                client
                    .execute(
                        &format!(
                            "INSERT INTO journal_intents ({INSERT_COLUMNS}) VALUES ($1, true,
                             'POST', $2, $3, $4, 5000, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                             $14, $15, $16, $16, $17)"
                        ),
                        &[
                            &row.key,
                            &url,
                            &HEADERS,
                            &row.body(),
                            &(now + 86_400_000),
                            &row.state,
                            &row.owner,
                            &row.incarnation,
                            &at(row.lease_until),
                            &row.fence,
                            &row.runs,
                            &at(row.due_at),
                            &row.status,
                            &row.locator,
                            &row.detail,
                            &created,
                            &at(row.acknowledged),
                        ],
                    )
                    .await
                    .unwrap();
            }
        }
    }
}

#[cfg(feature = "postgres")]
async fn pg_client(conninfo: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Every row, every column, as the database holds it (read past the journal).
async fn table(backend: &Backend) -> Vec<String> {
    match backend {
        Backend::Sqlite(path) => {
            let conn = rusqlite::Connection::open(path).unwrap();
            let mut statement = conn
                .prepare("SELECT * FROM journal_intents ORDER BY key")
                .unwrap();
            let columns = statement.column_count();
            let rows = statement
                .query_map([], |row| {
                    (0..columns)
                        .map(|i| row.get::<_, rusqlite::types::Value>(i))
                        .collect::<Result<Vec<_>, _>>()
                        .map(|values| format!("{values:?}"))
                })
                .unwrap();
            rows.collect::<Result<_, _>>().unwrap()
        }
        #[cfg(not(feature = "postgres"))]
        Backend::Postgres(_) => unreachable!("built without the postgres feature"),
        #[cfg(feature = "postgres")]
        Backend::Postgres(conninfo) => pg_client(conninfo)
            .await
            .query(
                "SELECT row_to_json(t)::text FROM journal_intents t ORDER BY key",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect(),
    }
}

/// The journal's recorded schema versions.
async fn versions(backend: &Backend) -> Vec<u32> {
    match backend {
        Backend::Sqlite(path) => crate::support::schema::journal_versions(path)
            .into_iter()
            .map(|(version, _)| version)
            .collect(),
        #[cfg(not(feature = "postgres"))]
        Backend::Postgres(_) => unreachable!("built without the postgres feature"),
        #[cfg(feature = "postgres")]
        Backend::Postgres(conninfo) => pg_client(conninfo)
            .await
            .query(
                "SELECT version FROM journal_schema_versions ORDER BY version",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| u32::try_from(row.get::<_, i32>(0)).unwrap())
            .collect(),
    }
}

async fn a_released_journal_keeps_its_rows_and_resumes_after_the_migration(backend: Backend) {
    let server = Server::start().await;
    released_journal(&backend, &server.url).await;
    assert_eq!(versions(&backend).await, [1, 2, 3, 4]);
    let before = table(&backend).await;
    assert_eq!(before.len(), ROWS.len());

    let journal = backend.journal(|b| b).await;
    assert_eq!(versions(&backend).await, [1, 2, 3, 4, 5]);
    assert_eq!(
        table(&backend).await,
        before,
        "every row, every column, as it was"
    );
    for row in &ROWS {
        let record = journal.get(row.key).await.unwrap().expect(row.key);
        assert_eq!(record.state.as_str(), row.state, "{}", row.key);
        assert_eq!(record.body, row.body(), "{}", row.key);
        assert_eq!(record.headers["content-type"], "application/json");
        assert_eq!((record.fence, record.runs), (row.fence, row.runs));
        assert_eq!(record.status, row.status.map(|s| u16::try_from(s).unwrap()));
        assert_eq!(record.locator.as_deref(), row.locator);
        assert_eq!(record.detail.as_deref(), row.detail);
        assert_eq!(record.owner.as_deref(), row.owner);
    }
    let waiting: Vec<String> = journal
        .unacknowledged(10)
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.key)
        .collect();
    assert_eq!(
        waiting,
        ["r-succeeded", "r-failed", "r-abandoned"],
        "results oldest first; the acknowledged one and the open ones are not waiting"
    );

    // The due rows (queued, unknown, an ended lease) are resumed with their
    // keys and bodies; the live lease and the results are left alone.
    let report = journal.resume(&client(3), 10).await.unwrap();
    assert_eq!((report.claimed, report.succeeded), (3, 3), "{report:?}");
    for key in ["r-queued", "r-in-flight-expired", "r-unknown"] {
        let seen = server.seen_with_key(key);
        assert_eq!(seen.len(), 1, "{key} sent once");
        assert_eq!(seen[0].body, format!(r#"{{"pay":"{key}"}}"#).as_bytes());
        let record = journal.get(key).await.unwrap().unwrap();
        assert_eq!(record.state, IntentState::Succeeded, "{key}");
    }
    assert_eq!(server.effects(), 3, "nothing else was sent");
    let live = journal.get("r-in-flight-live").await.unwrap().unwrap();
    assert_eq!((live.state, live.fence), (IntentState::InFlight, 1));
    let mut waiting: Vec<String> = journal
        .unacknowledged(10)
        .await
        .unwrap()
        .into_iter()
        .map(|record| record.key)
        .collect();
    waiting.sort();
    assert_eq!(
        waiting,
        [
            "r-abandoned",
            "r-failed",
            "r-in-flight-expired",
            "r-queued",
            "r-succeeded",
            "r-unknown"
        ]
    );
    // A result acknowledged before the upgrade stays acknowledged.
    assert!(!journal
        .acknowledge("r-succeeded-acknowledged")
        .await
        .unwrap());
}
