//! The store's one writer connection, waited for no longer than a bound.
//!
//! SQLite lets one connection write at a time, and the strong mode holds the writer
//! for the whole effect. Behind a plain lock every other write queued without limit,
//! so a client's attempt could time out in the queue with nothing to show for it. Here
//! a call that would start something waits at most its bound, then fails with a
//! [`StoreError`] (the layer answers 503 with `Retry-After`, nothing ran): the client
//! learns within the bound and retries, rather than spending its attempt timeout.

use std::sync::Arc;
use std::time::Duration;

use idempotency_storage::sqlite::is_busy;
use rusqlite::Connection;
use tokio::sync::Mutex;

use crate::store::StoreError;

/// The writer connection; clones share it.
#[derive(Clone)]
pub(super) struct Writer {
    // tokio's lock, so the wait can be bounded and the guard moved to a blocking thread.
    conn: Arc<Mutex<Connection>>,
    busy_timeout: Duration,
}

/// How long a call waits for the writer.
#[derive(Debug, Clone, Copy)]
pub(super) enum Wait {
    /// At most this long, then the call fails: for work that has not started anything.
    AtMost(Duration),
    /// Until the writer is free: for recording what an effect already did, where
    /// giving up would cost a second execution once the lease lapses.
    UntilFree,
}

impl Writer {
    pub(super) fn new(conn: Connection, busy_timeout: Duration) -> Self {
        Self {
            conn: Arc::new(Mutex::new(conn)),
            busy_timeout,
        }
    }

    /// Runs `work` with the writer on a blocking thread. Once it has the writer,
    /// `work` runs to its end even if the caller's future is dropped (the blocking
    /// thread is not cancelled), so a transaction it opens commits or rolls back as
    /// `work` says, never half-way.
    pub(super) async fn run<T, F>(
        &self,
        what: &'static str,
        wait: Wait,
        work: F,
    ) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let lock = Arc::clone(&self.conn).lock_owned();
        let mut conn = match wait {
            Wait::AtMost(bound) => tokio::time::timeout(bound, lock).await.map_err(|_| {
                StoreError::msg(format!(
                    "{what}: the writer was busy past the bound of {bound:?} (another key's \
                     first execution holds it)"
                ))
            })?,
            Wait::UntilFree => lock.await,
        };
        let busy_timeout = self.busy_timeout;
        let joined = tokio::task::spawn_blocking(move || work(&mut conn))
            .await
            .map_err(|e| StoreError::new(what, e))?;
        joined.map_err(|e| {
            if is_busy(&e) {
                // Another process holds the file's write lock.
                StoreError::new(
                    format!("{what}: the write lock was held past {busy_timeout:?}"),
                    e,
                )
            } else {
                StoreError::new(what, e)
            }
        })
    }
}
