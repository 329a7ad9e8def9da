//! The same key means the same intent: a durable send whose key is already
//! journaled joins that intent instead of writing a second one.
//!
//! It takes the intent over when nobody may be sending it (its outcome is
//! unknown, or its sender's lease ended), waits while a live sender holds it,
//! and sends it again unjournaled once it is terminal — the server's
//! deduplication then answers with the stored result. A key journaled for
//! another request (method, URL, body), abandoned, or past the server's key
//! retention is refused: sending it could make a second effect.

use std::time::{Duration, SystemTime};

use crate::error::JournalError;
use crate::journal::Journal;
use crate::record::{IntentRecord, Lease, NewIntent};
use crate::state::IntentState;

/// How often a joining send looks again at an intent a live sender holds.
const POLL: Duration = Duration::from_millis(100);
/// The longest a joining send waits for another sender's lease to end.
const MAX_WAIT: Duration = Duration::from_secs(600);

/// What a send does with the intent already journaled under its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Open: take it over if its sender's lease ended, else wait.
    TakeOverOrWait,
    /// Terminal with an answer: send again without a journal row; the server
    /// replays the stored result.
    SendUnjournaled,
    /// Not the same intent, or no longer safe to send.
    Refuse(&'static str),
}

/// The rule, as a table: see the module docs.
pub(crate) fn step(existing: &IntentRecord, new: &NewIntent, now: SystemTime) -> Step {
    let same = existing.method == new.method
        && existing.url == new.url
        && existing.body == new.body
        && existing.key_on_wire == new.key_on_wire;
    step_for(same, existing.state, existing.retention_end <= now)
}

/// The rule over its facts: whether the journaled intent is the same request,
/// its state, and whether the server's retention of the key has ended.
pub fn step_for(same: bool, state: IntentState, retention_over: bool) -> Step {
    if !same {
        return Step::Refuse("it names another request (method, URL or body)");
    }
    match state {
        IntentState::Abandoned => Step::Refuse("that intent was abandoned"),
        _ if retention_over => Step::Refuse("the server's retention of the key has ended"),
        IntentState::Queued | IntentState::InFlight | IntentState::Unknown => Step::TakeOverOrWait,
        IntentState::Succeeded | IntentState::Failed => Step::SendUnjournaled,
    }
}

/// Joins the intent journaled under `new.key`: the lease taken over, or `None`
/// to send without one.
///
/// # Errors
/// [`JournalError::KeyInUse`] when the rule refuses (this request is another
/// intent: it is not sent); [`JournalError::JoinUnknown`] for anything else — a
/// failing journal, or another sender holding the intent past the longest wait —
/// since that intent may still be sent.
pub(crate) async fn join(
    journal: &Journal,
    new: &NewIntent,
    lease: Duration,
) -> Result<Option<Lease>, JournalError> {
    match join_or_fail(journal, new, lease).await {
        Err(error @ JournalError::KeyInUse { .. }) => Err(error),
        Err(error) => Err(JournalError::join_unknown(&new.key, error)),
        Ok(joined) => Ok(joined),
    }
}

async fn join_or_fail(
    journal: &Journal,
    new: &NewIntent,
    lease: Duration,
) -> Result<Option<Lease>, JournalError> {
    let store = journal.store();
    let started = tokio::time::Instant::now();
    while started.elapsed() < MAX_WAIT {
        let Some(existing) = store.get(&new.key).await? else {
            // Pruned meanwhile: write it ahead afresh.
            return store
                .write_ahead(new, journal.worker(), lease)
                .await
                .map(Some);
        };
        match step(&existing, new, SystemTime::now()) {
            Step::Refuse(why) => return Err(JournalError::key_in_use(&new.key, why)),
            Step::SendUnjournaled => return Ok(None),
            Step::TakeOverOrWait => {
                if let Some(claimed) = store.take_over(&new.key, journal.worker(), lease).await? {
                    return Ok(Some(claimed.lease));
                }
                tokio::time::sleep(POLL).await;
            }
        }
    }
    Err(JournalError::storage(format!(
        "another sender held the intent for over {MAX_WAIT:?}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_intent() -> NewIntent {
        let mut intent = NewIntent::new("pay-1", http::Method::POST, "http://127.0.0.1:9/p");
        intent.body = br#"{"amount":1}"#.to_vec();
        intent
    }

    fn record_of(new: &NewIntent, state: IntentState) -> IntentRecord {
        IntentRecord {
            key: new.key.clone(),
            key_on_wire: new.key_on_wire,
            method: new.method.clone(),
            url: new.url.clone(),
            headers: new.headers.clone(),
            body: new.body.clone(),
            deadline: new.deadline,
            retention_end: SystemTime::now(),
            state,
            owner: None,
            incarnation: None,
            lease_until: None,
            fence: 1,
            runs: 1,
            due_at: None,
            status: None,
            locator: None,
            detail: None,
            created_at: SystemTime::now(),
            updated_at: SystemTime::now(),
        }
    }

    #[test]
    fn the_rule() {
        let now = SystemTime::now();
        let new = new_intent();
        let later = now + Duration::from_secs(3600);
        let earlier = now - Duration::from_secs(1);
        let table: [(IntentState, SystemTime, bool, Step); 9] = [
            (IntentState::InFlight, later, true, Step::TakeOverOrWait),
            (IntentState::Unknown, later, true, Step::TakeOverOrWait),
            // Enqueued in an outbox and not sent yet: the send takes it over.
            (IntentState::Queued, later, true, Step::TakeOverOrWait),
            (IntentState::Succeeded, later, true, Step::SendUnjournaled),
            (IntentState::Failed, later, true, Step::SendUnjournaled),
            (
                IntentState::Abandoned,
                later,
                true,
                Step::Refuse("that intent was abandoned"),
            ),
            (
                IntentState::Unknown,
                earlier,
                true,
                Step::Refuse("the server's retention of the key has ended"),
            ),
            (
                IntentState::Succeeded,
                earlier,
                true,
                Step::Refuse("the server's retention of the key has ended"),
            ),
            (
                IntentState::Unknown,
                later,
                false,
                Step::Refuse("it names another request (method, URL or body)"),
            ),
        ];
        for (state, retention_end, same_body, expected) in table {
            let mut existing = record_of(&new, state);
            existing.retention_end = retention_end;
            if !same_body {
                existing.body = b"{}".to_vec();
            }
            assert_eq!(step(&existing, &new, now), expected, "{state:?}");
        }
    }
}
