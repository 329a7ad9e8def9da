//! One rule for a result the journal could not record.
//!
//! The send is over and its result is known to the caller; only the journal's
//! copy is missing. The write runs on a task of its own, so that it goes on
//! when the caller's deadline cuts the caller's wait short. It is tried again a
//! few times (a brief outage, a reconnect) before the caller hears how it went.
//! If it still fails, the result is [kept](keep): the task writes it as soon as the
//! database is back (tried every few hundred milliseconds, spread per key so a
//! whole fleet does not knock at once), for as long as the lease lasts. Only a
//! result still unwritten when the lease ends is left to a resume, which sends
//! the intent again under the same key and body — the server replays its
//! stored answer, and the journal records that. The caller is not asked to do
//! anything: a response it holds stays its answer, and an error keeps saying
//! what it said, plus "outcome unknown" (the journal may still send the intent).

use std::hash::{Hash, Hasher};
use std::time::{Duration, SystemTime};

use crate::error::JournalError;
use crate::journal::Journal;
use crate::record::{Lease, Outcome};

/// The pauses before each further attempt at the terminal write.
const PAUSES: [Duration; 2] = [Duration::from_millis(50), Duration::from_millis(250)];

/// The shortest pause between two attempts of a kept result; a per-key share of
/// [`KEPT_SPREAD`] is added.
const KEPT_PAUSE: Duration = Duration::from_millis(200);
/// How far the pauses of kept results are spread.
const KEPT_SPREAD: Duration = Duration::from_millis(300);

/// Whether another attempt at the write can succeed: a storage failure or a
/// timeout may pass; a lost lease (someone else owns the intent now) will not.
pub(crate) fn worth_retrying(error: &JournalError) -> bool {
    matches!(
        error,
        JournalError::Storage(_) | JournalError::Timeout { .. }
    )
}

/// Records `outcome` under `lease` on a task of its own: tried again after each
/// of [`PAUSES`] while the failure is [worth retrying](worth_retrying), then
/// [kept](keep) by the same task if it still fails. Dropping the returned
/// future (the caller's deadline passed) leaves the task writing.
///
/// # Errors
/// The last failure of the first attempts: the result is not recorded yet (see
/// the module docs).
pub(crate) async fn record(
    journal: &Journal,
    lease: Lease,
    outcome: Outcome,
) -> Result<(), JournalError> {
    let (tell, told) = tokio::sync::oneshot::channel();
    let journal = journal.clone();
    tokio::spawn(async move {
        let first = record_now(&journal, &lease, &outcome).await;
        let kept = matches!(&first, Err(error) if worth_retrying(error));
        // The caller may have stopped listening; the write goes on regardless.
        let _ = tell.send(first);
        if kept {
            keep_writing(&journal, &lease, &outcome).await;
        }
    });
    told.await
        .unwrap_or_else(|_| Err(JournalError::storage("the journal's writing task ended")))
}

/// The first attempts of [`record`].
async fn record_now(
    journal: &Journal,
    lease: &Lease,
    outcome: &Outcome,
) -> Result<(), JournalError> {
    let mut pauses = PAUSES.iter();
    loop {
        match journal.store().record(lease, outcome).await {
            Ok(()) => return Ok(()),
            Err(error) => match pauses.next() {
                Some(pause) if worth_retrying(&error) => {
                    tracing::info!(%error, retry_in = ?pause, "journal: result not recorded yet; trying again");
                    tokio::time::sleep(*pause).await;
                }
                _ => return Err(error),
            },
        }
    }
}

/// Keeps writing `outcome` under `lease` in the background (see
/// [`keep_writing`]).
pub(crate) fn keep(journal: &Journal, lease: Lease, outcome: Outcome) {
    let journal = journal.clone();
    tokio::spawn(async move { keep_writing(&journal, &lease, &outcome).await });
}

/// Writes `outcome` under `lease` until it is written, the failure is not
/// [worth retrying](worth_retrying), or the lease ends (a resume owns the
/// intent then); the write that lands is logged.
async fn keep_writing(journal: &Journal, lease: &Lease, outcome: &Outcome) {
    let mut tries: u32 = 0;
    loop {
        tokio::time::sleep(kept_pause(&lease.key, tries)).await;
        tries = tries.saturating_add(1);
        if SystemTime::now() >= lease.until {
            tracing::warn!(
                tries,
                "journal: a kept result outlived its lease; a resume will send the intent again"
            );
            return;
        }
        match journal.store().record(lease, outcome).await {
            Ok(()) => {
                tracing::info!(tries, state = %outcome.state(), "journal: kept result recorded");
                return;
            }
            Err(error) if worth_retrying(&error) => {
                tracing::debug!(%error, tries, "journal: kept result not recorded yet");
            }
            Err(error) => {
                tracing::warn!(%error, "journal: kept result dropped");
                return;
            }
        }
    }
}

/// The pause before a kept result's next attempt: [`KEPT_PAUSE`] plus a share
/// of [`KEPT_SPREAD`] that differs by key and by attempt.
fn kept_pause(key: &str, tries: u32) -> Duration {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (key, tries).hash(&mut hasher);
    let spread = u64::try_from(KEPT_SPREAD.as_millis()).unwrap_or(u64::MAX);
    KEPT_PAUSE + Duration::from_millis(hasher.finish() % spread.max(1))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn kept_pauses_stay_within_their_bounds_and_differ_by_key() {
        let pauses: Vec<_> = (0..50)
            .map(|n| kept_pause(&format!("pay-{n}"), 0))
            .collect();
        assert!(pauses
            .iter()
            .all(|p| *p >= KEPT_PAUSE && *p < KEPT_PAUSE + KEPT_SPREAD));
        let distinct: std::collections::BTreeSet<_> = pauses.iter().collect();
        assert!(distinct.len() > 10, "{distinct:?}");
    }

    #[test]
    fn only_passing_failures_are_tried_again() {
        let table = [
            (JournalError::Storage("connection reset".into()), true),
            (
                JournalError::Timeout {
                    operation: "statement",
                    after: Duration::from_secs(5),
                },
                true,
            ),
            (JournalError::lease_lost("pay-1", 2), false),
            (JournalError::InvalidRecord("bad state".into()), false),
        ];
        for (error, expected) in table {
            assert_eq!(worth_retrying(&error), expected, "{error}");
        }
    }

    /// How often the first attempts write a result, and what the caller hears:
    /// a passing failure is tried again after each pause, a lost lease never
    /// (someone else owns the intent: two more writes would only be refused by
    /// the fence again, after the caller waited for them).
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn the_first_attempts_write_again_only_what_may_pass() {
        use counted::CountedStore;
        let succeeded = Outcome::Succeeded {
            status: 201,
            locator: None,
        };
        #[rustfmt::skip]
        let rows = [
            // (what, storage failures first, lease lost, writes, the caller hears)
            ("written at once", 0, false, 1, Ok(())),
            ("a brief outage", 2, false, 3, Ok(())),
            ("a lasting outage", usize::MAX, false, 3, Err("storage")),
            ("a lost lease", 0, true, 1, Err("lease lost")),
        ];
        for (what, failures, lost, writes, heard) in rows {
            let (store, calls) = CountedStore::new(failures);
            let calls = calls.records;
            let journal = Journal::new(store);
            let intent = crate::record::NewIntent::new(
                what,
                http::Method::POST,
                "http://127.0.0.1:9/payments",
            );
            let lease = journal
                .store()
                .write_ahead(&intent, journal.worker(), Duration::from_secs(60))
                .await
                .expect("written ahead");
            if lost {
                assert!(journal.abandon(what, "by hand").await.expect("abandoned"));
            }
            let result = record(&journal, lease, succeeded.clone()).await;
            let result = result.map_err(|error| match error {
                JournalError::Storage(_) => "storage",
                error if error.is_lease_lost() => "lease lost",
                _ => "another error",
            });
            assert_eq!(result, heard, "{what}");
            assert_eq!(
                calls.load(std::sync::atomic::Ordering::SeqCst),
                writes,
                "{what}: writes of the result"
            );
        }
    }

    /// A kept result is written as soon as the database is back, however many
    /// tries that takes; a lost lease stops it at the first refusal (someone
    /// else owns the intent: more writes would only be refused again), and a
    /// lease already over writes nothing (a resume owns the intent then).
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_kept_result_is_written_once_the_database_is_back_and_only_under_its_lease() {
        use std::sync::atomic::Ordering;
        use std::time::Instant;

        use crate::state::IntentState;
        use counted::CountedStore;
        let succeeded = Outcome::Succeeded {
            status: 201,
            locator: None,
        };
        // Long enough for several kept tries, had the rule allowed them.
        let watched = 3 * (KEPT_PAUSE + KEPT_SPREAD);
        #[rustfmt::skip]
        let rows = [
            // (what, storage failures first, lease, lease lost, writes, state after)
            ("back after two tries", 2, Duration::from_secs(60), false, 3, IntentState::Succeeded),
            ("a lost lease", 0, Duration::from_secs(60), true, 1, IntentState::Abandoned),
            ("a lease already over", 0, Duration::from_millis(1), false, 0, IntentState::InFlight),
        ];
        let started = Instant::now();
        let mut kept = Vec::new();
        for (what, failures, lease_for, lost, writes, state) in rows {
            let (store, calls) = CountedStore::new(failures);
            let journal = Journal::new(store);
            let intent = crate::record::NewIntent::new(
                what,
                http::Method::POST,
                "http://127.0.0.1:9/payments",
            );
            let lease = journal
                .store()
                .write_ahead(&intent, journal.worker(), lease_for)
                .await
                .expect("written ahead");
            if lost {
                assert!(journal.abandon(what, "by hand").await.expect("abandoned"));
            }
            keep(&journal, lease, succeeded.clone());
            kept.push((what, journal, calls.records, writes, state));
        }
        let (_, back, ..) = &kept[0];
        while back
            .get("back after two tries")
            .await
            .expect("read")
            .expect("row")
            .state
            != IntentState::Succeeded
        {
            assert!(started.elapsed() < 10 * watched, "never written");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(watched.saturating_sub(started.elapsed())).await;
        for (what, journal, records, writes, state) in kept {
            assert_eq!(records.load(Ordering::SeqCst), writes, "{what}: writes");
            let row = journal.get(what).await.expect("read").expect("row");
            assert_eq!(row.state, state, "{what}");
        }
    }

    /// A SQLite store that counts the claims and the results written to it,
    /// and fails the first results as a database away would.
    #[cfg(feature = "sqlite")]
    pub(crate) mod counted {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        use std::time::Duration;

        use crate::backlog::Backlog;
        use crate::error::JournalError;
        use crate::listing::ListCursor;
        use crate::record::{Claimed, IntentRecord, Lease, NewIntent, Outcome};
        use crate::sqlite::SqliteStore;
        use crate::state::IntentState;
        use crate::store::{JournalStore, StoreFuture};
        use crate::worker::Worker;

        pub(crate) struct CountedStore {
            inner: SqliteStore,
            calls: Calls,
            failures: AtomicUsize,
        }

        /// How often the store was asked to claim and to record.
        #[derive(Clone, Default)]
        pub(crate) struct Calls {
            pub(crate) claims: Arc<AtomicUsize>,
            pub(crate) records: Arc<AtomicUsize>,
        }

        impl CountedStore {
            /// The store, failing its first `failures` records, and its calls.
            pub(crate) fn new(failures: usize) -> (Self, Calls) {
                let calls = Calls::default();
                let store = Self {
                    inner: SqliteStore::open_in_memory().expect("an in-memory journal"),
                    calls: calls.clone(),
                    failures: AtomicUsize::new(failures),
                };
                (store, calls)
            }
        }

        impl JournalStore for CountedStore {
            fn write_ahead<'a>(
                &'a self,
                intent: &'a NewIntent,
                worker: &'a Worker,
                lease: Duration,
            ) -> StoreFuture<'a, Lease> {
                self.inner.write_ahead(intent, worker, lease)
            }
            fn claim<'a>(
                &'a self,
                worker: &'a Worker,
                lease: Duration,
                limit: usize,
            ) -> StoreFuture<'a, Vec<Claimed>> {
                self.calls.claims.fetch_add(1, Ordering::SeqCst);
                self.inner.claim(worker, lease, limit)
            }
            fn take_over<'a>(
                &'a self,
                key: &'a str,
                worker: &'a Worker,
                lease: Duration,
            ) -> StoreFuture<'a, Option<Claimed>> {
                self.inner.take_over(key, worker, lease)
            }
            fn record<'a>(&'a self, lease: &'a Lease, outcome: &'a Outcome) -> StoreFuture<'a, ()> {
                self.calls.records.fetch_add(1, Ordering::SeqCst);
                let away = self
                    .failures
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                if away {
                    return Box::pin(async { Err(JournalError::storage("connection reset")) });
                }
                self.inner.record(lease, outcome)
            }
            fn get<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<IntentRecord>> {
                self.inner.get(key)
            }
            fn list<'a>(
                &'a self,
                state: IntentState,
                after: Option<&'a ListCursor>,
                limit: usize,
            ) -> StoreFuture<'a, Vec<IntentRecord>> {
                self.inner.list(state, after, limit)
            }
            fn backlog<'a>(&'a self, worker: &'a Worker) -> StoreFuture<'a, Backlog> {
                self.inner.backlog(worker)
            }
            fn abandon<'a>(&'a self, key: &'a str, reason: &'a str) -> StoreFuture<'a, bool> {
                self.inner.abandon(key, reason)
            }
            fn prune<'a>(&'a self, older_than: Duration) -> StoreFuture<'a, u64> {
                self.inner.prune(older_than)
            }
        }
    }
}
