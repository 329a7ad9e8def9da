//! Every choice the layer makes, as pure functions beside their table tests: what to
//! answer for a key someone else holds, whether a finished response is kept, and
//! whether its body can be.

use std::time::{Duration, SystemTime};

use http::StatusCode;

use crate::fingerprint::Fingerprint;
use crate::record::{Completion, Existing, ExistingState, NotStored, StoredResponse};
use crate::refusal::{Refusal, RefusalKind};

/// What is kept when the handler answers 5xx.
///
/// # Default
///
/// [`ServerErrors::Store`], as Stripe does: a handler that failed may have had an
/// effect, and a retry could repeat it. [`ServerErrors::Release`] is for handlers whose
/// 5xx guarantees none (a rolled-back transaction). Either way a `503`, `429`, `425` or
/// `408` frees the key: each says the request was not processed, and asks for a retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ServerErrors {
    /// Keep the 5xx and replay it to retries, like any other response.
    #[default]
    Store,
    /// Free the key: the next request with it executes the handler again.
    Release,
}

/// The answer for a request whose key another request claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The stored response, replayed.
    Replay(StoredResponse),
    /// Refused, with its `Retry-After` when it has one.
    Refuse(Refusal),
}

/// What a 409's `Retry-After` is made from, besides the holder's lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InProgressPace {
    /// The lease a claim is given (so the claim's start is `lease_until - lease`).
    pub lease: Duration,
    /// How long this server's handlers typically run; `None` before the first finished.
    pub typical_run: Option<Duration>,
    /// One more second for every other duplicate, so that duplicates that arrived
    /// together do not come back together.
    pub extra_second: bool,
}

/// The longest `Retry-After` a 409 carries: it is a poll, not a promise (a handler's
/// estimate can be wrong), and it stays well below a client's ceiling for waiting
/// (reqwest-resilience gives up on asks beyond 30 s by default).
pub const MAX_IN_PROGRESS_RETRY_AFTER: Duration = Duration::from_secs(10);

/// A key reused with another payload is refused whatever its state (the draft's 422);
/// otherwise a finished key replays and a key in progress answers 409.
pub fn answer_existing(
    existing: &Existing,
    fingerprint: &Fingerprint,
    now: SystemTime,
    pace: InProgressPace,
) -> Answer {
    if existing.fingerprint != *fingerprint {
        return Answer::Refuse(Refusal::new(RefusalKind::Mismatch, None));
    }
    match &existing.state {
        ExistingState::InProgress { lease_until } => Answer::Refuse(Refusal::new(
            RefusalKind::InProgress,
            Some(in_progress_retry_after(*lease_until, now, pace)),
        )),
        // Its start is not readable: poll at the shortest pace rather than assume it
        // has only just begun (which would send duplicates away for a whole run).
        ExistingState::Uncommitted => Answer::Refuse(Refusal::new(
            RefusalKind::InProgress,
            Some(in_progress_retry_after(
                now + pace.lease,
                now,
                InProgressPace {
                    typical_run: None,
                    ..pace
                },
            )),
        )),
        ExistingState::Completed(Completion::Stored(response)) => Answer::Replay(response.clone()),
        ExistingState::Completed(Completion::NotStored { reason, .. }) => {
            Answer::Refuse(Refusal::new(RefusalKind::NotStored(*reason), None))
        }
    }
}

/// When a duplicate of a key in progress should come back, in whole seconds (what
/// `Retry-After` can say): the time the holder has probably left (its typical run
/// less what it has run; 1 s before any handler finished), plus the spread's second,
/// then clamped to 1 s ..= the lease's rest and [`MAX_IN_PROGRESS_RETRY_AFTER`].
/// The lease bounds a crash, not the wait: a handler that finishes in 2 s must not
/// have its duplicates told to come back in 60 s.
pub fn in_progress_retry_after(
    lease_until: SystemTime,
    now: SystemTime,
    pace: InProgressPace,
) -> Duration {
    let lease_rest = whole_seconds(lease_until.duration_since(now).unwrap_or_default());
    let claimed_at = lease_until.checked_sub(pace.lease).unwrap_or(lease_until);
    let has_run = now.duration_since(claimed_at).unwrap_or_default();
    let left = pace.typical_run.map_or(Duration::from_secs(1), |typical| {
        typical.saturating_sub(has_run)
    });
    let secs = whole_seconds(left) + u64::from(pace.extra_second);
    let most = lease_rest.min(MAX_IN_PROGRESS_RETRY_AFTER.as_secs());
    Duration::from_secs(secs.clamp(1, most.max(1)))
}

/// Rounded up: a sooner retry would only meet the same claim.
fn whole_seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// Whether the handler's response is kept for the key or the key is freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterHandler {
    Keep,
    Release,
}

pub(crate) fn after_handler(status: StatusCode, policy: ServerErrors) -> AfterHandler {
    match (status.is_server_error(), policy) {
        (true, ServerErrors::Release) => AfterHandler::Release,
        _ => keep_unless_not_processed(status),
    }
}

/// Whether a response body can be kept, judged from its size hint before reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyPlan {
    /// Read it whole (it may still prove larger than its hint said).
    Buffer,
    /// Pass it through untouched and keep only that it was not stored.
    PassThrough(NotStored),
}

pub(crate) fn body_plan(lower: u64, upper: Option<u64>, limit: usize) -> BodyPlan {
    match upper {
        _ if lower > limit as u64 => BodyPlan::PassThrough(NotStored::TooLarge),
        // Without an upper bound the body is a stream: reading it to the end before
        // answering would hold back every event an SSE client waits for.
        None => BodyPlan::PassThrough(NotStored::Streamed),
        Some(_) => BodyPlan::Buffer,
    }
}

/// A handler's answer that by its definition was not processed — `408 Request
/// Timeout`, `425 Too Early`, `429 Too Many Requests`, `503 Service Unavailable` (RFC
/// 9110 §15, RFC 8470, RFC 6585) — frees the key whatever [`ServerErrors`] says: kept, it
/// would be replayed to every retry under the key, and a client that retries it as the
/// status asks could never reach the handler again.
fn keep_unless_not_processed(status: StatusCode) -> AfterHandler {
    match status.as_u16() {
        408 | 425 | 429 | 503 => AfterHandler::Release,
        _ => AfterHandler::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    const S: Duration = Duration::from_secs(1);

    fn fp(b: u8) -> Fingerprint {
        Fingerprint::from_bytes(vec![b])
    }

    fn stored() -> StoredResponse {
        StoredResponse {
            status: StatusCode::CREATED,
            headers: vec![],
            body: Bytes::from_static(b"{}"),
        }
    }

    /// A pace with a 60 s lease, no history, no spread.
    fn pace() -> InProgressPace {
        InProgressPace {
            lease: 60 * S,
            typical_run: None,
            extra_second: false,
        }
    }

    #[test]
    fn answers_for_a_claimed_key() {
        let now = SystemTime::UNIX_EPOCH + 1000 * S;
        let in_progress = |until| ExistingState::InProgress { lease_until: until };
        let done = ExistingState::Completed(Completion::Stored(stored()));
        let not_stored = ExistingState::Completed(Completion::NotStored {
            status: StatusCode::OK,
            reason: NotStored::TooLarge,
        });
        let refuse = |kind, after| Answer::Refuse(Refusal::new(kind, after));
        #[rustfmt::skip]
        let cases = [
            ("in progress, same payload: a short poll, not the lease", in_progress(now + 30 * S), fp(1), refuse(RefusalKind::InProgress, Some(S))),
            ("in progress, another payload", in_progress(now + 30 * S), fp(2), refuse(RefusalKind::Mismatch, None)),
            ("uncommitted, start unknown: the shortest poll", ExistingState::Uncommitted, fp(1), refuse(RefusalKind::InProgress, Some(S))),
            ("finished, same payload", done.clone(), fp(1), Answer::Replay(stored())),
            ("finished, another payload", done, fp(2), refuse(RefusalKind::Mismatch, None)),
            ("finished, not stored", not_stored.clone(), fp(1), refuse(RefusalKind::NotStored(NotStored::TooLarge), None)),
            ("not stored, another payload", not_stored, fp(2), refuse(RefusalKind::Mismatch, None)),
        ];
        for (name, state, ours, want) in cases {
            let existing = Existing {
                fingerprint: fp(1),
                state,
            };
            assert_eq!(
                answer_existing(&existing, &ours, now, pace()),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn the_in_progress_retry_after() {
        let now = SystemTime::UNIX_EPOCH + 1000 * S;
        // A claim made `ran` ago under a 60 s lease.
        let claimed = |ran: Duration| now - ran + 60 * S;
        let typical = |t: Duration| InProgressPace {
            typical_run: Some(t),
            ..pace()
        };
        let spread = InProgressPace {
            extra_second: true,
            ..pace()
        };
        #[rustfmt::skip]
        let rows = [
            ("no history: 1 s", claimed(S / 10), pace(), S),
            ("no history, the spread's second: 2 s", claimed(S / 10), spread, 2 * S),
            ("typical 2 s, ran 0.1 s: 1.9 s rounds up", claimed(S / 10), typical(2 * S), 2 * S),
            ("typical 2 s, ran 0.1 s, spread", claimed(S / 10), InProgressPace { extra_second: true, ..typical(2 * S) }, 3 * S),
            ("past its typical run: at least 1 s", claimed(5 * S), typical(2 * S), S),
            ("a long typical run is a poll of at most 10 s", claimed(S), typical(45 * S), 10 * S),
            ("never past the lease's rest", claimed(57 * S + S / 2), typical(65 * S), 3 * S),
            ("a lease that has lapsed: 1 s", now - S, typical(5 * S), S),
            ("the lease's last half second: 1 s", now + S / 2, spread, S),
        ];
        for (name, lease_until, pace, want) in rows {
            assert_eq!(
                in_progress_retry_after(lease_until, now, pace),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn what_is_kept_after_the_handler() {
        #[rustfmt::skip]
        let cases = [
            (200, ServerErrors::Store, AfterHandler::Keep),
            (422, ServerErrors::Release, AfterHandler::Keep),
            (500, ServerErrors::Store, AfterHandler::Keep),
            (500, ServerErrors::Release, AfterHandler::Release),
            (503, ServerErrors::Release, AfterHandler::Release),
            (502, ServerErrors::Store, AfterHandler::Keep),
            (504, ServerErrors::Store, AfterHandler::Keep),
            (409, ServerErrors::Store, AfterHandler::Keep),
            // Not processed, by the status's own definition: freed under either policy.
            (503, ServerErrors::Store, AfterHandler::Release),
            (429, ServerErrors::Store, AfterHandler::Release),
            (429, ServerErrors::Release, AfterHandler::Release),
            (408, ServerErrors::Store, AfterHandler::Release),
            (425, ServerErrors::Store, AfterHandler::Release),
        ];
        for (status, policy, want) in cases {
            let status = StatusCode::from_u16(status).unwrap();
            assert_eq!(after_handler(status, policy), want, "{status} {policy:?}");
        }
    }

    #[test]
    fn body_plans() {
        #[rustfmt::skip]
        let cases = [
            ("exact, under the limit", 10, Some(10), BodyPlan::Buffer),
            ("exact, at the limit", 100, Some(100), BodyPlan::Buffer),
            ("exact, over the limit", 101, Some(101), BodyPlan::PassThrough(NotStored::TooLarge)),
            ("bounded, may fit", 0, Some(1000), BodyPlan::Buffer),
            ("unbounded", 0, None, BodyPlan::PassThrough(NotStored::Streamed)),
            ("unbounded, already too large", 101, None, BodyPlan::PassThrough(NotStored::TooLarge)),
        ];
        for (name, lower, upper, want) in cases {
            assert_eq!(body_plan(lower, upper, 100), want, "{name}");
        }
    }

    /// A claim whose start cannot be read may have begun just now or a typical run
    /// ago: its duplicates poll at the shortest pace whatever the typical run, or a
    /// slow handler's history would send them away for a whole run.
    #[test]
    fn an_uncommitted_claim_is_polled_at_the_shortest_pace_whatever_the_typical_run() {
        let now = SystemTime::UNIX_EPOCH + 1000 * S;
        let existing = Existing {
            fingerprint: fp(1),
            state: ExistingState::Uncommitted,
        };
        for (typical, extra_second, want) in [(20 * S, false, S), (20 * S, true, 2 * S)] {
            let pace = InProgressPace {
                typical_run: Some(typical),
                extra_second,
                ..pace()
            };
            assert_eq!(
                answer_existing(&existing, &fp(1), now, pace),
                Answer::Refuse(Refusal::new(RefusalKind::InProgress, Some(want))),
                "typical run {typical:?}, spread {extra_second}"
            );
        }
    }
}
