//! A read-only connection that answers a taken key without the writer.
//!
//! In WAL mode a reader never waits for the writer, so a replay of a finished key, a
//! mismatch or a 409 for a key in progress is answered while another key's effect
//! holds the writer. The read is only a shortcut: a key it finds free or expired goes
//! to the writer, whose atomic upsert decides (a request that raced in between is
//! found there).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::queries;
use crate::record::Existing;
use crate::store::ClaimRequest;

/// The reader connection; clones share it.
#[derive(Clone)]
pub(super) struct Reader {
    // Each read is one indexed lookup, so readers take turns on one connection.
    conn: Arc<Mutex<Connection>>,
}

impl Reader {
    /// Opens `path` read-only (after the writer created and migrated it).
    pub(super) fn open(path: &Path, busy_timeout: Duration) -> rusqlite::Result<Self> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // A reader waits only while the WAL index is rebuilt after a crash.
        conn.busy_timeout(busy_timeout)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// The key's unexpired record, or `None` when the writer must decide (the key is
    /// free or expired, or the read failed: the writer reports a real fault).
    pub(super) async fn existing(&self, request: &ClaimRequest) -> Option<Existing> {
        let conn = Arc::clone(&self.conn);
        let (scope, now) = (request.scope, request.now);
        let read = tokio::task::spawn_blocking(move || {
            let conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            queries::existing(&conn, &scope, now)
        })
        .await;
        let error: Box<dyn std::error::Error + Send + Sync> = match read {
            Ok(Ok(existing)) => return existing,
            Ok(Err(error)) => error.into(),
            Err(error) => error.into(),
        };
        tracing::debug!(%error, "idempotency store: read failed; asking the writer");
        None
    }
}
