//! Adoption: the first open by a build that records its schema's version in a
//! table of its own, of a file an older build made, which recorded it in
//! `PRAGMA user_version`.
//!
//! `user_version` is one value per file, shared with whatever else uses the
//! file: an application's own migrations write it too. So the value found
//! there proves nothing about the store's tables. Only the store can say which
//! of its versions the tables it finds are (it checks their columns), so the
//! runner asks it once, and records the answer in the table, after which
//! `user_version` is never read or written again.

use rusqlite::{Connection, Transaction};

use super::version_record::record_version;
use crate::error::{BoxError, SchemaError};
use crate::migrations::Schema;

/// The version of a file whose versions table has no row yet: what `check`
/// says its tables are, recorded as applied (versions 1..=n) in the same
/// transaction as the steps that follow; 0 when the store has no tables there.
pub(super) fn adopt<F>(tx: &Transaction<'_>, schema: &Schema, check: F) -> Result<u32, SchemaError>
where
    F: FnOnce(&Connection, u32) -> Result<Option<u32>, BoxError>,
{
    let driver = |error: rusqlite::Error| SchemaError::Driver(Box::new(error));
    let user_version: u32 = tx
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(driver)?;
    let found = check(tx, user_version).map_err(|source| SchemaError::Unadoptable { source })?;
    let Some(version) = found.filter(|&version| version > 0) else {
        return Ok(0);
    };
    // A version beyond this build's is refused before anything is recorded.
    schema.pending(version)?;
    for step in &schema.steps()[..version as usize] {
        record_version(tx, schema.record(), step.version(), step.name()).map_err(driver)?;
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use rusqlite::Connection;

    use crate::migrations::{Migration, Schema, VersionRecord};
    use crate::sqlite::{migrate_adopting, recorded_version};
    use crate::SchemaError;

    // Step 1 has no IF NOT EXISTS: running it over an adopted file fails, so a
    // test that passes proves an adopted step was not run again.
    const SCHEMA: Schema = Schema::new(
        VersionRecord::Table {
            name: "store_versions",
            names: true,
        },
        &[
            Migration::new(1, "0001_t", "CREATE TABLE t (x INTEGER)"),
            Migration::new(2, "0002_t_y", "ALTER TABLE t ADD COLUMN y TEXT"),
        ],
    );

    /// A real file in a directory of its own, removed with the guard.
    struct File {
        dir: std::path::PathBuf,
    }

    impl File {
        fn new(test: &str) -> (Self, Connection) {
            let dir =
                std::env::temp_dir().join(format!("storage-adopt-{}-{test}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let conn = Connection::open(dir.join("db.sqlite")).unwrap();
            (Self { dir }, conn)
        }
    }

    impl Drop for File {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn user_version(conn: &Connection) -> u32 {
        conn.query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap()
    }

    fn versions(conn: &Connection) -> Vec<(u32, String)> {
        let mut statement = conn
            .prepare("SELECT version, name FROM store_versions ORDER BY version")
            .unwrap();
        let rows = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn an_older_file_is_recorded_at_the_version_found_and_migrated_on() {
        let (_file, mut conn) = File::new("older");
        conn.execute_batch("CREATE TABLE t (x INTEGER); PRAGMA user_version = 1")
            .unwrap();
        let seen = Cell::new(None);
        let version = migrate_adopting(&mut conn, &SCHEMA, |_, user_version| {
            seen.set(Some(user_version));
            Ok(Some(1))
        })
        .unwrap();
        assert_eq!(version, 2);
        assert_eq!(
            seen.get(),
            Some(1),
            "the check is told the file's user_version"
        );
        assert_eq!(
            versions(&conn),
            [(1, "0001_t".to_owned()), (2, "0002_t_y".to_owned())]
        );
        assert_eq!(user_version(&conn), 1, "user_version is left as it was");
        assert_eq!(recorded_version(&conn, &SCHEMA).unwrap(), 2);
    }

    #[test]
    fn a_file_without_the_stores_tables_gets_a_fresh_schema() {
        let (_file, mut conn) = File::new("fresh");
        conn.execute_batch("CREATE TABLE accounts (id INTEGER); PRAGMA user_version = 7")
            .unwrap();
        let version = migrate_adopting(&mut conn, &SCHEMA, |_, _| Ok(None)).unwrap();
        assert_eq!(version, 2);
        assert_eq!(versions(&conn).len(), 2);
        assert_eq!(user_version(&conn), 7, "the application's user_version");
    }

    #[test]
    fn the_check_is_asked_once_only() {
        let (_file, mut conn) = File::new("once");
        let asked = Cell::new(0);
        for _ in 0..3 {
            migrate_adopting(&mut conn, &SCHEMA, |_, _| {
                asked.set(asked.get() + 1);
                Ok(None)
            })
            .unwrap();
        }
        assert_eq!(asked.get(), 1, "later opens read the table");
    }

    #[test]
    fn an_unadoptable_file_is_refused_unchanged() {
        let (_file, mut conn) = File::new("unadoptable");
        conn.execute_batch("CREATE TABLE t (z BLOB); PRAGMA user_version = 1")
            .unwrap();
        let error = migrate_adopting(&mut conn, &SCHEMA, |_, _| Err("t lacks column x".into()))
            .unwrap_err();
        assert!(
            matches!(error, SchemaError::Unadoptable { .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains("t lacks column x"), "{error}");
        let tables: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'store_versions'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0, "the versions table was rolled back");
        assert_eq!(user_version(&conn), 1);
    }

    #[test]
    fn an_adopted_version_newer_than_the_build_is_refused() {
        let (_file, mut conn) = File::new("newer");
        let error = migrate_adopting(&mut conn, &SCHEMA, |_, _| Ok(Some(3))).unwrap_err();
        assert!(
            matches!(
                error,
                SchemaError::Newer {
                    current: 3,
                    latest: 2
                }
            ),
            "{error:?}"
        );
        assert_eq!(
            recorded_version(&conn, &SCHEMA).unwrap(),
            0,
            "nothing recorded"
        );
    }

    #[test]
    fn a_user_version_schema_never_asks() {
        let (_file, mut conn) = File::new("user-version");
        let schema = Schema::new(VersionRecord::UserVersion, SCHEMA.steps());
        let version =
            migrate_adopting(&mut conn, &schema, |_, _| Err("must not be asked".into())).unwrap();
        assert_eq!(version, 2);
        assert_eq!(user_version(&conn), 2);
    }
}
