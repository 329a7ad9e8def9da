//! The journal handle: a store plus the rules for writing to it.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;

use crate::backlog::Backlog;
use crate::error::JournalError;
use crate::listing::{ListCursor, ListPage};
use crate::record::{IntentRecord, DEFAULT_RETENTION};
use crate::state::IntentState;
use crate::store::JournalStore;
use crate::wake::RelayWake;
use crate::worker::Worker;

/// A journal of durable intents: a [`JournalStore`] and its settings. Cheap to
/// clone; clones share the store.
///
/// # Defaults
/// | setting | default |
/// |---|---|
/// | key retention | [`DEFAULT_RETENTION`] (23 h) |
/// | resume lease (every resume claim; a durable send without a deadline) | 5 min |
/// | lease margin past a durable send's deadline | 30 s |
/// | an `unknown` intent is due again after | 30 s |
/// | max runs (write-ahead + claims; a run that did nothing at the server is not counted) | 10 |
/// | headers never journaled | `Authorization`, `Proxy-Authorization`, `Cookie` |
/// | worker | [`Worker::unique`]: `worker-<uuid v4>`, never taken over before its leases end |
///
/// # Restarts
/// Give each worker a stable name, unique among live processes
/// ([`JournalBuilder::worker_name`]: a host name, a pod name, a systemd
/// instance). A restarted process of that name is a new *incarnation*: its first
/// resume pass takes back every lease its dead predecessor held, at once, instead
/// of waiting for them to end. If a twin with the same name is in fact still
/// alive, its leases are taken over all the same: the twin's late results are
/// dropped ([`JournalError::LeaseLost`], the fencing counter moved), and what it
/// was still sending may be sent again by the new incarnation — with the same
/// key and body, so the server's deduplication answers the second send, but two
/// sends of one intent can overlap in time. Names must therefore be unique among
/// live processes; with the default unique name nothing is taken over early.
#[derive(Clone)]
pub struct Journal {
    inner: Arc<Settings>,
}

pub(crate) struct Settings {
    pub(crate) store: Arc<dyn JournalStore>,
    pub(crate) worker: Worker,
    pub(crate) retention: Duration,
    pub(crate) resume_lease: Duration,
    pub(crate) lease_margin: Duration,
    pub(crate) unknown_retry_after: Duration,
    pub(crate) max_runs: i64,
    pub(crate) excluded_headers: Vec<HeaderName>,
    /// Wakes relays: this journal's resumers at once, others by the store.
    pub(crate) relay_wake: RelayWake,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("worker", &self.inner.worker)
            .field("retention", &self.inner.retention)
            .field("max_runs", &self.inner.max_runs)
            .finish_non_exhaustive()
    }
}

impl Journal {
    /// A journal with the default settings.
    pub fn new(store: impl JournalStore) -> Self {
        Self::builder(store)
            .build()
            .expect("the defaults are valid")
    }

    /// Starts a builder.
    pub fn builder(store: impl JournalStore) -> JournalBuilder {
        JournalBuilder {
            settings: Settings {
                store: Arc::new(store),
                worker: Worker::unique(),
                retention: DEFAULT_RETENTION,
                resume_lease: Duration::from_secs(300),
                lease_margin: Duration::from_secs(30),
                unknown_retry_after: Duration::from_secs(30),
                max_runs: 10,
                excluded_headers: Vec::new(),
                relay_wake: RelayWake::new(),
            },
        }
    }

    /// The store.
    pub fn store(&self) -> &dyn JournalStore {
        &*self.inner.store
    }

    /// The worker this journal's leases are taken for (its name is the lease
    /// owner).
    pub fn worker(&self) -> &Worker {
        &self.inner.worker
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.inner
    }

    /// Looks an intent up by its idempotency key.
    ///
    /// # Errors
    /// [`JournalError::Storage`] or [`JournalError::InvalidRecord`].
    pub async fn get(&self, key: &str) -> Result<Option<IntentRecord>, JournalError> {
        self.inner.store.get(key).await
    }

    /// Lists up to `limit` intents in `state`, oldest first (the first page of
    /// [`list_page`](Self::list_page)).
    ///
    /// # Errors
    /// [`JournalError::Storage`] or [`JournalError::InvalidRecord`].
    pub async fn list(
        &self,
        state: IntentState,
        limit: usize,
    ) -> Result<Vec<IntentRecord>, JournalError> {
        self.inner.store.list(state, None, limit).await
    }

    /// One page of up to `limit` intents in `state`, oldest first, after
    /// `cursor` (`None`: from the start). Pass the page's `next` to get the
    /// following page; it is `None` after the last.
    ///
    /// # Errors
    /// [`JournalError::Storage`] or [`JournalError::InvalidRecord`].
    pub async fn list_page(
        &self,
        state: IntentState,
        cursor: Option<&ListCursor>,
        limit: usize,
    ) -> Result<ListPage, JournalError> {
        let records = self.inner.store.list(state, cursor, limit).await?;
        let next = match records.last() {
            Some(last) if records.len() == limit => Some(ListCursor::after(last)),
            _ => None,
        };
        Ok(ListPage { records, next })
    }

    /// The open intents as this worker sees them: due now, leased (until
    /// when), waiting (due when).
    ///
    /// # Errors
    /// [`JournalError::Storage`].
    pub async fn backlog(&self) -> Result<Backlog, JournalError> {
        self.inner.store.backlog(&self.inner.worker).await
    }

    /// When this worker can next claim an intent, by the store's clock: the
    /// store's now when one is due already, `None` when nothing is open.
    ///
    /// # Errors
    /// [`JournalError::Storage`].
    pub async fn next_due(&self) -> Result<Option<std::time::SystemTime>, JournalError> {
        Ok(self.backlog().await?.next_claimable())
    }

    /// Abandons an open intent by hand (after reconciling it with the server, say);
    /// a worker still sending it loses its lease. False when the key is unknown or
    /// already terminal.
    ///
    /// # Errors
    /// [`JournalError::Storage`].
    pub async fn abandon(&self, key: &str, reason: &str) -> Result<bool, JournalError> {
        self.inner.store.abandon(key, reason).await
    }

    /// Deletes terminal intents unchanged for `days` days; returns how many.
    ///
    /// # Errors
    /// [`JournalError::Storage`].
    pub async fn prune_older_than_days(&self, days: u32) -> Result<u64, JournalError> {
        self.inner
            .store
            .prune(Duration::from_secs(u64::from(days) * 86_400))
            .await
    }

    /// Wakes the relays after an outbox enqueue committed: this journal's
    /// background resumers at once, and — PostgreSQL — every relay listening
    /// on the database (`NOTIFY`, sent outside your transaction). Without it
    /// the relays find the intent at their next poll.
    ///
    /// Returns at once: the `NOTIFY` goes in the background, at most one at a
    /// time (calls meanwhile are served by one more after it, which starts
    /// after your commit). Best effort: a failed `NOTIFY` is logged, not
    /// returned, since the intent is committed and will be sent either way.
    pub async fn wake_relays(&self) {
        self.inner.relay_wake.wake(&self.inner.store);
    }

    /// The lease a run needs: its deadline plus the margin, so no other worker
    /// claims an intent while it may still be on the wire.
    pub(crate) fn lease_for(&self, deadline: Option<Duration>) -> Duration {
        lease_for(deadline, self.inner.resume_lease, self.inner.lease_margin)
    }
}

/// The lease of a run with `deadline`: the deadline plus `margin`, or
/// `resume_lease` for a run without one.
pub fn lease_for(deadline: Option<Duration>, resume_lease: Duration, margin: Duration) -> Duration {
    deadline.map_or(resume_lease, |deadline| deadline.saturating_add(margin))
}

/// Builds a [`Journal`]; see its defaults table.
#[must_use]
pub struct JournalBuilder {
    settings: Settings,
}

impl std::fmt::Debug for JournalBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalBuilder").finish_non_exhaustive()
    }
}

impl JournalBuilder {
    /// How long the server keeps keys (per intent: `DurableOptions::retention`).
    pub fn retention(mut self, retention: Duration) -> Self {
        self.settings.retention = retention;
        self
    }

    /// The resume lease: how long every resume claim holds its intents (a
    /// resend's deadline is clipped to end before it), and the lease of a
    /// durable send that has no deadline. Default 5 min.
    pub fn resume_lease(mut self, lease: Duration) -> Self {
        self.settings.resume_lease = lease;
        self
    }

    /// Added to a run's deadline to make its lease.
    pub fn lease_margin(mut self, margin: Duration) -> Self {
        self.settings.lease_margin = margin;
        self
    }

    /// How long an `unknown` intent (or one that met 409) waits before it is due.
    pub fn unknown_retry_after(mut self, delay: Duration) -> Self {
        self.settings.unknown_retry_after = delay;
        self
    }

    /// Runs after which an intent is abandoned instead of sent again. A run
    /// that provably did nothing at the server (held back by a gate or the
    /// budget, a refused connection, 408, 429) is not counted.
    pub fn max_runs(mut self, runs: u32) -> Self {
        self.settings.max_runs = i64::from(runs);
        self
    }

    /// A header never written to the journal (besides the credentials that never
    /// are); the resume hook must add it back.
    pub fn exclude_header(mut self, name: HeaderName) -> Self {
        self.settings.excluded_headers.push(name);
        self
    }

    /// This worker's stable name, unique among live processes, in this
    /// process's incarnation: a restart takes back its predecessor's leases at
    /// once (see [`Journal`]'s "Restarts"). Default: a unique name per journal.
    pub fn worker_name(self, name: impl Into<String>) -> Self {
        self.worker(Worker::new(name))
    }

    /// This worker's name and incarnation, both explicit.
    pub fn worker(mut self, worker: Worker) -> Self {
        self.settings.worker = worker;
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    /// [`JournalError::InvalidConfig`] for a zero retention or resume lease, zero
    /// max runs or an empty worker name.
    pub fn build(self) -> Result<Journal, JournalError> {
        let s = &self.settings;
        let invalid = |what: &str| Err(JournalError::InvalidConfig(what.to_owned()));
        if s.retention.is_zero() {
            return invalid("retention must be above zero");
        }
        if s.resume_lease.is_zero() {
            return invalid("resume lease must be above zero");
        }
        if s.max_runs < 1 {
            return invalid("max runs must be at least 1");
        }
        if s.worker.name().is_empty() || s.worker.incarnation().is_empty() {
            return invalid("worker name and incarnation must not be empty");
        }
        Ok(Journal {
            inner: Arc::new(self.settings),
        })
    }
}
