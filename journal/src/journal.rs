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
                max_runs: 14,
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

    /// The longest pause before an `unknown` intent (or one that met 409) is due
    /// again. The pause is 1 s after its first run and doubles with each run up to
    /// this, so an intent caught by a short outage settles seconds after it while a
    /// long one is not hammered; a longer `Retry-After` from the server wins.
    /// Default 30 s.
    pub fn unknown_retry_after(mut self, delay: Duration) -> Self {
        self.settings.unknown_retry_after = delay;
        self
    }

    /// Runs after which an intent is abandoned instead of sent again. A run
    /// that provably did nothing at the server (held back by a gate or the
    /// budget, a refused connection, 408, 429) is not counted. Default 14: with
    /// the pauses of `unknown_retry_after`'s default (1, 2, 4, 8, 16 s, then 30 s),
    /// about four and a half minutes of pauses before an intent is given up.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What `build` refuses, each alone on otherwise valid settings, and what
    /// it accepts at the edge.
    #[cfg(feature = "sqlite")]
    #[test]
    fn a_journal_is_built_only_from_settings_that_can_work() {
        use crate::sqlite::SqliteStore;
        let builder = || Journal::builder(SqliteStore::open_in_memory().expect("journal"));
        let s = Duration::from_secs;
        #[rustfmt::skip]
        let rows: [(&str, JournalBuilder, Option<&str>); 8] = [
            ("the defaults", builder(), None),
            ("no retention", builder().retention(Duration::ZERO), Some("retention")),
            ("no resume lease", builder().resume_lease(Duration::ZERO), Some("resume lease")),
            ("no run allowed", builder().max_runs(0), Some("max runs")),
            ("one run allowed", builder().max_runs(1), None),
            ("no worker name", builder().worker(Worker::with_incarnation("", "1")), Some("worker")),
            ("no incarnation", builder().worker(Worker::with_incarnation("relay", "")), Some("worker")),
            ("short settings", builder().retention(s(1)).resume_lease(s(1)).lease_margin(Duration::ZERO), None),
        ];
        for (what, builder, refused) in rows {
            match (builder.build(), refused) {
                (Ok(_), None) => {}
                (Err(JournalError::InvalidConfig(why)), Some(names)) => {
                    assert!(why.contains(names), "{what}: {why}");
                }
                (got, want) => panic!("{what}: {got:?}, want refused for {want:?}"),
            }
        }
    }

    /// What `max_runs`' documentation promises of the defaults: the pauses
    /// between an open intent's runs, before it is abandoned, add up to about
    /// four and a half minutes of an outage (the journal's first run included).
    #[cfg(feature = "sqlite")]
    #[test]
    fn the_default_runs_cover_four_and_a_half_minutes_of_pauses() {
        use crate::next_run::pause_before_next_run;
        use crate::sqlite::SqliteStore;
        let journal = Journal::new(SqliteStore::open_in_memory().expect("journal"));
        let settings = journal.settings();
        // A pause follows each run but the last.
        let pauses: Duration = (1..settings.max_runs)
            .map(|runs| pause_before_next_run(runs, None, settings.unknown_retry_after))
            .sum();
        assert!(
            pauses >= Duration::from_secs(270) && pauses < Duration::from_secs(300),
            "{pauses:?}"
        );
    }

    /// The settings a builder was given are the journal's.
    #[cfg(feature = "sqlite")]
    #[test]
    fn a_journal_keeps_the_settings_it_was_built_with() {
        use crate::sqlite::SqliteStore;
        let s = Duration::from_secs;
        let worker = Worker::with_incarnation("relay-7", "boot-3");
        let journal = Journal::builder(SqliteStore::open_in_memory().expect("journal"))
            .retention(s(3_600))
            .resume_lease(s(120))
            .lease_margin(s(7))
            .unknown_retry_after(s(9))
            .max_runs(4)
            .exclude_header(HeaderName::from_static("x-signature"))
            .worker(worker.clone())
            .build()
            .expect("valid");
        let settings = journal.settings();
        assert_eq!(settings.retention, s(3_600));
        assert_eq!(settings.resume_lease, s(120));
        assert_eq!(settings.lease_margin, s(7));
        assert_eq!(settings.unknown_retry_after, s(9));
        assert_eq!(settings.max_runs, 4);
        assert_eq!(
            settings.excluded_headers,
            [HeaderName::from_static("x-signature")]
        );
        assert_eq!(journal.worker(), &worker);
        assert_eq!(journal.lease_for(Some(s(10))), s(17));
        assert_eq!(journal.lease_for(None), s(120));
        let named = Journal::builder(SqliteStore::open_in_memory().expect("journal"))
            .worker_name("relay-8")
            .build()
            .expect("valid");
        assert_eq!(named.worker().name(), "relay-8");
        let shown = format!("{journal:?}");
        assert!(
            shown.contains("relay-7") && shown.contains("max_runs: 4"),
            "{shown}"
        );
        let builder = Journal::builder(SqliteStore::open_in_memory().expect("journal"));
        assert_eq!(format!("{builder:?}"), "JournalBuilder { .. }");
    }

    /// Writes `keys` ahead and records each as succeeded.
    #[cfg(feature = "sqlite")]
    async fn finished(journal: &Journal, keys: &[&str]) {
        for key in keys {
            let intent =
                crate::record::NewIntent::new(*key, http::Method::PUT, "http://127.0.0.1:9/p");
            let lease = journal
                .store()
                .write_ahead(&intent, journal.worker(), Duration::from_secs(60))
                .await
                .expect("written ahead");
            let done = crate::record::Outcome::Succeeded {
                status: 200,
                locator: None,
            };
            journal
                .store()
                .record(&lease, &done)
                .await
                .expect("recorded");
        }
    }

    /// Pages end exactly where the rows do: a full page points to the next,
    /// a short one (or an empty one) is the last.
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn pages_follow_each_other_until_a_short_one() {
        let journal = Journal::new(crate::sqlite::SqliteStore::open_in_memory().expect("journal"));
        finished(&journal, &["a", "b", "c"]).await;
        let keys = |page: &ListPage| {
            page.records
                .iter()
                .map(|r| r.key.clone())
                .collect::<Vec<_>>()
        };
        let first = journal
            .list_page(IntentState::Succeeded, None, 2)
            .await
            .expect("page");
        assert_eq!(keys(&first), ["a", "b"]);
        let after = first.next.as_ref().expect("a full page has a next one");
        let second = journal
            .list_page(IntentState::Succeeded, Some(after), 2)
            .await
            .expect("page");
        assert_eq!(keys(&second), ["c"]);
        assert!(second.next.is_none(), "a short page is the last");
        let all = journal
            .list_page(IntentState::Succeeded, None, 3)
            .await
            .expect("page");
        let after = all.next.as_ref().expect("a full page has a next one");
        let empty = journal
            .list_page(IntentState::Succeeded, Some(after), 3)
            .await
            .expect("page");
        assert!(empty.records.is_empty() && empty.next.is_none());
        assert_eq!(
            journal
                .list(IntentState::Succeeded, 10)
                .await
                .expect("list")
                .len(),
            3
        );
    }

    /// Pruning counts whole days: a result finished a moment ago is kept by a
    /// one-day prune and deleted by a zero-day one.
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn pruning_deletes_what_finished_more_than_the_days_ago() {
        let journal = Journal::new(crate::sqlite::SqliteStore::open_in_memory().expect("journal"));
        finished(&journal, &["a", "b"]).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(journal.prune_older_than_days(1).await.expect("pruned"), 0);
        assert_eq!(journal.prune_older_than_days(0).await.expect("pruned"), 2);
        assert!(journal.get("a").await.expect("read").is_none());
    }

    /// An open intent is abandoned once; a second abandon finds it terminal.
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn an_open_intent_is_abandoned_once() {
        let journal = Journal::new(crate::sqlite::SqliteStore::open_in_memory().expect("journal"));
        let intent = crate::record::NewIntent::new("a", http::Method::PUT, "http://127.0.0.1:9/p");
        journal
            .store()
            .write_ahead(&intent, journal.worker(), Duration::from_secs(60))
            .await
            .expect("written ahead");
        assert!(journal.abandon("a", "reconciled").await.expect("abandon"));
        assert!(!journal.abandon("a", "again").await.expect("abandon"));
        assert!(!journal.abandon("never", "unknown").await.expect("abandon"));
        let row = journal.get("a").await.expect("read").expect("journaled");
        assert_eq!(row.state, IntentState::Abandoned);
    }
}
