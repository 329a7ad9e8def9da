//! Resume: claim unfinished intents and resend them with the same key and body.
//!
//! A resume claims due `unknown` intents and `in_flight` intents whose lease
//! expired (their worker died), and resends each through the given client: the
//! **same key and the same body bytes**, a fresh request id, a fresh deadline of
//! the stored length — never past the end of the key's retention, never past the
//! lease. Each resend is a new intent to the client's policy, so it deposits into
//! and withdraws from the client's retry budget like any other: a fleet resuming
//! a backlog cannot storm a recovering server.
//!
//! Results: 2xx/3xx → `succeeded`; 409 (in progress) or another unknown outcome →
//! `unknown` again with a later due time; 422 and other definite answers →
//! `failed`; past the retention, or more runs than allowed → `abandoned` without
//! sending. A run that provably did nothing at the server (a gate or the budget
//! held it back, the connection was refused, 408, 429) is given back: due again
//! later, back to `queued` if no run was ever performed, and not counted toward
//! the max runs — an outage never wears a committed intent down to `abandoned`.
//!
//! At start-up, [`Resumer::drain`] resumes until nothing is due; with a stable
//! worker name ([`JournalBuilder::worker_name`](crate::JournalBuilder::worker_name))
//! that includes every lease the previous process of this worker left behind.
//! Each pass's report says what stays open (leased until when, waiting until
//! when) — see [`Backlog`].

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest_resilience::{RequestBuilder, ResilientClient};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::backlog::Backlog;
use crate::error::JournalError;
use crate::journal::Journal;
use crate::record::{Claimed, IntentRecord, Outcome};
use crate::run_outcome::{run_outcome, GaveUp, RunEnd};
use crate::unrecorded;

/// The shortest resend worth making: below it the retention (or lease) is
/// treated as over.
const MIN_RUN: Duration = Duration::from_millis(10);

/// The most passes [`Resumer::drain`] runs.
const MAX_DRAIN_PASSES: usize = 1_000;

/// The shortest pause of the background loop (a lease ending in a moment).
const MIN_PAUSE: Duration = Duration::from_millis(10);

type ResignHook = dyn Fn(RequestBuilder, &IntentRecord) -> RequestBuilder + Send + Sync;
type ResultHook = dyn Fn(&ResumeResult<'_>) + Send + Sync;

/// One resumed intent, as [`Resumer::on_result`] sees it.
#[derive(Debug)]
#[non_exhaustive]
pub struct ResumeResult<'a> {
    /// The row as claimed (before the result was written).
    pub record: &'a IntentRecord,
    /// What the resend (or the decision not to send) came to.
    pub outcome: &'a Outcome,
    /// Why the outcome could not be written, if it could not
    /// ([`JournalError::LeaseLost`]: another worker owns the intent now).
    pub error: Option<&'a JournalError>,
}

/// Resumes a journal's unfinished intents through a client. Build it with
/// [`Journal::resumer`]. Use a client set up like the one that sent the intents
/// (same idempotency key header and format): the key is resent verbatim.
#[derive(Clone)]
#[must_use]
pub struct Resumer {
    journal: Journal,
    client: ResilientClient,
    resign: Option<Arc<ResignHook>>,
    on_result: Option<Arc<ResultHook>>,
    batch: usize,
}

impl std::fmt::Debug for Resumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resumer")
            .field("journal", &self.journal)
            .field("batch", &self.batch)
            .field("on_result", &self.on_result.is_some())
            .finish_non_exhaustive()
    }
}

/// What one resume pass (or several) did, and what stays open after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResumeReport {
    /// What is open after the (last) pass: due, leased until when, waiting
    /// until when. `None` when it could not be counted (logged).
    pub backlog: Option<Backlog>,
    /// Intents claimed.
    pub claimed: usize,
    /// Resent and succeeded.
    pub succeeded: usize,
    /// Resent and got a definite failure (422, …).
    pub failed: usize,
    /// Resent and still unknown (409, timeout, …): due again later.
    pub unknown: usize,
    /// Abandoned without sending (retention over, too many runs).
    pub abandoned: usize,
    /// Held back or refused before anything happened at the server (a gate,
    /// the budget, a refused connection, 408, 429): due again later, the run
    /// not counted toward the max runs.
    pub not_performed: usize,
    /// Results dropped because the lease was taken over meanwhile.
    pub lease_lost: usize,
    /// Results that could not be written (the lease will expire and the intent
    /// is claimed again).
    pub errors: usize,
}

impl ResumeReport {
    /// Intents claimable now after the pass (more than one batch, or due again
    /// at once); 0 when the backlog could not be counted.
    pub fn due(&self) -> u64 {
        self.backlog.map_or(0, |b| b.due)
    }

    /// When the next intent becomes claimable (`None`: nothing is open, or the
    /// backlog could not be counted).
    pub fn next_due(&self) -> Option<SystemTime> {
        self.backlog.and_then(|b| b.next_claimable())
    }

    fn add(&mut self, other: &ResumeReport) {
        self.backlog = other.backlog;
        self.claimed += other.claimed;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.unknown += other.unknown;
        self.abandoned += other.abandoned;
        self.not_performed += other.not_performed;
        self.lease_lost += other.lease_lost;
        self.errors += other.errors;
    }

    fn count(&mut self, outcome: &Outcome, written: Result<(), JournalError>) {
        match written {
            Err(error) if error.is_lease_lost() => self.lease_lost += 1,
            Err(_) => self.errors += 1,
            Ok(()) => match outcome {
                Outcome::Succeeded { .. } => self.succeeded += 1,
                Outcome::Failed { .. } => self.failed += 1,
                Outcome::Unknown { .. } => self.unknown += 1,
                Outcome::Abandoned { .. } => self.abandoned += 1,
                Outcome::NotPerformed { .. } => self.not_performed += 1,
            },
        }
    }
}

impl Journal {
    /// A resumer that resends this journal's unfinished intents through `client`
    /// (batches of 32 by default).
    pub fn resumer(&self, client: &ResilientClient) -> Resumer {
        Resumer {
            journal: self.clone(),
            client: client.clone(),
            resign: None,
            on_result: None,
            batch: 32,
        }
    }

    /// One resume pass of at most `batch` intents, without a re-sign hook.
    ///
    /// # Errors
    /// [`JournalError::Storage`] when the claim fails.
    pub async fn resume(
        &self,
        client: &ResilientClient,
        batch: usize,
    ) -> Result<ResumeReport, JournalError> {
        self.resumer(client).batch(batch).run_once().await
    }
}

impl Resumer {
    /// Adds credentials (and any excluded header) back to each resent request:
    /// the journal never stores them.
    pub fn resign(
        mut self,
        hook: impl Fn(RequestBuilder, &IntentRecord) -> RequestBuilder + Send + Sync + 'static,
    ) -> Self {
        self.resign = Some(Arc::new(hook));
        self
    }

    /// Called once per resumed intent with its outcome, after the outcome was
    /// written (or failed to be). Runs on the resuming task: keep it short —
    /// an async update (tokio-postgres, sqlx) is `tokio::spawn`ed from here.
    ///
    /// This is the fast path, and on its own at most once: a crash after the
    /// result was written and before the application's update loses it. Every
    /// terminal result also stays [unacknowledged](Journal::unacknowledged)
    /// until the application acknowledges it, so a catch-up at start-up finds
    /// what a crash lost: the hook and the catch-up together deliver each
    /// result at least once, and acknowledging inside the application's
    /// transaction (`acknowledge_rusqlite`, `acknowledge_tokio_postgres`, applying only when
    /// it returns `true`) makes it exactly once for the application. See the
    /// README's "Outbox".
    pub fn on_result(mut self, hook: impl Fn(&ResumeResult<'_>) + Send + Sync + 'static) -> Self {
        self.on_result = Some(Arc::new(hook));
        self
    }

    /// How many intents one pass claims and resends concurrently (at least 1).
    pub fn batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// Claims one batch, resends it concurrently, records each result, then
    /// counts what stays open.
    ///
    /// # Errors
    /// [`JournalError::Storage`] when the claim fails; failures to record single
    /// results are counted in the report instead.
    pub async fn run_once(&self) -> Result<ResumeReport, JournalError> {
        let settings = self.journal.settings();
        let claimed = settings
            .store
            .claim(self.journal.worker(), settings.resume_lease, self.batch)
            .await?;
        let mut report = ResumeReport {
            claimed: claimed.len(),
            ..ResumeReport::default()
        };
        let mut runs = JoinSet::new();
        for claim in claimed {
            let this = self.clone();
            runs.spawn(async move { this.resume_one(claim).await });
        }
        while let Some(done) = runs.join_next().await {
            match done {
                Ok((outcome, written)) => report.count(&outcome, written),
                Err(_) => report.errors += 1, // a panicking hook; the lease will expire
            }
        }
        report.backlog = match self.journal.backlog().await {
            Ok(backlog) => Some(backlog),
            Err(error) => {
                tracing::warn!(%error, "journal: backlog not counted after a resume pass");
                None
            }
        };
        Ok(report)
    }

    /// Resumes until nothing is due: passes back to back while intents are
    /// claimable (at most 1,000 passes). Run it at start-up, before
    /// [`spawn`](Self::spawn). Returns the totals, with the backlog after the last
    /// pass: what is still leased to others and what waits for a later due time.
    ///
    /// # Errors
    /// [`JournalError::Storage`] when a claim fails (the totals so far are lost;
    /// what was resent is recorded in the journal).
    pub async fn drain(&self) -> Result<ResumeReport, JournalError> {
        let mut total = ResumeReport::default();
        for _ in 0..MAX_DRAIN_PASSES {
            let pass = self.run_once().await?;
            total.add(&pass);
            if pass.claimed == 0 || pass.due() == 0 {
                break;
            }
        }
        Ok(total)
    }

    async fn resume_one(&self, claim: Claimed) -> (Outcome, Result<(), JournalError>) {
        let outcome = match self.run_plan(&claim) {
            Err(abandon) => abandon,
            Ok(deadline) => self.resend(&claim.record, deadline).await,
        };
        let written = self.journal.store().record(&claim.lease, &outcome).await;
        if let Err(error) = &written {
            tracing::warn!(%error, state = %outcome.state(), "journal: resume result not recorded; kept to write once the database is back");
            if unrecorded::worth_retrying(error) {
                unrecorded::keep(&self.journal, claim.lease.clone(), outcome.clone());
            }
        }
        if let Some(hook) = &self.on_result {
            hook(&ResumeResult {
                record: &claim.record,
                outcome: &outcome,
                error: written.as_ref().err(),
            });
        }
        (outcome, written)
    }

    /// The deadline of this run, or why the intent is abandoned instead.
    fn run_plan(&self, claim: &Claimed) -> Result<Duration, Outcome> {
        let settings = self.journal.settings();
        let record = &claim.record;
        plan_run(
            &RunFacts {
                runs: record.runs,
                deadline: record.deadline,
                retention_left: record
                    .retention_end
                    .duration_since(claim.now)
                    .unwrap_or_default(),
                lease_left: claim
                    .lease
                    .until
                    .duration_since(claim.now)
                    .unwrap_or_default(),
            },
            settings.max_runs,
            settings.lease_margin,
            settings.resume_lease,
        )
    }

    async fn resend(&self, record: &IntentRecord, deadline: Duration) -> Outcome {
        let mut request = self
            .client
            .request(record.method.clone(), record.url.as_str())
            .headers(record.headers.clone())
            .deadline(deadline);
        request = if record.key_on_wire {
            request.idempotency_key(record.key.clone())
        } else {
            request.without_idempotency_key()
        };
        if !record.body.is_empty() {
            request = request.body(record.body.clone());
        }
        if let Some(resign) = &self.resign {
            request = resign(request, record);
        }
        let retry_after = self.journal.settings().unknown_retry_after;
        let end = match request.send().await {
            Ok(response) => {
                return run_outcome(
                    RunEnd::Response(response.status(), response.headers()),
                    record.runs,
                    retry_after,
                )
            }
            Err(error) => GaveUp {
                invalid_request: error.is_invalid_request(),
                outcome_unknown: error.is_outcome_unknown(),
                status: error.last_status(),
                wait_hint: error
                    .gate_refusal()
                    .and_then(|refusal| refusal.retry_after())
                    .or(error.retry_after()),
                reason: if error.is_invalid_request() {
                    error.to_string()
                } else {
                    error.reason().as_str().to_owned()
                },
            },
        };
        run_outcome(RunEnd::GaveUp(end), record.runs, retry_after)
    }

    /// Runs passes in the background until stopped: back to back while
    /// intents are due, else at the next due time, when woken
    /// ([`Journal::wake_relays`], here or — PostgreSQL — in another process),
    /// or after `interval`, whichever comes first. As an outbox relay,
    /// `interval` bounds how late an enqueue nobody woke it for is sent.
    pub fn spawn(self, interval: Duration) -> ResumeHandle {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let wake = Arc::clone(&self.journal.settings().relay_wake.local);
            // Other processes' outbox commits wake this loop too, where the store can tell.
            let _listening = self.journal.store().listen(Arc::clone(&wake));
            let mut total = ResumeReport::default();
            while !*stopped.borrow() {
                let pause = match self.run_once().await {
                    Ok(report) => {
                        total.add(&report);
                        pause_after(&report, interval)
                    }
                    Err(error) => {
                        tracing::warn!(%error, "journal: resume pass failed");
                        interval
                    }
                };
                if !pause.is_zero() {
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = wake.notified() => {}
                        _ = stopped.changed() => {}
                    }
                }
            }
            total
        });
        ResumeHandle { stop, task }
    }
}

/// What a resumed run's plan is made of, as the claim left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunFacts {
    /// The intent's runs counting this one.
    pub runs: i64,
    /// The deadline length of one run, if the intent has one.
    pub deadline: Option<Duration>,
    /// How long the server keeps the key from the claim on.
    pub retention_left: Duration,
    /// How long the claim's lease lasts from the claim on.
    pub lease_left: Duration,
}

/// The deadline of a resumed run, or the outcome it is abandoned with: never
/// more than `max_runs` runs, nothing past the key's retention, and the run
/// ended before its lease (keeping its margin, at most half of it, free), so
/// nobody claims the intent while it may be on the wire.
pub fn plan_run(
    facts: &RunFacts,
    max_runs: i64,
    lease_margin: Duration,
    resume_lease: Duration,
) -> Result<Duration, Outcome> {
    if facts.runs > max_runs {
        return Err(Outcome::Abandoned {
            reason: format!("ran {} times (max {})", facts.runs - 1, max_runs),
        });
    }
    if facts.retention_left < MIN_RUN {
        return Err(Outcome::Abandoned {
            reason: "the server's key retention has ended; reconcile by hand".to_owned(),
        });
    }
    let kept_free = lease_margin.min(resume_lease / 2);
    let lease_left = facts.lease_left.saturating_sub(kept_free);
    let deadline = facts
        .deadline
        .unwrap_or(Duration::MAX)
        .min(facts.retention_left)
        .min(lease_left);
    Ok(deadline.max(MIN_RUN))
}

/// How long the background loop waits after a pass: not at all while intents
/// are due, else until the next one is (by the store's clock), at most
/// `interval`, at least [`MIN_PAUSE`].
fn pause_after(report: &ResumeReport, interval: Duration) -> Duration {
    let Some(backlog) = report.backlog else {
        return interval;
    };
    if backlog.due > 0 {
        return Duration::ZERO;
    }
    match backlog.next_claimable() {
        Some(next) => next
            .duration_since(backlog.now)
            .unwrap_or_default()
            .clamp(MIN_PAUSE, interval.max(MIN_PAUSE)),
        None => interval,
    }
}

/// Stops a background resume loop.
#[derive(Debug)]
pub struct ResumeHandle {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<ResumeReport>,
}

impl ResumeHandle {
    /// Stops after the pass in progress and returns the totals of all passes.
    pub async fn stop(self) -> ResumeReport {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(due: u64, next_in: Option<Duration>) -> ResumeReport {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        ResumeReport {
            backlog: Some(Backlog {
                due,
                leased: 0,
                leased_until: None,
                waiting: u64::from(next_in.is_some()),
                next_due: next_in.map(|d| now + d),
                now,
            }),
            ..ResumeReport::default()
        }
    }

    fn facts(runs: i64, deadline: Option<u64>, retention_left: u64, lease_left: u64) -> RunFacts {
        RunFacts {
            runs,
            deadline: deadline.map(Duration::from_secs),
            retention_left: Duration::from_secs(retention_left),
            lease_left: Duration::from_secs(lease_left),
        }
    }

    /// The run plan at its boundaries: `max_runs` 3, a 300 s resume lease, a 30 s
    /// margin. A resumed run must end before its lease does with the margin free
    /// (the time a response takes to be recorded, and the clocks' skew), or another
    /// relay may claim the intent while this one is still on the wire.
    #[test]
    fn a_resumed_run_keeps_its_lease_margin_free() {
        let s = Duration::from_secs;
        let plan = |f: RunFacts| plan_run(&f, 3, s(30), s(300));
        #[rustfmt::skip]
        let cases = [
            ("cut to the lease less its margin", facts(1, Some(600), 86_400, 300), Some(s(270))),
            ("a shorter deadline is kept",       facts(1, Some(60), 86_400, 300),  Some(s(60))),
            ("a deadline right at the margin",   facts(1, Some(270), 86_400, 300), Some(s(270))),
            ("one second past it is cut",        facts(1, Some(271), 86_400, 300), Some(s(270))),
            ("no deadline: the lease decides",   facts(1, None, 86_400, 300),      Some(s(270))),
            ("the retention decides",            facts(1, Some(600), 100, 300),    Some(s(100))),
            ("the last run allowed",             facts(3, Some(60), 86_400, 300),  Some(s(60))),
            ("one run too many",                 facts(4, Some(60), 86_400, 300),  None),
            ("a lease shorter than its margin",  facts(1, Some(60), 86_400, 20),   Some(MIN_RUN)),
        ];
        for (name, facts, want) in cases {
            assert_eq!(plan(facts).ok(), want, "{name}");
        }
        // A margin larger than half the lease keeps half the lease free.
        assert_eq!(
            plan_run(&facts(1, Some(600), 86_400, 300), 3, s(200), s(300)),
            Ok(s(150))
        );
        // The retention's end abandons the intent, at the boundary too.
        let retention = |left| RunFacts {
            retention_left: left,
            ..facts(1, Some(60), 0, 300)
        };
        assert!(plan_run(
            &retention(MIN_RUN - Duration::from_millis(1)),
            3,
            s(30),
            s(300)
        )
        .is_err());
        assert_eq!(plan_run(&retention(MIN_RUN), 3, s(30), s(300)), Ok(MIN_RUN));
        // Over the whole range of leases: the run ends with the margin free.
        for lease_left in (40..=600).step_by(7) {
            let deadline = plan(facts(1, Some(3_600), 86_400, lease_left)).expect("planned");
            assert!(
                deadline + s(30) <= s(lease_left),
                "lease {lease_left} s: a run of {deadline:?} leaves less than the margin"
            );
        }
    }

    /// A report with every count different, so that a count added to the
    /// wrong total, or not at all, shows.
    fn counts(base: usize) -> ResumeReport {
        ResumeReport {
            claimed: base + 1,
            succeeded: base + 2,
            failed: base + 3,
            unknown: base + 4,
            abandoned: base + 5,
            not_performed: base + 6,
            lease_lost: base + 7,
            errors: base + 8,
            ..report(0, None)
        }
    }

    /// The totals of several passes: each count summed, the backlog the last
    /// pass's (what is open now, not what was open before).
    #[test]
    fn totals_sum_each_count_and_keep_the_last_backlog() {
        let mut total = counts(10);
        total.backlog = None;
        let pass = ResumeReport {
            backlog: report(7, None).backlog,
            ..counts(100)
        };
        total.add(&pass);
        let want = ResumeReport {
            claimed: 112,
            succeeded: 114,
            failed: 116,
            unknown: 118,
            abandoned: 120,
            not_performed: 122,
            lease_lost: 124,
            errors: 126,
            backlog: report(7, None).backlog,
        };
        assert_eq!(total, want);
        assert_eq!(total.due(), 7);
    }

    /// Each resumed intent counts once, under what its result came to, or
    /// under why the result was not written.
    #[test]
    fn each_result_counts_under_its_outcome_or_why_it_was_not_written() {
        let s = Duration::from_secs;
        let reason = || "why".to_owned();
        #[rustfmt::skip]
        type Count = fn(&ResumeReport) -> usize;
        let rows: [(Outcome, Result<(), JournalError>, Count); 7] = [
            (
                Outcome::Succeeded {
                    status: 201,
                    locator: None,
                },
                Ok(()),
                |r| r.succeeded,
            ),
            (
                Outcome::Failed {
                    status: Some(422),
                    reason: reason(),
                },
                Ok(()),
                |r| r.failed,
            ),
            (
                Outcome::Unknown {
                    status: None,
                    retry_in: s(30),
                    reason: reason(),
                },
                Ok(()),
                |r| r.unknown,
            ),
            (Outcome::Abandoned { reason: reason() }, Ok(()), |r| {
                r.abandoned
            }),
            (
                Outcome::NotPerformed {
                    queued: false,
                    status: None,
                    retry_in: s(1),
                    reason: reason(),
                },
                Ok(()),
                |r| r.not_performed,
            ),
            (
                Outcome::Abandoned { reason: reason() },
                Err(JournalError::lease_lost("pay-1", 2)),
                |r| r.lease_lost,
            ),
            (
                Outcome::Abandoned { reason: reason() },
                Err(JournalError::storage("disk I/O error")),
                |r| r.errors,
            ),
        ];
        for (outcome, written, field) in rows {
            let what = format!("{outcome:?} written {written:?}");
            let mut report = counts(0);
            let before = report;
            report.count(&outcome, written);
            assert_eq!(field(&report), field(&before) + 1, "{what}");
            // Nothing else moved: the sum of all counts grew by one.
            let sum = |r: &ResumeReport| {
                r.claimed
                    + r.succeeded
                    + r.failed
                    + r.unknown
                    + r.abandoned
                    + r.not_performed
                    + r.lease_lost
                    + r.errors
            };
            assert_eq!(sum(&report), sum(&before) + 1, "{what}");
        }
    }

    /// What stays open, read from the backlog: due now and when next, or
    /// nothing known when it could not be counted.
    #[test]
    fn a_report_says_what_is_due_and_when_next() {
        let due_now = report(3, None);
        assert_eq!(due_now.due(), 3);
        let backlog = due_now.backlog.expect("counted");
        assert_eq!(due_now.next_due(), Some(backlog.now));
        let later = report(0, Some(Duration::from_secs(90)));
        assert_eq!(later.due(), 0);
        assert_eq!(
            later.next_due(),
            Some(later.backlog.expect("counted").now + Duration::from_secs(90))
        );
        let uncounted = ResumeReport::default();
        assert_eq!((uncounted.due(), uncounted.next_due()), (0, None));
    }

    /// The resumer's `Debug` names what an operator needs to tell resumers
    /// apart in a log: the journal, the batch, whether a result hook is set.
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_resumer_debugs_as_its_journal_batch_and_hook() {
        let journal = Journal::new(crate::sqlite::SqliteStore::open_in_memory().expect("journal"));
        let client = ResilientClient::new();
        let shown = format!("{:?}", journal.resumer(&client).batch(7));
        assert!(shown.starts_with("Resumer {"), "{shown}");
        assert!(shown.contains("journal: Journal {"), "{shown}");
        assert!(shown.contains("batch: 7"), "{shown}");
        assert!(shown.contains("on_result: false"), "{shown}");
        let hooked = format!("{:?}", journal.resumer(&client).on_result(|_| {}));
        assert!(hooked.contains("on_result: true"), "{hooked}");
    }

    /// A journal whose worker is a restarted process of the worker that wrote
    /// `keys` ahead: its claims take them back at once. With one run allowed,
    /// each claimed intent is abandoned without a send.
    #[cfg(feature = "sqlite")]
    async fn taken_back_at_once(
        keys: &[&str],
    ) -> (Journal, crate::unrecorded::tests::counted::Calls) {
        use crate::store::JournalStore;
        use crate::unrecorded::tests::counted::CountedStore;
        let (store, calls) = CountedStore::new(0);
        let dead = crate::worker::Worker::with_incarnation("relay", "before the crash");
        for key in keys {
            let intent = crate::record::NewIntent::new(
                *key,
                http::Method::POST,
                "http://127.0.0.1:9/payments",
            );
            store
                .write_ahead(&intent, &dead, Duration::from_secs(300))
                .await
                .expect("written ahead");
        }
        let journal = Journal::builder(store)
            .worker(crate::worker::Worker::with_incarnation(
                "relay",
                "restarted",
            ))
            .max_runs(1)
            .build()
            .expect("journal");
        (journal, calls)
    }

    /// A drain takes one pass per batch while intents stay due, and no pass
    /// more once the last one left nothing due.
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_drain_passes_while_intents_are_due_and_stops_when_none_are() {
        use std::sync::atomic::Ordering;
        let (journal, calls) = taken_back_at_once(&["pay-1", "pay-2"]).await;
        let totals = journal
            .resumer(&ResilientClient::new())
            .batch(1)
            .drain()
            .await
            .expect("drained");
        assert_eq!((totals.claimed, totals.abandoned), (2, 2));
        assert_eq!(totals.due(), 0);
        assert_eq!(
            calls.claims.load(Ordering::SeqCst),
            2,
            "one pass per intent"
        );
    }

    /// A result hook that panics loses nothing but its own call: the result is
    /// written, and the pass counts the intent among its errors.
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_panicking_result_hook_counts_as_an_error() {
        let (journal, _) = taken_back_at_once(&["pay-1"]).await;
        let report = journal
            .resumer(&ResilientClient::new())
            .on_result(|_| panic!("the application's hook failed"))
            .run_once()
            .await
            .expect("one pass");
        assert_eq!((report.claimed, report.errors, report.abandoned), (1, 1, 0));
        let row = journal
            .get("pay-1")
            .await
            .expect("read")
            .expect("journaled");
        assert_eq!(row.state, crate::state::IntentState::Abandoned);
    }

    /// With nothing open, the background loop makes one pass and then waits for
    /// its interval (or a wake, or the stop): it never spins on the store.
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn an_idle_background_loop_waits_instead_of_spinning() {
        use std::sync::atomic::Ordering;
        let (journal, calls) = taken_back_at_once(&[]).await;
        let handle = journal
            .resumer(&ResilientClient::new())
            .spawn(Duration::from_secs(60));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let totals = handle.stop().await;
        assert_eq!(totals.claimed, 0);
        assert_eq!(
            calls.claims.load(Ordering::SeqCst),
            1,
            "one pass, then a wait"
        );
    }

    #[test]
    fn the_loop_waits_until_the_next_due_time_at_most_the_interval() {
        let interval = Duration::from_secs(30);
        let s = Duration::from_secs;
        assert_eq!(pause_after(&report(3, None), interval), Duration::ZERO);
        assert_eq!(pause_after(&report(0, Some(s(2))), interval), s(2));
        assert_eq!(pause_after(&report(0, Some(s(90))), interval), interval);
        assert_eq!(
            pause_after(&report(0, Some(Duration::ZERO)), interval),
            MIN_PAUSE
        );
        assert_eq!(pause_after(&report(0, None), interval), interval);
        assert_eq!(pause_after(&ResumeReport::default(), interval), interval);
    }

    /// The run plan at each of its edges: the last allowed run and the one after
    /// it, the retention's shortest worthwhile rest and just under it, and the
    /// part of the lease kept free (the margin, or half the lease when the margin
    /// is longer) so that the run ends before anybody else may claim the intent.
    #[test]
    fn a_run_keeps_within_its_runs_its_retention_and_its_lease_less_the_margin() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        let facts = |runs, deadline, retention_left, lease_left| RunFacts {
            runs,
            deadline,
            retention_left,
            lease_left,
        };
        let abandoned = None;
        #[rustfmt::skip]
        let rows = [
            // (what, facts, max runs, lease margin, resume lease, the run's deadline)
            ("first run", facts(1, Some(s(5)), s(3600), s(60)), 3, s(5), s(60), Some(s(5))),
            ("the last allowed run", facts(3, Some(s(5)), s(3600), s(60)), 3, s(5), s(60), Some(s(5))),
            ("one run too many", facts(4, Some(s(5)), s(3600), s(60)), 3, s(5), s(60), abandoned),
            ("the retention's shortest worthwhile rest", facts(1, None, MIN_RUN, s(60)), 3, s(5), s(60), Some(MIN_RUN)),
            ("just under it", facts(1, None, MIN_RUN - ms(1), s(60)), 3, s(5), s(60), abandoned),
            ("cut to the retention", facts(1, Some(s(5)), s(2), s(60)), 3, s(5), s(60), Some(s(2))),
            ("no deadline: the lease less the margin", facts(1, None, s(3600), s(60)), 3, s(5), s(60), Some(s(55))),
            ("a margin longer than half the lease keeps half free", facts(1, None, s(3600), s(20)), 3, s(30), s(20), Some(s(10))),
            ("a lease already spent: the shortest run", facts(1, Some(s(5)), s(3600), s(3)), 3, s(5), s(60), Some(MIN_RUN)),
        ];
        for (what, facts, max_runs, margin, lease, want) in rows {
            let plan = plan_run(&facts, max_runs, margin, lease);
            match want {
                Some(deadline) => assert_eq!(plan.ok(), Some(deadline), "{what}"),
                None => assert!(
                    matches!(plan, Err(Outcome::Abandoned { .. })),
                    "{what}: {plan:?}"
                ),
            }
        }
    }
}
