//! Versioned migrations, recorded in a table of the store's own (not `user_version`:
//! in the strong mode the application's tables share the file, and its own
//! migrations may use `user_version`).

use rusqlite::{Connection, TransactionBehavior};

use crate::store::StoreError;

/// Each entry moves the schema one version up; never edit one, append.
const MIGRATIONS: &[&str] = &[
    // 1: one row per key in its scope. `expires_at` is the lease's end while the key
    // is in progress and the retention's end once it finished (milliseconds since the
    // Unix epoch). `generation` fences a lapsed holder out.
    "CREATE TABLE idempotency_keys (
        scope       BLOB    PRIMARY KEY,
        fingerprint BLOB    NOT NULL,
        generation  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,
        reclaimed   INTEGER NOT NULL DEFAULT 0,
        completed   INTEGER NOT NULL DEFAULT 0,
        status      INTEGER,
        headers     BLOB,
        body        BLOB,
        not_stored  TEXT
    ) WITHOUT ROWID;
    CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);",
];

/// The schema version this build writes.
pub(super) const LATEST: i64 = MIGRATIONS.len() as i64;

/// Brings the schema to [`LATEST`] in one write transaction (a second process
/// migrating at the same moment waits on the busy timeout, then finds it done).
pub(super) fn migrate(conn: &mut Connection) -> Result<i64, StoreError> {
    let fail = |e| StoreError::new("migrate the store's schema", e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let current = apply(&tx).map_err(fail)?;
    if current > LATEST {
        return Err(StoreError::msg(format!(
            "the store's schema is version {current}, newer than this build's {LATEST}"
        )));
    }
    tx.commit().map_err(fail)?;
    Ok(LATEST)
}

fn apply(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<i64> {
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS idempotency_schema (version INTEGER NOT NULL PRIMARY KEY)",
    )?;
    let current: i64 = tx.query_row(
        "SELECT coalesce(max(version), 0) FROM idempotency_schema",
        [],
        |row| row.get(0),
    )?;
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO idempotency_schema (version) VALUES (?1)",
            [index as i64 + 1],
        )?;
    }
    Ok(current)
}
