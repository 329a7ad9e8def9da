//! Every statement keeps its index on a journal holding a history of results
//! beside its open rows (SQLite's `EXPLAIN QUERY PLAN`, after `ANALYZE`): the
//! claim, the backlog and the pruning walk the state index, the listing its
//! own, the unacknowledged page its own partial index, and every
//! statement by key the primary key. None reads the whole table.

use rusqlite::Connection;

use super::queries::{
    ABANDON, BACKLOG, CLAIMABLE_KEYS, CLAIM_ONE, GET, LIST, PRUNE, RECORD, TAKE_OVER,
};

/// A journal at the latest schema with `rows` intents, one in 100 open (in
/// equal parts queued, in flight and unknown), one result in 100 waiting for
/// its acknowledgement.
fn journal_with_history(rows: u32) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    for step in crate::migrations::SQLITE.steps() {
        conn.execute_batch(step.sql()).unwrap();
    }
    conn.execute_batch(&format!(
        "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {rows}),
         s(n, state) AS (SELECT n, CASE n % 300 WHEN 0 THEN 'queued' WHEN 100 THEN 'in_flight'
             WHEN 200 THEN 'unknown' ELSE 'succeeded' END FROM g)
         INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body,
             retention_end_ms, state, owner, lease_until_ms, fence, runs, due_at_ms, status,
             created_ms, updated_ms, acknowledged_ms)
         SELECT 'key-' || n, 1, 'POST', 'http://127.0.0.1/p', X'', X'', 0, state,
             CASE WHEN state = 'in_flight' THEN 'w' END,
             CASE WHEN state = 'in_flight' THEN n END, 1, 1,
             CASE WHEN state IN ('queued', 'unknown') THEN n END, 201, n, n,
             CASE WHEN n % 100 <> 50 AND state = 'succeeded' THEN n END
         FROM s;
         ANALYZE;"
    ))
    .unwrap();
    conn
}

fn plan(conn: &Connection, sql: &str) -> String {
    let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let nulls = vec![rusqlite::types::Null; statement.parameter_count()];
    let rows = statement
        .query_map(rusqlite::params_from_iter(nulls), |row| {
            row.get::<_, String>(3)
        })
        .unwrap();
    rows.collect::<Result<Vec<_>, _>>().unwrap().join("\n")
}

#[test]
fn every_statement_keeps_its_index_on_a_journal_with_a_history() {
    let conn = journal_with_history(30_000);
    // By state: either index whose first column is the state.
    const BY_STATE: &[&str] = &[
        "journal_intents_due (state=?",
        "journal_intents_listing (state=?",
    ];
    const BY_KEY: &[&str] = &["sqlite_autoindex_journal_intents_1 (key=?)"];
    let statements: [(&str, &str, &[&str]); 10] = [
        (
            "claimable keys",
            CLAIMABLE_KEYS,
            &["journal_intents_due (state=?"],
        ),
        ("backlog", BACKLOG, BY_STATE),
        ("prune", PRUNE, BY_STATE),
        ("list", LIST, &["journal_intents_listing (state=?"]),
        (
            "unacknowledged",
            crate::delivery::rusqlite::UNACKNOWLEDGED,
            &["USING INDEX journal_intents_unacknowledged"],
        ),
        ("claim one", CLAIM_ONE, BY_KEY),
        ("take over", TAKE_OVER, BY_KEY),
        ("record", RECORD, BY_KEY),
        ("get", GET, BY_KEY),
        ("abandon", ABANDON, BY_KEY),
    ];
    for (name, sql, indexes) in statements {
        let plan = plan(&conn, sql);
        println!("PLAN {name}:\n{plan}\n");
        let whole_table = plan
            .lines()
            .any(|line| line.starts_with("SCAN journal_intents") && !line.contains("INDEX"));
        assert!(
            indexes.iter().any(|index| plan.contains(index)) && !whole_table,
            "{name} does not use {indexes:?}:\n{plan}"
        );
    }
}
