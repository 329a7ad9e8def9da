//! Versioned migrations, recorded in a table of the store's own (not `user_version`:
//! in the strong mode the application's tables share the file, and its own
//! migrations may use `user_version`).

use idempotency_storage::{Migration, Schema, VersionRecord};
use rusqlite::Connection;

use crate::store::StoreError;

/// Each step moves the schema one version up; never edit one, append.
const SCHEMA: Schema = Schema::new(
    VersionRecord::Table {
        name: "idempotency_schema",
        names: false,
    },
    &[
        // 1: one row per key in its scope. `expires_at` is the lease's end while the key
        // is in progress and the retention's end once it finished (milliseconds since the
        // Unix epoch). `generation` fences a lapsed holder out.
        Migration::new(
            1,
            "0001_keys",
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
        ),
    ],
);

/// Brings the schema to the latest version in one write transaction (a second
/// process migrating at the same moment waits on the busy timeout, then finds it
/// done); a schema newer than this build is refused.
pub(super) fn migrate(conn: &mut Connection) -> Result<u32, StoreError> {
    idempotency_storage::sqlite::migrate(conn, &SCHEMA).map_err(StoreError::schema)
}
