//! One rule for a result the journal could not record.
//!
//! The send is over and its result is known to the caller; only the journal's
//! copy is missing. The terminal write is tried again a few times (a brief
//! outage, a reconnect) before giving up. If it still fails, the row stays
//! `in_flight` until its lease ends, and a resume then sends the intent again
//! under the same key and body — the server replays its stored answer, and the
//! journal records that. The caller is not asked to do anything: a response it
//! holds stays its answer, and an error keeps saying what it said, plus
//! "outcome unknown" (the journal may still send the intent).

use std::time::Duration;

use crate::error::JournalError;
use crate::journal::Journal;
use crate::record::{Lease, Outcome};

/// The pauses before each further attempt at the terminal write.
const PAUSES: [Duration; 2] = [Duration::from_millis(50), Duration::from_millis(250)];

/// Whether another attempt at the write can succeed: a storage failure or a
/// timeout may pass; a lost lease (someone else owns the intent now) will not.
pub(crate) fn worth_retrying(error: &JournalError) -> bool {
    matches!(
        error,
        JournalError::Storage(_) | JournalError::Timeout { .. }
    )
}

/// Records `outcome` under `lease`, trying again after each of [`PAUSES`] while
/// the failure is [worth retrying](worth_retrying).
///
/// # Errors
/// The last failure: the result stays unrecorded (see the module docs).
pub(crate) async fn record(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
