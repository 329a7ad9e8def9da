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
/// [`ServerErrors::Store`], as Stripe does: once the handler started, it may have
/// had an effect before failing, and executing the retry could repeat it. Choose
/// [`ServerErrors::Release`] for handlers whose 5xx guarantees no effect (a database
/// transaction rolled back), so a retry executes again.
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
pub(crate) enum Answer {
    Replay(StoredResponse),
    Refuse(Refusal),
}

/// A key reused with another payload is refused whatever its state (the draft's 422);
/// otherwise a finished key replays and a key in progress answers 409.
pub(crate) fn answer_existing(
    existing: &Existing,
    fingerprint: &Fingerprint,
    now: SystemTime,
) -> Answer {
    if existing.fingerprint != *fingerprint {
        return Answer::Refuse(Refusal::new(RefusalKind::Mismatch, None));
    }
    match &existing.state {
        ExistingState::InProgress { lease_until } => Answer::Refuse(Refusal::new(
            RefusalKind::InProgress,
            Some(retry_after(*lease_until, now)),
        )),
        ExistingState::Completed(Completion::Stored(response)) => Answer::Replay(response.clone()),
        ExistingState::Completed(Completion::NotStored { reason, .. }) => {
            Answer::Refuse(Refusal::new(RefusalKind::NotStored(*reason), None))
        }
    }
}

/// Until the holder's lease lapses, in whole seconds (what `Retry-After` can say),
/// at least one: a sooner retry would only meet the same claim.
pub(crate) fn retry_after(lease_until: SystemTime, now: SystemTime) -> Duration {
    let left = lease_until.duration_since(now).unwrap_or(Duration::ZERO);
    let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    Duration::from_secs(secs.max(1))
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
        _ => AfterHandler::Keep,
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
            ("in progress, same payload", in_progress(now + 30 * S), fp(1), refuse(RefusalKind::InProgress, Some(30 * S))),
            ("in progress, lease ends in 0.2 s", in_progress(now + S / 5), fp(1), refuse(RefusalKind::InProgress, Some(S))),
            ("in progress, 29.5 s rounds up", in_progress(now + 29 * S + S / 2), fp(1), refuse(RefusalKind::InProgress, Some(30 * S))),
            ("in progress, another payload", in_progress(now + 30 * S), fp(2), refuse(RefusalKind::Mismatch, None)),
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
            assert_eq!(answer_existing(&existing, &ours, now), want, "{name}");
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
}
