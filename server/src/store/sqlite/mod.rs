//! A store in one SQLite file (bundled SQLite, WAL, a busy timeout for the write
//! lock), shareable by the processes of one host.
//!
//! Besides the [`Store`] contract (layer mode), [`SqliteStore::transact`] is the
//! strong mode: the claim, the handler's own writes and the stored response commit in
//! one transaction, so a crash leaves either all of them or none.

mod migrate;
mod queries;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use idempotency_storage::sqlite::{is_busy, prepare_owner_only, switch_to_wal};
use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::{Claim, ClaimRequest, ClaimToken, Store, StoreError, StoreFuture, Transacted};
use crate::record::{Completion, StoredResponse};

/// The default busy timeout: how long a write waits for another connection's lock.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Claims and responses in a SQLite file; clones share one connection.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    busy_timeout: Duration,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("busy_timeout", &self.busy_timeout)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating it owner-only if needed) and migrates a store file, with the
    /// [`DEFAULT_BUSY_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// The file cannot be created or opened, switched to WAL, or migrated (including
    /// a schema newer than this build).
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, DEFAULT_BUSY_TIMEOUT)
    }

    /// As [`SqliteStore::open`], with another busy timeout.
    ///
    /// # Errors
    ///
    /// As [`SqliteStore::open`].
    pub fn open_with(path: impl AsRef<Path>, busy_timeout: Duration) -> Result<Self, StoreError> {
        let path = path.as_ref();
        prepare_owner_only(path, "stored responses").map_err(StoreError::file)?;
        let fail = |e| StoreError::new("open the SQLite store", e);
        let mut conn = Connection::open(path).map_err(fail)?;
        conn.busy_timeout(busy_timeout).map_err(fail)?;
        switch_to_wal(&conn, busy_timeout).map_err(fail)?;
        // FULL: a committed claim and response survive a power loss, not only a crash.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(fail)?;
        migrate::migrate(&mut conn)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            busy_timeout,
        })
    }

    /// Runs `work` in one write transaction on a blocking thread; commits when it
    /// returns `Ok`.
    async fn write<T, F>(&self, what: &'static str, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> rusqlite::Result<T> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        let busy_timeout = self.busy_timeout;
        let joined = tokio::task::spawn_blocking(move || {
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = work(&tx)?;
            tx.commit()?;
            Ok(out)
        })
        .await
        .map_err(|e| StoreError::new(what, e))?;
        joined.map_err(|e: rusqlite::Error| {
            if is_busy(&e) {
                StoreError::new(
                    format!("{what}: the write lock was held past {busy_timeout:?}"),
                    e,
                )
            } else {
                StoreError::new(what, e)
            }
        })
    }

    /// The strong mode: claims `request.scope` and, if it was free, runs `effect`
    /// inside the same transaction, storing the response it returns with its writes.
    ///
    /// Either the claim, the effect's writes and the response commit together, or
    /// (the process dies, `effect` returns `Err`) none of them do and the next request
    /// with the key executes. A concurrent request with the key waits on the write
    /// lock, then finds the key finished. The response is kept until
    /// `request.now + retention`.
    ///
    /// # Errors
    ///
    /// The database could not be written (the transaction rolled back).
    pub async fn transact<E, F>(
        &self,
        request: ClaimRequest,
        retention: Duration,
        effect: F,
    ) -> Result<Transacted<E>, StoreError>
    where
        E: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> Result<StoredResponse, E> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        let joined = tokio::task::spawn_blocking(move || -> rusqlite::Result<Transacted<E>> {
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let token = match queries::claim(&tx, &request)? {
                Claim::Acquired { token, .. } => token,
                Claim::Existing(existing) => return Ok(Transacted::Existing(existing)),
            };
            let response = match effect(&tx) {
                Ok(response) => response,
                // Dropping the transaction rolls back the claim and the effect's writes.
                Err(rollback) => return Ok(Transacted::RolledBack(rollback)),
            };
            let done = Completion::Stored(response.clone());
            queries::complete(&tx, &token, &done, request.now + retention)?;
            tx.commit()?;
            Ok(Transacted::Executed(response))
        })
        .await
        .map_err(|e| StoreError::new("run the transaction", e))?;
        joined.map_err(|e| StoreError::new("run the transaction", e))
    }
}

impl SqliteStore {
    /// Runs `effect` in one transaction without a key (a route whose key is optional
    /// and absent): committed when it returns `Ok`.
    pub(crate) async fn transact_unkeyed<E, F>(
        &self,
        effect: F,
    ) -> Result<Result<StoredResponse, E>, StoreError>
    where
        E: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> Result<StoredResponse, E> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        let joined =
            tokio::task::spawn_blocking(move || -> rusqlite::Result<Result<StoredResponse, E>> {
                let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let out = effect(&tx);
                if out.is_ok() {
                    tx.commit()?;
                }
                Ok(out)
            })
            .await
            .map_err(|e| StoreError::new("run the transaction", e))?;
        joined.map_err(|e| StoreError::new("run the transaction", e))
    }
}

impl Store for SqliteStore {
    fn claim<'a>(&'a self, request: &'a ClaimRequest) -> StoreFuture<'a, Claim> {
        let request = request.clone();
        Box::pin(self.write("claim a key", move |tx| queries::claim(tx, &request)))
    }

    fn complete<'a>(
        &'a self,
        token: &'a ClaimToken,
        completion: Completion,
        expires_at: SystemTime,
    ) -> StoreFuture<'a, bool> {
        let token = token.clone();
        Box::pin(self.write("store a response", move |tx| {
            queries::complete(tx, &token, &completion, expires_at)
        }))
    }

    fn release<'a>(&'a self, token: &'a ClaimToken) -> StoreFuture<'a, bool> {
        let token = token.clone();
        Box::pin(self.write("release a key", move |tx| queries::release(tx, &token)))
    }

    fn prune(&self, now: SystemTime) -> StoreFuture<'_, u64> {
        Box::pin(self.write("prune keys", move |tx| queries::prune(tx, now)))
    }
}
