//! A store's schema as a list of versioned steps, and which of them a database
//! still needs.
//!
//! Each backend's runner (`sqlite::migrate`, `postgres::migrate`) applies the
//! pending steps in one transaction under a lock and records each version; a
//! database whose recorded version is newer than the newest step is refused, so
//! an older build never writes to a schema it does not know.

use crate::error::SchemaError;

/// One step of a schema.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    version: u32,
    name: &'static str,
    sql: &'static str,
}

impl Migration {
    /// Step `version` (1, 2, …: the schema's version after it), named `name` in
    /// errors and in a versions table, running `sql` (one or more statements).
    pub const fn new(version: u32, name: &'static str, sql: &'static str) -> Self {
        Self { version, name, sql }
    }

    /// The schema's version after this step.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The step's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The step's SQL.
    pub fn sql(&self) -> &'static str {
        self.sql
    }
}

/// Where a database records its schema's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum VersionRecord {
    /// SQLite's `PRAGMA user_version`: only for a file the store owns alone.
    /// The pragma is one value per file, and an application's own migrations
    /// (`rusqlite_migration`, for one) use it too: a store that shares the file
    /// needs a [`Table`](Self::Table).
    UserVersion,
    /// A table of the store's own (a plain SQL identifier), one row per applied
    /// step: `version` and, when `names` is true, the step's `name` and when it
    /// was applied. A store that shares its database with the application's
    /// tables needs one, as the application's migrations may use
    /// `user_version`; a SQLite store that used `user_version` before adopts its
    /// older files with `sqlite::migrate_adopting`.
    Table {
        /// The table's name.
        name: &'static str,
        /// Whether the table also records each step's name and time.
        names: bool,
    },
}

/// A store's schema: where its version is recorded, and its steps.
///
/// # Examples
/// ```
/// use idempotency_storage::{Migration, Schema, SchemaError, VersionRecord};
///
/// const SCHEMA: Schema = Schema::new(
///     VersionRecord::Table { name: "my_store_versions", names: true },
///     &[
///         Migration::new(1, "0001_keys", "CREATE TABLE my_keys (key TEXT PRIMARY KEY)"),
///         Migration::new(2, "0002_body", "ALTER TABLE my_keys ADD COLUMN body BLOB"),
///     ],
/// );
/// SCHEMA.check()?;
/// assert_eq!(SCHEMA.pending(1)?[0].name(), "0002_body");
/// // A database a newer build migrated is refused.
/// assert!(matches!(SCHEMA.pending(3), Err(SchemaError::Newer { current: 3, latest: 2 })));
/// # Ok::<(), SchemaError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Schema {
    record: VersionRecord,
    steps: &'static [Migration],
}

impl Schema {
    /// A schema recorded in `record`, with `steps` oldest first, versions 1, 2,
    /// … without gaps (checked by [`check`](Self::check), which each runner
    /// calls first).
    pub const fn new(record: VersionRecord, steps: &'static [Migration]) -> Self {
        Self { record, steps }
    }

    /// Where the version is recorded.
    pub fn record(&self) -> VersionRecord {
        self.record
    }

    /// The steps, oldest first.
    pub fn steps(&self) -> &'static [Migration] {
        self.steps
    }

    /// The newest version this build knows (0 without steps).
    pub fn latest(&self) -> u32 {
        self.steps.last().map_or(0, |step| step.version)
    }

    /// Versions consecutive from 1, and a versions table named by a plain SQL
    /// identifier (it is written into statements).
    ///
    /// # Errors
    /// [`SchemaError::Step`] naming the first step out of order, or the table.
    pub fn check(&self) -> Result<(), SchemaError> {
        if let VersionRecord::Table { name, .. } = self.record {
            let plain = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !plain {
                return Err(SchemaError::Step {
                    name,
                    source: "a versions table must be named by a plain lower-case SQL identifier"
                        .into(),
                });
            }
        }
        for (index, step) in self.steps.iter().enumerate() {
            if step.version as usize != index + 1 {
                return Err(SchemaError::Step {
                    name: step.name,
                    source: format!("step {} has version {}", index + 1, step.version).into(),
                });
            }
        }
        Ok(())
    }

    /// The steps after version `current`.
    ///
    /// # Errors
    /// [`SchemaError::Newer`] when `current` is newer than [`latest`](Self::latest).
    pub fn pending(&self, current: u32) -> Result<&'static [Migration], SchemaError> {
        let latest = self.latest();
        if current > latest {
            return Err(SchemaError::Newer { current, latest });
        }
        Ok(&self.steps[self.steps.partition_point(|m| m.version <= current)..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEPS: &[Migration] = &[Migration::new(1, "a", ""), Migration::new(2, "b", "")];
    const SCHEMA: Schema = Schema::new(VersionRecord::UserVersion, STEPS);

    #[test]
    fn pending_steps_follow_the_current_version() {
        let table: [(u32, Option<&[&str]>); 4] = [
            (0, Some(&["a", "b"])),
            (1, Some(&["b"])),
            (2, Some(&[])),
            (3, None),
        ];
        for (current, expected) in table {
            let names = SCHEMA
                .pending(current)
                .ok()
                .map(|steps| steps.iter().map(Migration::name).collect::<Vec<_>>());
            assert_eq!(names.as_deref(), expected, "current {current}");
        }
        assert!(matches!(
            SCHEMA.pending(3),
            Err(SchemaError::Newer {
                current: 3,
                latest: 2
            })
        ));
    }

    #[test]
    fn a_schema_is_checked_before_it_runs() {
        const GAP: &[Migration] = &[Migration::new(1, "a", ""), Migration::new(3, "c", "")];
        let table = |name| VersionRecord::Table { name, names: true };
        let cases = [
            (Schema::new(VersionRecord::UserVersion, STEPS), true),
            (Schema::new(table("store_versions"), STEPS), true),
            (Schema::new(VersionRecord::UserVersion, GAP), false),
            (Schema::new(table("versions; DROP TABLE x"), STEPS), false),
            (Schema::new(table("Versions"), STEPS), false),
            (Schema::new(table("1versions"), STEPS), false),
            (Schema::new(table(""), STEPS), false),
        ];
        for (schema, ok) in cases {
            assert_eq!(schema.check().is_ok(), ok, "{schema:?}");
        }
    }
}
