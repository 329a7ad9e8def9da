//! Versioned migrations in the store's own table, serialised across processes by a
//! transaction-scoped advisory lock (a fleet starting at once migrates once).

use tokio_postgres::Client;

use crate::store::StoreError;

/// The advisory lock key: "tower-idempotency" folded into an i64.
const LOCK: i64 = 0x746f_7765_725f_6964;

const MIGRATIONS: &[&str] = &[
    // 1: as SQLite's first version; `generation` comes from a sequence so a key's
    // claims never repeat one, even after the row was released or pruned.
    "CREATE SEQUENCE idempotency_generation;
     CREATE TABLE idempotency_keys (
        scope       BYTEA    PRIMARY KEY,
        fingerprint BYTEA    NOT NULL,
        generation  BIGINT   NOT NULL,
        expires_at  BIGINT   NOT NULL,
        reclaimed   BOOLEAN  NOT NULL DEFAULT false,
        completed   BOOLEAN  NOT NULL DEFAULT false,
        status      INTEGER,
        headers     BYTEA,
        body        BYTEA,
        not_stored  TEXT
     );
     CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);",
];

pub(super) const LATEST: i64 = MIGRATIONS.len() as i64;

pub(super) async fn migrate(client: &mut Client) -> Result<i64, StoreError> {
    let fail = |e| StoreError::new("migrate the store's schema", e);
    let tx = client.transaction().await.map_err(fail)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK])
        .await
        .map_err(fail)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS idempotency_schema (version BIGINT PRIMARY KEY)")
        .await
        .map_err(fail)?;
    let current: i64 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM idempotency_schema",
            &[],
        )
        .await
        .map_err(fail)?
        .get(0);
    if current > LATEST {
        return Err(StoreError::msg(format!(
            "the store's schema is version {current}, newer than this build's {LATEST}"
        )));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.batch_execute(sql).await.map_err(fail)?;
        tx.execute(
            "INSERT INTO idempotency_schema (version) VALUES ($1)",
            &[&(index as i64 + 1)],
        )
        .await
        .map_err(fail)?;
    }
    tx.commit().await.map_err(fail)?;
    Ok(LATEST)
}
