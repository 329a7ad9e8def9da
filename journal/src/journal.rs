//! The journal handle: a store plus the rules for writing to it.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;

use crate::error::JournalError;
use crate::record::IntentRecord;
use crate::state::IntentState;
use crate::store::JournalStore;

/// How long a server is assumed to keep an idempotency key: 24 hours (Stripe's
/// window) minus one hour, so a resend never races the server's expiry.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(23 * 3600);

/// A journal of durable intents: a [`JournalStore`] and its settings. Cheap to
/// clone; clones share the store.
///
/// # Defaults
/// | setting | default |
/// |---|---|
/// | key retention | [`DEFAULT_RETENTION`] (23 h) |
/// | lease without a deadline | 5 min |
/// | lease margin past the deadline | 30 s |
/// | an `unknown` intent is due again after | 30 s |
/// | max runs (write-ahead + claims) | 10 |
/// | headers never journaled | `Authorization`, `Proxy-Authorization`, `Cookie` |
/// | owner | `worker-<uuid v4>` |
#[derive(Clone)]
pub struct Journal {
    inner: Arc<Settings>,
}

pub(crate) struct Settings {
    pub(crate) store: Arc<dyn JournalStore>,
    pub(crate) owner: String,
    pub(crate) retention: Duration,
    pub(crate) lease_without_deadline: Duration,
    pub(crate) lease_margin: Duration,
    pub(crate) unknown_retry_after: Duration,
    pub(crate) max_runs: i64,
    pub(crate) excluded_headers: Vec<HeaderName>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("owner", &self.inner.owner)
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
                owner: format!("worker-{}", uuid::Uuid::new_v4()),
                retention: DEFAULT_RETENTION,
                lease_without_deadline: Duration::from_secs(300),
                lease_margin: Duration::from_secs(30),
                unknown_retry_after: Duration::from_secs(30),
                max_runs: 10,
                excluded_headers: Vec::new(),
            },
        }
    }

    /// The store.
    pub fn store(&self) -> &dyn JournalStore {
        &*self.inner.store
    }

    /// This worker's lease owner name.
    pub fn owner(&self) -> &str {
        &self.inner.owner
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

    /// Lists up to `limit` intents in `state`, oldest first.
    ///
    /// # Errors
    /// [`JournalError::Storage`] or [`JournalError::InvalidRecord`].
    pub async fn list(
        &self,
        state: IntentState,
        limit: usize,
    ) -> Result<Vec<IntentRecord>, JournalError> {
        self.inner.store.list(state, limit).await
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

    /// The lease a run needs: its deadline plus the margin, so no other worker
    /// claims an intent while it may still be on the wire.
    pub(crate) fn lease_for(&self, deadline: Option<Duration>) -> Duration {
        deadline.map_or(self.inner.lease_without_deadline, |deadline| {
            deadline.saturating_add(self.inner.lease_margin)
        })
    }
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

    /// The lease of a run whose intent has no deadline, and of every resume
    /// claim (a resend's deadline is clipped to end before it).
    pub fn lease_without_deadline(mut self, lease: Duration) -> Self {
        self.settings.lease_without_deadline = lease;
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

    /// Runs after which an intent is abandoned instead of sent again.
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

    /// This worker's lease owner name (default: a fresh `worker-<uuid>`).
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.settings.owner = owner.into();
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    /// [`JournalError::InvalidConfig`] for a zero retention or lease, zero max runs
    /// or an empty owner.
    pub fn build(self) -> Result<Journal, JournalError> {
        let s = &self.settings;
        let invalid = |what: &str| Err(JournalError::InvalidConfig(what.to_owned()));
        if s.retention.is_zero() {
            return invalid("retention must be above zero");
        }
        if s.lease_without_deadline.is_zero() {
            return invalid("lease must be above zero");
        }
        if s.max_runs < 1 {
            return invalid("max runs must be at least 1");
        }
        if s.owner.is_empty() {
            return invalid("owner must not be empty");
        }
        Ok(Journal {
            inner: Arc::new(self.settings),
        })
    }
}
