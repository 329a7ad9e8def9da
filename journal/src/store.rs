//! The storage abstraction: what a journal backend must do, atomically.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::backlog::Backlog;
use crate::error::JournalError;
use crate::listing::ListCursor;
use crate::record::{Claimed, IntentRecord, Lease, NewIntent, Outcome};
use crate::state::IntentState;
use crate::worker::Worker;

/// A boxed future returned by [`JournalStore`] methods (keeps the trait usable as
/// `dyn JournalStore` without a macro crate).
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, JournalError>> + Send + 'a>>;

/// A journal backend. Every method is one atomic step of the state machine
/// described in the crate docs; implementations take "now" from their own clock
/// (PostgreSQL: the database's, so a fleet agrees on lease ends).
///
/// Implemented by [`SqliteStore`](crate::SqliteStore) and
/// [`PostgresStore`](https://docs.rs/reqwest-resilience-journal/latest/reqwest_resilience_journal/struct.PostgresStore.html). The conformance suite both pass is
/// public behind the `test-util` feature (`conformance::run_all`): run it against
/// your own implementation.
pub trait JournalStore: Send + Sync + 'static {
    /// Writes an intent ahead as `in_flight`, leased to `worker` (its name as
    /// the owner, and its incarnation) for `lease`, with fence 1 and runs 1.
    ///
    /// # Errors
    /// [`JournalError::DuplicateKey`] when the key is already journaled;
    /// [`JournalError::Storage`] or [`JournalError::Timeout`] when the write
    /// provably did not commit; [`JournalError::CommitUnknown`] when it may have
    /// (its commit was sent and the answer lost, and the database could not say).
    fn write_ahead<'a>(
        &'a self,
        intent: &'a NewIntent,
        worker: &'a Worker,
        lease: Duration,
    ) -> StoreFuture<'a, Lease>;

    /// Claims up to `limit` intents that are due — `unknown` with `due_at` passed,
    /// `in_flight` with an expired lease, or `in_flight` leased to `worker`'s name
    /// under another incarnation (a dead predecessor's, taken back at once) — for
    /// `worker`: each becomes `in_flight` with a new lease, its fence and runs
    /// raised by one. Two concurrent claims never return the same intent.
    ///
    /// # Errors
    /// [`JournalError::Storage`].
    fn claim<'a>(
        &'a self,
        worker: &'a Worker,
        lease: Duration,
        limit: usize,
    ) -> StoreFuture<'a, Vec<Claimed>>;

    /// Takes over the intent `key` for `worker` when nobody may be sending it:
    /// `unknown` (due or not — its caller is sending it again with its key), or
    /// `in_flight` with an ended lease or a lease of `worker`'s name under another
    /// incarnation. Like a claim, it raises the fence and runs by one. `None`
    /// when the key is not journaled, terminal, or leased to a live sender.
    ///
    /// # Errors
    /// [`JournalError::Storage`].
    fn take_over<'a>(
        &'a self,
        key: &'a str,
        worker: &'a Worker,
        lease: Duration,
    ) -> StoreFuture<'a, Option<Claimed>>;

    /// Records an outcome under a lease, subtracting
    /// [`Outcome::runs_given_back`] from the intent's runs.
    ///
    /// # Errors
    /// [`JournalError::LeaseLost`] when the intent's fence moved past the lease's
    /// (re-claimed or abandoned by hand) or it is no longer `in_flight`.
    fn record<'a>(&'a self, lease: &'a Lease, outcome: &'a Outcome) -> StoreFuture<'a, ()>;

    /// Looks an intent up by key.
    fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<IntentRecord>>;

    /// Lists up to `limit` intents in `state`, oldest first (by creation time,
    /// then key), after `after` when given.
    fn list<'a>(
        &'a self,
        state: IntentState,
        after: Option<&'a ListCursor>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<IntentRecord>>;

    /// Counts the open intents as `worker` sees them: due (claimable by it now),
    /// leased to others, waiting; and when the next lease ends and the next
    /// waiting intent is due.
    fn backlog<'a>(&'a self, worker: &'a Worker) -> StoreFuture<'a, Backlog>;

    /// Abandons an open (`in_flight` or `unknown`) intent by hand, raising its
    /// fence so a worker still sending it cannot record a result. Returns false
    /// when the key is unknown or already terminal.
    fn abandon<'a>(&'a self, key: &'a str, reason: &'a str) -> StoreFuture<'a, bool>;

    /// Deletes terminal intents last changed more than `older_than` ago; returns
    /// how many.
    fn prune<'a>(&'a self, older_than: Duration) -> StoreFuture<'a, u64>;

    /// Up to `limit` terminal intents (`succeeded`, `failed`, `abandoned`)
    /// whose result was not acknowledged yet, oldest result first (by the time
    /// it was recorded, then key). Every terminal result is unacknowledged
    /// until [`acknowledge`](Self::acknowledge)d.
    ///
    /// The default fails with [`JournalError::Unsupported`]: a store written
    /// before acknowledgements still compiles, and says so when asked.
    ///
    /// # Errors
    /// [`JournalError::Storage`] or [`JournalError::InvalidRecord`].
    fn unacknowledged(&self, limit: usize) -> StoreFuture<'_, Vec<IntentRecord>> {
        let _ = limit;
        Box::pin(async {
            Err(JournalError::Unsupported {
                operation: "unacknowledged",
            })
        })
    }

    /// Acknowledges the result of the terminal intent `key`: it is no longer
    /// listed by [`unacknowledged`](Self::unacknowledged). `true` when this
    /// call acknowledged it, `false` when it already was. Never changes the
    /// intent's state, fence or `updated_at`.
    ///
    /// The default fails with [`JournalError::Unsupported`].
    ///
    /// # Errors
    /// [`JournalError::UnknownKey`] when no intent has this key;
    /// [`JournalError::NotTerminal`] when it is still open (nothing changed);
    /// [`JournalError::Storage`].
    fn acknowledge<'a>(&'a self, key: &'a str) -> StoreFuture<'a, bool> {
        let _ = key;
        Box::pin(async {
            Err(JournalError::Unsupported {
                operation: "acknowledge",
            })
        })
    }

    /// Tells the relays of other processes that an intent may be due now (an
    /// outbox enqueue committed). The default does nothing: they find it at
    /// their next poll.
    ///
    /// # Errors
    /// [`JournalError::Storage`] or [`JournalError::Timeout`].
    fn announce(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    /// Wakes `wake` whenever another process [announces](Self::announce),
    /// until the returned guard is dropped. The default returns `None`: this
    /// store cannot listen, and relays rely on their poll.
    fn listen(&self, wake: Arc<Notify>) -> Option<Listening> {
        let _ = wake;
        None
    }
}

/// Keeps a store's [`listen`](JournalStore::listen) task running; dropping it
/// stops the task.
#[derive(Debug)]
pub struct Listening(tokio::task::AbortHandle);

impl Listening {
    /// Guards `task`: it is aborted when this is dropped.
    pub fn new(task: tokio::task::AbortHandle) -> Self {
        Self(task)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}
