//! Applies a schema's pending steps to a SQLite database under its write lock.

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::version_record::record_version;
use crate::error::{BoxError, SchemaError};
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
    migrate_adopting(conn, schema, |_, _| Ok(None))
}

/// As [`migrate`], for a store whose versions table is new and whose older
/// builds recorded the version in `PRAGMA user_version`.
///
/// When the schema's [`VersionRecord::Table`] is empty — the first time this
/// build opens the file — `adopt` is asked, inside the migration's transaction,
/// which version of the store's tables the file holds. It gets the connection
/// and the file's `user_version`, which it must not trust on its own: the
/// application that shares the file may have written it. It answers
///
/// * `Ok(None)`: none of the store's tables are there; the schema is created
///   from step 1 (an application's own `user_version` stays as it is);
/// * `Ok(Some(n))`: the store's tables are exactly version `n`; versions 1..=`n`
///   are recorded as applied and only the later steps run;
/// * `Err(reason)`: the store's tables are there but match no version;
///   [`SchemaError::Unadoptable`] with that reason, and nothing is changed.
///
/// Once the table has a row, `adopt` is never asked again. The runner never
/// writes `user_version` for a table-recorded schema. With
/// [`VersionRecord::UserVersion`] the version *is* `user_version` and `adopt`
/// is not asked.
///
/// # Errors
/// As [`migrate`], and [`SchemaError::Unadoptable`]; [`SchemaError::Newer`]
/// when `adopt` answers a version newer than the schema's latest.
///
/// # Examples
/// ```
/// use idempotency_storage::{Migration, Schema, VersionRecord};
///
/// const SCHEMA: Schema = Schema::new(
///     VersionRecord::Table { name: "keys_versions", names: true },
///     &[
///         Migration::new(1, "0001_keys", "CREATE TABLE keys (key TEXT PRIMARY KEY)"),
///         Migration::new(2, "0002_body", "ALTER TABLE keys ADD COLUMN body BLOB"),
///     ],
/// );
/// // A file an older build made: its table at version 1, recorded in user_version.
/// let mut conn = rusqlite::Connection::open_in_memory()?;
/// conn.execute_batch("CREATE TABLE keys (key TEXT PRIMARY KEY); PRAGMA user_version = 1")?;
/// let version = idempotency_storage::sqlite::migrate_adopting(&mut conn, &SCHEMA, |conn, _| {
///     let has_keys: bool = conn.query_row(
///         "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'keys'", [], |row| row.get(0))?;
///     Ok(has_keys.then_some(1))
/// })?;
/// assert_eq!(version, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn migrate_adopting<F>(
    conn: &mut Connection,
    schema: &Schema,
    adopt: F,
) -> Result<u32, SchemaError>
where
    F: FnOnce(&Connection, u32) -> Result<Option<u32>, BoxError>,
{
    schema.check()?;
    let driver = |error: rusqlite::Error| SchemaError::Driver(Box::new(error));
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(driver)?;
    let current = match current_version(&tx, schema.record()).map_err(driver)? {
        Some(current) => current,
        None => super::adopt::adopt(&tx, schema, adopt)?,
    };
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

/// The version `schema`'s record holds, read without writing (0 before the
/// first migration).
///
/// # Errors
/// [`SchemaError::Driver`] with the [`rusqlite::Error`].
pub fn recorded_version(conn: &Connection, schema: &Schema) -> Result<u32, SchemaError> {
    let driver = |error: rusqlite::Error| SchemaError::Driver(Box::new(error));
    match schema.record() {
        VersionRecord::UserVersion => conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(driver),
        VersionRecord::Table { name, .. } => {
            schema.check()?;
            let exists: bool = conn
                .query_row(
                    "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                    [name],
                    |row| row.get(0),
                )
                .map_err(driver)?;
            if !exists {
                return Ok(0);
            }
            conn.query_row(
                &format!("SELECT coalesce(max(version), 0) FROM {name}"),
                [],
                |row| row.get(0),
            )
            .map_err(driver)
        }
    }
}

/// The recorded version, or `None` for a versions table with no row yet (the
/// file was never migrated by a build that records there: adopt it).
fn current_version(tx: &Transaction<'_>, record: VersionRecord) -> rusqlite::Result<Option<u32>> {
    match record {
        VersionRecord::UserVersion => tx
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map(Some),
        VersionRecord::Table { name, names } => {
            let columns = if names {
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, \
                 applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP"
            } else {
                "version INTEGER NOT NULL PRIMARY KEY"
            };
            tx.execute_batch(&format!("CREATE TABLE IF NOT EXISTS {name} ({columns})"))?;
            tx.query_row(&format!("SELECT max(version) FROM {name}"), [], |row| {
                row.get(0)
            })
        }
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
