//! The storage contract: claim a key atomically, finish it, or let it go.
//!
//! A claim is one atomic step (a unique key and `INSERT … ON CONFLICT`, or a lock
//! around a map), never a read followed by a write: two concurrent requests with one
//! key must not both see it free. Each claim carries a generation, so a holder whose
//! lease lapsed and was reclaimed cannot overwrite its successor's result.
//!
//! A store may answer a key that is plainly taken from a read first (SQLite's reader
//! does, so replays never wait for its one writer): a taken key stays taken. A key the
//! read finds free or expired still goes through the atomic step, which decides.

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod columns;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
pub(crate) mod rules;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{EffectFuture, PostgresStore, MAX_POSTGRES_TRANSACTIONS};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteStore, SqliteStoreBuilder, DEFAULT_BUSY_TIMEOUT};

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use crate::fingerprint::Fingerprint;
use crate::record::{Completion, Existing, StoredResponse};
use crate::scope::ScopeId;

/// The future a [`Store`] method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Keeps claims and finished responses.
///
/// A key is free when it has no record or its record expired (`expires_at <= now`): an
/// in-progress record expires at the end of its lease, a finished one at the end of the
/// retention. [`Store::claim`] takes a free key in one atomic step.
pub trait Store: Send + Sync + 'static {
    /// Claims `request.scope` if it is free; otherwise reports who has it.
    fn claim<'a>(&'a self, request: &'a ClaimRequest) -> StoreFuture<'a, Claim>;

    /// Records how the holder of `token` finished, kept until `expires_at`. Returns
    /// `false` when the claim was lost (its lease lapsed and someone reclaimed it).
    fn complete<'a>(
        &'a self,
        token: &'a ClaimToken,
        completion: Completion,
        expires_at: SystemTime,
    ) -> StoreFuture<'a, bool>;

    /// Frees the key held by `token` (nothing to keep, the next request executes).
    /// Returns `false` when the claim was already lost.
    fn release<'a>(&'a self, token: &'a ClaimToken) -> StoreFuture<'a, bool>;

    /// Deletes every expired record; returns how many.
    fn prune(&self, now: SystemTime) -> StoreFuture<'_, u64>;
}

/// What a strong-mode transaction (`SqliteStore::transact`, `PostgresStore::transact`) did.
#[derive(Debug)]
#[non_exhaustive]
pub enum Transacted<E> {
    /// The effect ran; its writes, the claim and `response` committed together.
    Executed(StoredResponse),
    /// Another request had claimed or finished the key; nothing ran.
    Existing(Existing),
    /// The effect asked for a rollback: nothing was written, the key is still free.
    RolledBack(E),
}

/// One request's attempt to claim a key.
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    /// The key in its scope.
    pub scope: ScopeId,
    /// The request's fingerprint, kept for comparison with later requests.
    pub fingerprint: Fingerprint,
    /// The time of the claim.
    pub now: SystemTime,
    /// How long the claim holds before another request may take it over.
    pub lease: Duration,
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Claim {
    /// The key is this request's to execute.
    Acquired {
        /// Proof of the claim, for [`Store::complete`] and [`Store::release`].
        token: ClaimToken,
        /// The key was taken over from a holder whose lease lapsed.
        reclaimed: bool,
    },
    /// Someone holds or finished the key.
    Existing(Existing),
}

/// Proof of a claim: the key and the generation this claim created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimToken {
    /// The key in its scope.
    pub scope: ScopeId,
    /// Never repeated for a key, so a lapsed holder is recognised.
    pub generation: u64,
}

/// A store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("idempotency store: {message}")]
pub struct StoreError {
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl StoreError {
    /// An error with a message and the underlying cause.
    pub fn new(
        message: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self {
            message: message.into(),
            source: Some(source.into()),
        }
    }

    /// An error with a message only.
    pub fn msg(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl StoreError {
    /// A schema the storage plumbing could not bring up to date.
    pub(crate) fn schema(error: idempotency_storage::SchemaError) -> Self {
        use idempotency_storage::SchemaError;
        match error {
            SchemaError::Newer { current, latest } => Self::msg(format!(
                "the store's schema is version {current}, newer than this build's {latest}"
            )),
            other => Self::new(format!("migrate the store's schema: {other}"), other),
        }
    }

    /// A store file that could not be created, restricted or inspected.
    #[cfg(feature = "sqlite")]
    pub(crate) fn file(error: idempotency_storage::FileError) -> Self {
        Self::new(error.to_string(), error)
    }
}

/// A shared store is a store: keep an `Arc` to read it while the layer uses it.
impl<S: Store + ?Sized> Store for std::sync::Arc<S> {
    fn claim<'a>(&'a self, request: &'a ClaimRequest) -> StoreFuture<'a, Claim> {
        (**self).claim(request)
    }

    fn complete<'a>(
        &'a self,
        token: &'a ClaimToken,
        completion: Completion,
        expires_at: SystemTime,
    ) -> StoreFuture<'a, bool> {
        (**self).complete(token, completion, expires_at)
    }

    fn release<'a>(&'a self, token: &'a ClaimToken) -> StoreFuture<'a, bool> {
        (**self).release(token)
    }

    fn prune(&self, now: SystemTime) -> StoreFuture<'_, u64> {
        (**self).prune(now)
    }
}
