//! A store in one SQLite file (bundled SQLite, WAL, a busy timeout for the write
//! lock), shareable by the processes of one host.
//!
//! Besides the [`Store`] contract (layer mode), [`SqliteStore::transact`] is the
//! strong mode: the claim, the handler's own writes and the stored response commit in
//! one transaction, so a crash leaves either all of them or none.

mod builder;
mod migrate;
mod queries;
mod reader;
mod strong;
mod writer;

use std::path::Path;
use std::time::{Duration, SystemTime};

use rusqlite::TransactionBehavior;

use super::{Claim, ClaimRequest, ClaimToken, Store, StoreError, StoreFuture};
use crate::record::Completion;
use reader::Reader;
use writer::{Wait, Writer};

pub use builder::SqliteStoreBuilder;
/// The default [`SqliteStoreBuilder::busy_timeout`]: idempotency-storage's, the same
/// constant the client's journal opens its file with.
pub use idempotency_storage::sqlite::DEFAULT_BUSY_TIMEOUT;

/// Claims and responses in a SQLite file; clones share its two connections.
///
/// # One writer
///
/// SQLite writes one transaction at a time, and in the strong mode
/// ([`SqliteStore::transact`]) that transaction holds the writer for the whole
/// effect. So:
///
/// - **First executions run one at a time.** A claim waits for the writer at most
///   [`SqliteStore::writer_wait`] (default [`SqliteStore::DEFAULT_WRITER_WAIT`], 2 s),
///   then fails; the layer answers `503` with `Retry-After: 1` and runs nothing.
/// - **Replays, mismatches (422) and keys in progress (409) never wait for it.** A
///   second, read-only connection answers a key that has an unexpired record first
///   (WAL readers do not wait for the writer); only a free or expired key goes to the
///   writer, whose atomic upsert decides.
/// - In the strong mode a key in progress is not visible until its transaction
///   commits, so a concurrent duplicate waits for the writer like a first execution
///   (then replays, or gets the `503`).
///
/// Choose [`PostgresStore`](crate::PostgresStore) (feature `postgres`) when first
/// executions must run concurrently (slow effects, many writers), or when a fleet of
/// hosts shares the keys.
#[derive(Clone)]
pub struct SqliteStore {
    writer: Writer,
    reader: Reader,
    busy_timeout: Duration,
    writer_wait: Duration,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("busy_timeout", &self.busy_timeout)
            .field("writer_wait", &self.writer_wait)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// How long a claim waits for the writer by default: below the client's default
    /// 10 s attempt timeout, so a busy writer is reported (503, retry in a second)
    /// while the client's attempt is still alive.
    pub const DEFAULT_WRITER_WAIT: Duration = Duration::from_secs(2);

    /// Opens (creating it owner-only if needed) and migrates a store file, with the
    /// [`DEFAULT_BUSY_TIMEOUT`].
    ///
    /// # Errors
    ///
    /// As [`SqliteStoreBuilder::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::builder(path).open()
    }

    /// A builder for a store file: `SqliteStore::builder(path).busy_timeout(…).open()`,
    /// as the client's journal opens its own.
    pub fn builder(path: impl AsRef<Path>) -> SqliteStoreBuilder {
        SqliteStoreBuilder::new(path.as_ref())
    }

    /// As [`SqliteStore::open`], with another busy timeout.
    ///
    /// # Errors
    ///
    /// As [`SqliteStoreBuilder::open`].
    #[deprecated(
        since = "0.1.0",
        note = "use `SqliteStore::builder(path).busy_timeout(timeout).open()`, as the journal"
    )]
    pub fn open_with(path: impl AsRef<Path>, busy_timeout: Duration) -> Result<Self, StoreError> {
        Self::builder(path).busy_timeout(busy_timeout).open()
    }

    /// How long a claim, or a strong-mode transaction, waits for the writer before it
    /// fails (and the layer answers 503). Keep it below the clients' attempt timeout.
    /// Recording a finished response waits as long as it takes: the effect already ran.
    #[must_use]
    pub fn writer_wait(mut self, wait: Duration) -> Self {
        self.writer_wait = wait;
        self
    }

    /// Runs `work` in one write transaction with the writer; commits when it returns
    /// `Ok`.
    async fn write<T, F>(&self, what: &'static str, wait: Wait, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T> + Send + 'static,
    {
        self.writer
            .run(what, wait, move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let out = work(&tx)?;
                tx.commit()?;
                Ok(out)
            })
            .await
    }

    fn bounded(&self) -> Wait {
        Wait::AtMost(self.writer_wait)
    }
}

impl Store for SqliteStore {
    fn claim<'a>(&'a self, request: &'a ClaimRequest) -> StoreFuture<'a, Claim> {
        Box::pin(async move {
            if let Some(existing) = self.reader.existing(request).await {
                return Ok(Claim::Existing(existing));
            }
            let request = request.clone();
            self.write("claim a key", self.bounded(), move |tx| {
                queries::claim(tx, &request)
            })
            .await
        })
    }

    fn complete<'a>(
        &'a self,
        token: &'a ClaimToken,
        completion: Completion,
        expires_at: SystemTime,
    ) -> StoreFuture<'a, bool> {
        let token = token.clone();
        Box::pin(self.write("store a response", Wait::UntilFree, move |tx| {
            queries::complete(tx, &token, &completion, expires_at)
        }))
    }

    fn release<'a>(&'a self, token: &'a ClaimToken) -> StoreFuture<'a, bool> {
        let token = token.clone();
        Box::pin(self.write("release a key", Wait::UntilFree, move |tx| {
            queries::release(tx, &token)
        }))
    }

    fn prune(&self, now: SystemTime) -> StoreFuture<'_, u64> {
        // Bounded: a prune that gives up costs nothing, the next one deletes the rows.
        Box::pin(self.write("prune keys", self.bounded(), move |tx| {
            queries::prune(tx, now)
        }))
    }
}
