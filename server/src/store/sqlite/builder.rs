//! Opening a store file with settings: the same shape as the journal's
//! `SqliteStore::builder(path).busy_timeout(…).open()`, with the same default
//! (idempotency-storage's `DEFAULT_BUSY_TIMEOUT`), so the two halves sharing a
//! host are tuned with one vocabulary.

use std::path::{Path, PathBuf};
use std::time::Duration;

use idempotency_storage::sqlite::{prepare_owner_only, switch_to_wal, DEFAULT_BUSY_TIMEOUT};
use rusqlite::Connection;

use super::reader::Reader;
use super::writer::Writer;
use super::{migrate, SqliteStore};
use crate::store::StoreError;

/// Opens a [`SqliteStore`] with settings; see [`SqliteStore::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct SqliteStoreBuilder {
    path: PathBuf,
    busy_timeout: Duration,
}

impl SqliteStoreBuilder {
    pub(super) fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        }
    }

    /// How long a statement waits for another connection's lock on the file (another
    /// process's write, or its switch to WAL) before it fails (default
    /// [`DEFAULT_BUSY_TIMEOUT`](crate::DEFAULT_BUSY_TIMEOUT), 5 s). The wait of a
    /// claim for this store's own writer is [`SqliteStore::writer_wait`].
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Opens (creating it owner-only if needed) and migrates the store file.
    ///
    /// # Errors
    ///
    /// The file cannot be created or opened, switched to WAL, or migrated (including
    /// a schema newer than this build).
    pub fn open(self) -> Result<SqliteStore, StoreError> {
        let Self { path, busy_timeout } = self;
        prepare_owner_only(&path, "stored responses").map_err(StoreError::file)?;
        let fail = |e| StoreError::new("open the SQLite store", e);
        let mut conn = Connection::open(&path).map_err(fail)?;
        conn.busy_timeout(busy_timeout).map_err(fail)?;
        switch_to_wal(&conn, busy_timeout).map_err(fail)?;
        // FULL: a committed claim and response survive a power loss, not only a crash.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(fail)?;
        migrate::migrate(&mut conn)?;
        // After the migration, so the reader sees the table.
        let reader = Reader::open(&path, busy_timeout).map_err(fail)?;
        Ok(SqliteStore {
            writer: Writer::new(conn, busy_timeout),
            reader,
            busy_timeout,
            writer_wait: SqliteStore::DEFAULT_WRITER_WAIT,
        })
    }
}
