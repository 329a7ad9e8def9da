//! The crate's errors: a file that could not be prepared, a schema that could
//! not be brought up to date. Each keeps its cause, so a store's own error type
//! can wrap it without losing the driver's message.

use std::path::{Path, PathBuf};

/// A boxed error from a driver or the operating system.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A database file could not be created, inspected, opened or checked: which
/// file, and what was being done to it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {operation} failed: {source}", path.display())]
pub struct FileError {
    path: PathBuf,
    operation: &'static str,
    #[source]
    source: BoxError,
}

impl FileError {
    /// A failure of `operation` on the file at `path`.
    pub fn new(path: &Path, operation: &'static str, source: impl Into<BoxError>) -> Self {
        Self {
            path: path.to_owned(),
            operation,
            source: source.into(),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What was being done (`"create"`, `"inspect"`, `"restrict to its owner"`,
    /// `"integrity check (PRAGMA quick_check)"`).
    pub fn operation(&self) -> &'static str {
        self.operation
    }

    /// The file, the operation and the cause, for a store's own error type.
    pub fn into_parts(self) -> (PathBuf, &'static str, BoxError) {
        (self.path, self.operation, self.source)
    }
}

/// A schema could not be brought to this build's version.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The database's schema is newer than the newest migration this build
    /// knows: a later version of the store migrated it, so this one must not
    /// write to it.
    #[error("the schema is version {current}, newer than this build's {latest}")]
    Newer {
        /// The version the database records.
        current: u32,
        /// The newest version this build knows.
        latest: u32,
    },
    /// A migration step's SQL failed.
    #[error("{name}: {source}")]
    Step {
        /// The step's name.
        name: &'static str,
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// The database refused the migration: the role may not create the
    /// versions table or read it.
    #[error("the migration was refused (the role needs CREATE on the schema once, then SELECT on {table}): {source}")]
    Refused {
        /// The store's versions table.
        table: &'static str,
        /// The driver's error.
        #[source]
        source: BoxError,
    },
    /// The database holds tables of the store's but no record of their version
    /// (a file an older build made, which kept it in `PRAGMA user_version`),
    /// and they are not exactly any version the store can adopt
    /// (`sqlite::migrate_adopting`): nothing was changed. The source names what
    /// is missing or unexpected.
    #[error("the existing tables are not a schema version this build can adopt: {source}")]
    Unadoptable {
        /// The store's own words: which table, and what it lacks or has in addition.
        #[source]
        source: BoxError,
    },
    /// The driver failed outside a step (the lock, the transaction, the
    /// version's record); the source is the driver's own error.
    #[error(transparent)]
    Driver(BoxError),
}
