//! Versioned migrations from `server/migrations/postgres/*.sql` in the store's own
//! table, serialised across processes by a transaction-scoped advisory lock (a fleet
//! starting at once migrates once).

use idempotency_storage::{Migration, Schema, VersionRecord};
use tokio_postgres::Client;

use crate::store::StoreError;

/// The advisory lock key: "tower-idempotency" folded into an i64.
const LOCK: i64 = 0x746f_7765_725f_6964;

/// The steps, one SQL file each under `server/migrations/postgres/`; never edit one,
/// append.
const SCHEMA: Schema = Schema::new(
    VersionRecord::Table {
        name: "idempotency_schema",
        names: false,
    },
    &[Migration::new(
        1,
        "0001_keys",
        include_str!("../../../migrations/postgres/0001_keys.sql"),
    )],
);

/// Brings the schema to the latest version; a schema newer than this build is
/// refused.
pub(super) async fn migrate(client: &mut Client) -> Result<u32, StoreError> {
    idempotency_storage::postgres::migrate(client, &SCHEMA, LOCK)
        .await
        .map_err(StoreError::schema)
}
