//! Versioned migrations in the store's own table, serialised across processes by a
//! transaction-scoped advisory lock (a fleet starting at once migrates once).

use idempotency_storage::{Migration, Schema, VersionRecord};
use tokio_postgres::Client;

use crate::store::StoreError;

/// The advisory lock key: "tower-idempotency" folded into an i64.
const LOCK: i64 = 0x746f_7765_725f_6964;

const SCHEMA: Schema = Schema::new(
    VersionRecord::Table {
        name: "idempotency_schema",
        names: false,
    },
    &[
        // 1: as SQLite's first version; `generation` comes from a sequence so a key's
        // claims never repeat one, even after the row was released or pruned.
        Migration::new(
            1,
            "0001_keys",
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
        ),
    ],
);

/// Brings the schema to the latest version; a schema newer than this build is
/// refused.
pub(super) async fn migrate(client: &mut Client) -> Result<u32, StoreError> {
    idempotency_storage::postgres::migrate(client, &SCHEMA, LOCK)
        .await
        .map_err(StoreError::schema)
}
