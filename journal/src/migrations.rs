//! The schema's versions: SQL files under `journal/migrations/<backend>/`, applied
//! in order, each once, under a lock, the version recorded in the
//! `journal_schema_versions` table (both backends; SQLite files made before
//! 0.2.0's release recorded it in `PRAGMA user_version` and are adopted: see
//! `sqlite/adopt.rs`).

use idempotency_storage::{Migration, Schema, VersionRecord};

macro_rules! migration {
    ($backend:literal, $version:literal, $name:literal) => {
        Migration::new(
            $version,
            $name,
            include_str!(concat!("../migrations/", $backend, "/", $name, ".sql")),
        )
    };
}

/// The SQLite schema, oldest first. Its version has a table of its own, not
/// `PRAGMA user_version`: the file may be shared with the application's tables
/// (an outbox), whose own migrations use `user_version`.
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE: Schema = Schema::new(
    VersionRecord::Table {
        name: "journal_schema_versions",
        names: true,
    },
    &[
        migration!("sqlite", 1, "0001_initial"),
        migration!("sqlite", 2, "0002_worker_incarnation"),
        migration!("sqlite", 3, "0003_outbox_queued"),
        migration!("sqlite", 4, "0004_acknowledged"),
        migration!("sqlite", 5, "0005_narrow_write_path"),
    ],
);

/// The PostgreSQL schema, oldest first.
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES: Schema = Schema::new(
    VersionRecord::Table {
        name: "journal_schema_versions",
        names: true,
    },
    &[
        migration!("postgres", 1, "0001_initial"),
        migration!("postgres", 2, "0002_worker_incarnation"),
        migration!("postgres", 3, "0003_outbox_queued"),
        migration!("postgres", 4, "0004_acknowledged"),
        migration!("postgres", 5, "0005_narrow_write_path"),
    ],
);

/// Serialises migrations from several workers (an arbitrary constant).
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES_LOCK: i64 = 0x7265_7177_6a6e_6c01;

#[cfg(test)]
mod tests {
    #[allow(unused_imports)]
    use super::*;

    #[test]
    fn each_schema_is_well_formed() {
        #[cfg(feature = "sqlite")]
        SQLITE.check().unwrap();
        #[cfg(feature = "postgres")]
        POSTGRES.check().unwrap();
    }
}
