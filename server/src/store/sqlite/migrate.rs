//! Versioned migrations from `server/migrations/sqlite/*.sql`, recorded in a table of
//! the store's own (not `user_version`: in the strong mode the application's tables
//! share the file, and its own migrations may use `user_version`).

use idempotency_storage::{Migration, Schema, VersionRecord};
use rusqlite::Connection;

use crate::store::StoreError;

/// The steps, one SQL file each under `server/migrations/sqlite/` (as the journal
/// keeps its own): each moves the schema one version up; never edit one, append.
const SCHEMA: Schema = Schema::new(
    VersionRecord::Table {
        name: "idempotency_schema",
        names: false,
    },
    &[Migration::new(
        1,
        "0001_keys",
        include_str!("../../../migrations/sqlite/0001_keys.sql"),
    )],
);

/// Brings the schema to the latest version in one write transaction (a second
/// process migrating at the same moment waits on the busy timeout, then finds it
/// done); a schema newer than this build is refused.
pub(super) fn migrate(conn: &mut Connection) -> Result<u32, StoreError> {
    idempotency_storage::sqlite::migrate(conn, &SCHEMA).map_err(StoreError::schema)
}
