//! The hot path's statements keep the index they were written for, whatever the
//! table's size and statistics: each is prepared under `plan_cache_mode =
//! force_generic_plan` (the plan a long-lived prepared statement settles on) on
//! a new table and after `ANALYZE` of a small and of a 10,000-open-row table,
//! and its plan must never scan the listing index (on the new and the large
//! table it uses the primary key; a small one may be read whole). The terminal
//! update's cost (buffers touched) must stay flat from 100 to 10,000 open rows.
//! Every other statement keeps its index on a table holding a history of
//! results beside its open rows, and the write path touches only the indexes
//! it needs.

use tokio_postgres::{Client, NoTls};

use crate::record::{NewIntent, Outcome};
use crate::store::JournalStore;
use crate::worker::Worker;

use super::queries::{ABANDON, BACKLOG, CLAIM, GET, LIST, PRUNE, RECORD, TAKE_OVER, WRITE_AHEAD};
use crate::throwaway_postgres::{Durability, ThrowawayPostgres};

/// The statements that find one row by key.
const BY_KEY: [(&str, &str); 5] = [
    ("record", RECORD),
    ("take_over", TAKE_OVER),
    ("get", GET),
    ("abandon", ABANDON),
    ("acknowledge", crate::delivery::POSTGRES_ACKNOWLEDGE),
];

fn params(sql: &str) -> usize {
    (1..=20)
        .filter(|n| sql.contains(&format!("${n}")))
        .max()
        .unwrap_or(0)
}

async fn fill(client: &Client, open_rows: usize) {
    client
        .batch_execute(&format!(
            "TRUNCATE journal_intents;
             INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body,
                 retention_end_ms, state, owner, lease_until_ms, fence, runs, created_ms,
                 updated_ms)
             SELECT 'key-' || g, true, 'POST', 'http://127.0.0.1/p', '', '', 0, 'in_flight',
                 'w', 0, 1, 1, g, g
             FROM generate_series(1, {open_rows}) g;
             ANALYZE journal_intents;"
        ))
        .await
        .unwrap();
}

/// The generic plan of `sql`, as text.
async fn generic_plan(client: &Client, name: &str, sql: &str) -> String {
    client
        .batch_execute(&format!("DEALLOCATE ALL; PREPARE {name} AS {sql}"))
        .await
        .unwrap();
    let nulls = vec!["NULL"; params(sql)].join(", ");
    let rows = client
        .query(&format!("EXPLAIN EXECUTE {name}({nulls})"), &[])
        .await
        .unwrap();
    rows.iter()
        .map(|row| row.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Shared buffers the terminal update touches for one row (in a transaction
/// rolled back).
async fn record_buffers(client: &Client) -> u64 {
    client
        .batch_execute(&format!("DEALLOCATE ALL; PREPARE record AS {RECORD}"))
        .await
        .unwrap();
    client.batch_execute("BEGIN").await.unwrap();
    let rows = client
        .query(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE record('succeeded', 201, NULL, \
             NULL, NULL, 'key-50', 1, 'in_flight', 0)",
            &[],
        )
        .await
        .unwrap();
    client.batch_execute("ROLLBACK").await.unwrap();
    let plan: String = rows[0].get::<_, serde_json_text::Json>(0).0;
    ["Shared Hit Blocks", "Shared Read Blocks"]
        .iter()
        .map(|field| first_number_after(&plan, field))
        .sum()
}

/// The first number after `"field":` in a JSON plan (the top node's total).
fn first_number_after(json: &str, field: &str) -> u64 {
    let at = json.find(&format!("\"{field}\":")).expect(field) + field.len() + 3;
    json[at..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// `EXPLAIN (FORMAT JSON)` read as text (no JSON crate for one number).
mod serde_json_text {
    use tokio_postgres::types::{FromSql, Type};

    pub(super) struct Json(pub(super) String);

    impl<'a> FromSql<'a> for Json {
        fn from_sql(
            _: &Type,
            raw: &'a [u8],
        ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
            // `json` on the wire is its text.
            Ok(Json(std::str::from_utf8(raw)?.to_owned()))
        }
        fn accepts(ty: &Type) -> bool {
            *ty == Type::JSON
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_key_statements_use_the_primary_key_at_any_size() {
    let cluster = match ThrowawayPostgres::start(Durability::Off) {
        Ok(Some(cluster)) => cluster,
        Ok(None) if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("PostgreSQL binaries missing under CI=true")
        }
        Ok(None) => return eprintln!("!!!!! plan test SKIPPED: no PostgreSQL binaries !!!!!"),
        Err(error) => panic!("starting PostgreSQL: {error}"),
    };
    // Migrates the schema.
    let _store = super::PostgresStore::connect(cluster.conninfo())
        .await
        .unwrap();
    let (client, connection) = tokio_postgres::connect(cluster.conninfo(), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute("SET plan_cache_mode = force_generic_plan")
        .await
        .unwrap();
    // A new table, never analyzed.
    for (name, sql) in BY_KEY {
        let plan = generic_plan(&client, name, sql).await;
        assert!(
            plan.contains("journal_intents_pkey") && !plan.contains("journal_intents_listing"),
            "{name} on a new table:\n{plan}"
        );
    }
    let mut buffers = Vec::new();
    for open_rows in [100, 10_000] {
        fill(&client, open_rows).await;
        for (name, sql) in BY_KEY {
            let plan = generic_plan(&client, name, sql).await;
            // A small table may be read whole; a large one by its primary key.
            let by_key = plan.contains("journal_intents_pkey") || open_rows <= 100;
            assert!(
                by_key && !plan.contains("journal_intents_listing"),
                "{name} with {open_rows} open rows:\n{plan}"
            );
        }
        buffers.push(record_buffers(&client).await);
    }
    println!("PLAN record buffers at 100 and 10000 open rows: {buffers:?}");
    assert!(
        buffers[1] <= buffers[0] * 2,
        "the terminal update's cost grows with open rows: {buffers:?}"
    );
}

/// A history of `rows` intents, one in 100 open (in equal parts queued, in
/// flight and unknown), one result in 100 not acknowledged yet.
async fn fill_history(client: &Client, rows: usize) {
    client
        .batch_execute(&format!(
            "TRUNCATE journal_intents;
             INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body,
                 retention_end_ms, state, owner, lease_until_ms, fence, runs, due_at_ms,
                 status, created_ms, updated_ms, acknowledged_ms)
             SELECT 'key-' || g, true, 'POST', 'http://127.0.0.1/p', '', '', 0, s.state,
                 CASE WHEN s.state = 'in_flight' THEN 'w' END,
                 CASE WHEN s.state = 'in_flight' THEN g END, 1, 1,
                 CASE WHEN s.state IN ('queued', 'unknown') THEN g END, 201, g, g,
                 CASE WHEN g % 100 <> 50 AND s.state = 'succeeded' THEN g END
             FROM generate_series(1, {rows}) g,
                 LATERAL (SELECT CASE g % 300 WHEN 0 THEN 'queued' WHEN 100 THEN 'in_flight'
                     WHEN 200 THEN 'unknown' ELSE 'succeeded' END AS state) s;
             ANALYZE journal_intents;"
        ))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_statement_keeps_its_index_on_a_journal_with_a_history() {
    let cluster = match ThrowawayPostgres::start(Durability::Off) {
        Ok(Some(cluster)) => cluster,
        Ok(None) if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("PostgreSQL binaries missing under CI=true")
        }
        Ok(None) => return eprintln!("!!!!! plan test SKIPPED: no PostgreSQL binaries !!!!!"),
        Err(error) => panic!("starting PostgreSQL: {error}"),
    };
    let _store = super::PostgresStore::connect(cluster.conninfo())
        .await
        .unwrap();
    let (client, connection) = tokio_postgres::connect(cluster.conninfo(), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute("SET plan_cache_mode = force_generic_plan")
        .await
        .unwrap();
    fill_history(&client, 30_000).await;
    // (statement, the indexes its plan may use; none: printed only). The
    // backlog reads every open row: by the open rows' index or by the
    // listing's first column, the state, either way never the history.
    let statements: [(&str, &str, &[&str]); 6] = [
        ("claim", CLAIM, &["journal_intents_open"]),
        (
            "backlog",
            BACKLOG,
            &["journal_intents_open", "journal_intents_listing"],
        ),
        ("list", LIST, &["journal_intents_listing"]),
        (
            "unacknowledged",
            crate::delivery::POSTGRES_UNACKNOWLEDGED,
            &["journal_intents_unacknowledged"],
        ),
        ("write_ahead", WRITE_AHEAD, &[]),
        ("prune", PRUNE, &[]),
    ];
    for (name, sql, indexes) in statements {
        let plan = generic_plan(&client, name, sql).await;
        println!("PLAN {name}:\n{plan}\n");
        if !indexes.is_empty() {
            assert!(
                indexes.iter().any(|index| plan.contains(index))
                    && !plan.contains("Seq Scan on journal_intents"),
                "{name} does not walk {indexes:?}:\n{plan}"
            );
        }
    }
}

/// The durable send's two writes, as the store runs them, touch the primary
/// key, the open rows' index and the listing's at the write-ahead, and the
/// primary key, the listing's and the results' at the terminal update: no
/// index an open row does not need, none a result does not need.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_send_writes_only_the_indexes_it_needs() {
    let cluster = match ThrowawayPostgres::start(Durability::Off) {
        Ok(Some(cluster)) => cluster,
        Ok(None) if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
            panic!("PostgreSQL binaries missing under CI=true")
        }
        Ok(None) => return eprintln!("!!!!! plan test SKIPPED: no PostgreSQL binaries !!!!!"),
        Err(error) => panic!("starting PostgreSQL: {error}"),
    };
    let store = super::PostgresStore::connect(cluster.conninfo())
        .await
        .unwrap();
    let (client, connection) = tokio_postgres::connect(cluster.conninfo(), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute("CREATE EXTENSION pageinspect")
        .await
        .unwrap();
    let intent = NewIntent::new("hot-1", http::Method::POST, "http://127.0.0.1/p");
    let worker = Worker::new("w");
    let lease = store
        .write_ahead(&intent, &worker, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    let after_write_ahead = entries(&client).await;
    store
        .record(
            &lease,
            &Outcome::Succeeded {
                status: 201,
                locator: None,
            },
        )
        .await
        .unwrap();
    let after_record = entries(&client).await;
    assert_eq!(
        after_write_ahead,
        [
            ("journal_intents_listing", 1),
            ("journal_intents_open", 1),
            ("journal_intents_pkey", 1),
            ("journal_intents_unacknowledged", 0),
        ]
        .map(|(name, n)| (name.to_owned(), n)),
    );
    assert_eq!(
        after_record,
        [
            ("journal_intents_listing", 2),
            ("journal_intents_open", 1),
            ("journal_intents_pkey", 2),
            ("journal_intents_unacknowledged", 1),
        ]
        .map(|(name, n)| (name.to_owned(), n)),
    );
}

/// Entries in each index of `journal_intents` (dead ones included: an index
/// keeps them until a vacuum), on a table small enough for one leaf per index.
async fn entries(client: &Client) -> Vec<(String, i64)> {
    client
        .query(
            "SELECT c.relname::text,
                 CASE WHEN pg_relation_size(c.oid) > current_setting('block_size')::bigint
                     THEN (SELECT count(*) FROM bt_page_items(c.relname::text, 1))
                     ELSE 0 END
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
             WHERE i.indrelid = 'journal_intents'::regclass ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}
