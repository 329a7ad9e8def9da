//! Applies a schema's pending steps to a SQLite database under its write lock.

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::error::SchemaError;
use crate::migrations::{Schema, VersionRecord};

/// Brings the database to `schema`'s latest version: `BEGIN IMMEDIATE` takes
/// the write lock (a second process opening the file at the same moment waits
/// on the busy timeout, then finds the work done), the pending steps run in
/// order, and each version is recorded where the schema says — all in one
/// transaction. Returns the version the database is at.
///
/// # Errors
/// [`SchemaError::Newer`] for a database migrated by a newer build (nothing is
/// changed), [`SchemaError::Step`] when a step fails (nothing is committed),
/// [`SchemaError::Driver`] with the [`rusqlite::Error`] otherwise (a lock held
/// past the busy timeout: see [`is_busy`](super::is_busy)).
///
/// # Examples
/// ```
/// use idempotency_storage::{Migration, Schema, VersionRecord};
///
/// const SCHEMA: Schema = Schema::new(
///     VersionRecord::UserVersion,
///     &[Migration::new(1, "0001_keys", "CREATE TABLE keys (key TEXT PRIMARY KEY)")],
/// );
/// let mut conn = rusqlite::Connection::open_in_memory()?;
/// assert_eq!(idempotency_storage::sqlite::migrate(&mut conn, &SCHEMA)?, 1);
/// // Run again (the next process to open the file): nothing left to do.
/// assert_eq!(idempotency_storage::sqlite::migrate(&mut conn, &SCHEMA)?, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn migrate(conn: &mut Connection, schema: &Schema) -> Result<u32, SchemaError> {
    schema.check()?;
    let driver = |error: rusqlite::Error| SchemaError::Driver(Box::new(error));
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(driver)?;
    let current = current_version(&tx, schema.record()).map_err(driver)?;
    let steps = schema.pending(current)?;
    for step in steps {
        tx.execute_batch(step.sql())
            .map_err(|error| SchemaError::Step {
                name: step.name(),
                source: Box::new(error),
            })?;
        record_version(&tx, schema.record(), step.version(), step.name()).map_err(driver)?;
    }
    tx.commit().map_err(driver)?;
    Ok(steps.last().map_or(current, |step| step.version()))
}

fn current_version(tx: &Transaction<'_>, record: VersionRecord) -> rusqlite::Result<u32> {
    match record {
        VersionRecord::UserVersion => tx.query_row("PRAGMA user_version", [], |row| row.get(0)),
        VersionRecord::Table { name, names } => {
            let columns = if names {
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, \
                 applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP"
            } else {
                "version INTEGER NOT NULL PRIMARY KEY"
            };
            tx.execute_batch(&format!("CREATE TABLE IF NOT EXISTS {name} ({columns})"))?;
            tx.query_row(
                &format!("SELECT coalesce(max(version), 0) FROM {name}"),
                [],
                |row| row.get(0),
            )
        }
    }
}

fn record_version(
    tx: &Transaction<'_>,
    record: VersionRecord,
    version: u32,
    step: &str,
) -> rusqlite::Result<()> {
    match record {
        VersionRecord::UserVersion => tx.pragma_update(None, "user_version", version),
        VersionRecord::Table { name, names: true } => tx
            .execute(
                &format!("INSERT INTO {name} (version, name) VALUES (?1, ?2)"),
                rusqlite::params![version, step],
            )
            .map(drop),
        VersionRecord::Table { name, names: false } => tx
            .execute(
                &format!("INSERT INTO {name} (version) VALUES (?1)"),
                [version],
            )
            .map(drop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrations::Migration;

    const STEPS: &[Migration] = &[
        Migration::new(1, "0001_t", "CREATE TABLE t (x INTEGER)"),
        Migration::new(2, "0002_t_y", "ALTER TABLE t ADD COLUMN y TEXT"),
    ];

    fn records() -> [VersionRecord; 3] {
        [
            VersionRecord::UserVersion,
            VersionRecord::Table {
                name: "store_versions",
                names: true,
            },
            VersionRecord::Table {
                name: "store_schema",
                names: false,
            },
        ]
    }

    #[test]
    fn steps_run_once_in_order_and_the_version_is_recorded() {
        for record in records() {
            let mut conn = Connection::open_in_memory().unwrap();
            let first = Schema::new(record, &STEPS[..1]);
            assert_eq!(migrate(&mut conn, &first).unwrap(), 1, "{record:?}");
            let both = Schema::new(record, STEPS);
            assert_eq!(migrate(&mut conn, &both).unwrap(), 2, "{record:?}");
            assert_eq!(migrate(&mut conn, &both).unwrap(), 2, "again: {record:?}");
            conn.execute("INSERT INTO t (x, y) VALUES (1, 'b')", [])
                .unwrap();
        }
    }

    #[test]
    fn a_newer_database_is_refused_unchanged() {
        for record in records() {
            let mut conn = Connection::open_in_memory().unwrap();
            migrate(&mut conn, &Schema::new(record, STEPS)).unwrap();
            let older = Schema::new(record, &STEPS[..1]);
            let error = migrate(&mut conn, &older).unwrap_err();
            assert!(
                matches!(
                    error,
                    SchemaError::Newer {
                        current: 2,
                        latest: 1
                    }
                ),
                "{record:?}: {error}"
            );
        }
    }

    #[test]
    fn a_failing_step_names_itself_and_commits_nothing() {
        const BAD: &[Migration] = &[
            Migration::new(1, "0001_t", "CREATE TABLE t (x INTEGER)"),
            Migration::new(2, "0002_bad", "ALTER TABLE nowhere ADD COLUMN y"),
        ];
        for record in records() {
            let mut conn = Connection::open_in_memory().unwrap();
            let error = migrate(&mut conn, &Schema::new(record, BAD)).unwrap_err();
            assert!(error.to_string().starts_with("0002_bad: "), "{error}");
            let tables: i64 = conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name = 't'",
                    [],
                    |row| row.get(0),
                )
                .unwrap();
            assert_eq!(tables, 0, "{record:?}: step 1 rolled back with step 2");
        }
    }
}
