//! Delivery: every terminal result reaches the application at least once, until
//! the application acknowledges it.
//!
//! [`Resumer::on_result`](crate::Resumer::on_result) is the fast path: it runs
//! once, right after the result was written. A crash between that write and the
//! application's own update ("mark the order paid") would lose the result if
//! the hook were the only path. So every terminal result (`succeeded`,
//! `failed`, `abandoned`) stays *unacknowledged* in the journal until the
//! application says it applied it, and [`Journal::unacknowledged`] finds exactly
//! those — oldest first, a bounded page — without walking the history.
//!
//! The acknowledgement is what makes "applied" durable, so it belongs in the
//! same transaction as the update it stands for: `acknowledge_rusqlite`,
//! `acknowledge_tokio_postgres` and `acknowledge_sqlx` run it inside the
//! application's own transaction on the journal's database. They return `true`
//! only to the first acknowledgement: apply the result only then, commit both
//! together, and the result is applied exactly once from the application's point
//! of view, whichever path (the hook, a catch-up, a second process) gets there
//! first. [`Journal::acknowledge`], on the journal's own connection, cannot
//! commit with the application's update: between the two a crash either loses
//! the update (acknowledged first) or applies it twice (acknowledged after);
//! use it when the application's update is idempotent or lives elsewhere.
//!
//! Results recorded before the schema had acknowledgements (version 4) count as
//! acknowledged. Pruning deletes terminal rows whether acknowledged or not:
//! keep its window longer than the time a catch-up may take to run.

mod statement;

#[cfg(feature = "sqlite")]
pub(crate) mod rusqlite;
#[cfg(feature = "sqlx")]
mod sqlx;
#[cfg(feature = "postgres")]
mod tokio_postgres;

#[cfg(feature = "postgres")]
pub(crate) use statement::TERMINAL;
#[cfg(feature = "postgres")]
pub(crate) use statement::{POSTGRES_ACKNOWLEDGE, POSTGRES_UNACKNOWLEDGED};

use crate::error::JournalError;
use crate::journal::Journal;
use crate::record::IntentRecord;
use crate::state::IntentState;

impl Journal {
    /// Up to `limit` terminal results (`succeeded`, `failed`, `abandoned`) not
    /// acknowledged yet, oldest result first: what the application may not have
    /// applied. Call it at start-up, and again after each page is applied,
    /// until it is empty: together with
    /// [`Resumer::on_result`](crate::Resumer::on_result) every result reaches
    /// the application at least once (see the module docs of
    /// [`acknowledge`](Self::acknowledge)). Durable sends' results are listed
    /// too: their caller got the answer from `send()`, but after a crash the
    /// journal may have finished them alone.
    ///
    /// # Errors
    /// [`JournalError::Storage`] or [`JournalError::InvalidRecord`];
    /// [`JournalError::Unsupported`] for a store that does not record
    /// acknowledgements.
    pub async fn unacknowledged(&self, limit: usize) -> Result<Vec<IntentRecord>, JournalError> {
        self.store().unacknowledged(limit).await
    }

    /// Acknowledges the result of intent `key` on the journal's own
    /// connection: it is no longer [unacknowledged](Self::unacknowledged).
    /// Returns `true` when this call acknowledged it, `false` when it already
    /// was (acknowledging is idempotent).
    ///
    /// This commits on its own, apart from the application's update: to apply
    /// a result exactly once, acknowledge inside the application's transaction
    /// instead (`acknowledge_rusqlite`, `acknowledge_tokio_postgres`,
    /// `acknowledge_sqlx`) and apply only when it returns `true`.
    ///
    /// # Errors
    /// [`JournalError::UnknownKey`] when no intent has this key (never
    /// journaled, or pruned); [`JournalError::NotTerminal`] when it has no
    /// result yet; [`JournalError::Storage`]; [`JournalError::Unsupported`] for
    /// a store that does not record acknowledgements.
    pub async fn acknowledge(&self, key: &str) -> Result<bool, JournalError> {
        self.store().acknowledge(key).await
    }
}

/// The one rule every acknowledgement ends with, whichever driver ran it:
/// `first` when its update acknowledged the row, else where the row stood
/// (`None`: no such key) as seen by the same statement or transaction. A
/// terminal row that the update did not change was acknowledged already (by
/// this process or a concurrent one that committed first).
pub fn settle(key: &str, first: bool, state: Option<IntentState>) -> Result<bool, JournalError> {
    match state {
        _ if first => Ok(true),
        None => Err(JournalError::unknown_key(key)),
        Some(state) if state.is_terminal() => Ok(false),
        Some(state) => Err(JournalError::not_terminal(key, state)),
    }
}

/// [`settle`] for a state read back as its stored name.
pub(crate) fn settle_stored(
    key: &str,
    first: bool,
    state: Option<&str>,
) -> Result<bool, JournalError> {
    let state = state
        .map(str::parse::<IntentState>)
        .transpose()
        .map_err(|error| JournalError::InvalidRecord(error.to_string()))?;
    settle(key, first, state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use IntentState::*;

    #[test]
    fn the_first_acknowledgement_applies_later_ones_do_not_open_ones_are_refused() {
        let table: [(bool, Option<IntentState>, Result<bool, &str>); 9] = [
            (true, Some(Succeeded), Ok(true)),
            (false, Some(Succeeded), Ok(false)),
            (false, Some(Failed), Ok(false)),
            (false, Some(Abandoned), Ok(false)),
            (false, Some(Queued), Err("it is queued")),
            (false, Some(InFlight), Err("it is in_flight")),
            (false, Some(Unknown), Err("it is unknown")),
            (false, None, Err("no intent with key pay-1842")),
            // A row the update changed was terminal: `first` decides alone.
            (true, None, Ok(true)),
        ];
        for (first, state, expected) in table {
            let got = settle("pay-1842-x", first, state);
            match (&got, expected) {
                (Ok(got), Ok(expected)) => assert_eq!(*got, expected, "{first} {state:?}"),
                (Err(error), Err(says)) => {
                    assert!(error.to_string().contains(says), "{error}")
                }
                _ => panic!("{first} {state:?}: {got:?}"),
            }
        }
    }

    #[test]
    fn a_stored_state_of_no_known_name_is_an_invalid_record() {
        let error = settle_stored("k", false, Some("done")).unwrap_err();
        assert!(matches!(error, JournalError::InvalidRecord(_)), "{error}");
        assert!(settle_stored("k", false, Some("failed")).is_ok_and(|first| !first));
    }

    /// On the journal's own connection: a result is listed until it is
    /// acknowledged, the first acknowledgement says so and a second does not,
    /// and an open or unknown intent cannot be acknowledged.
    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn a_result_is_listed_until_its_first_acknowledgement() {
        use std::time::Duration;

        use crate::record::{NewIntent, Outcome};
        let journal = Journal::new(crate::sqlite::SqliteStore::open_in_memory().expect("journal"));
        let lease = |key: &'static str| {
            let journal = journal.clone();
            async move {
                let intent = NewIntent::new(key, http::Method::PUT, "http://127.0.0.1:9/p");
                journal
                    .store()
                    .write_ahead(&intent, journal.worker(), Duration::from_secs(60))
                    .await
                    .expect("written ahead")
            }
        };
        let paid = lease("pay-1").await;
        let done = Outcome::Succeeded {
            status: 201,
            locator: None,
        };
        journal
            .store()
            .record(&paid, &done)
            .await
            .expect("recorded");
        lease("pay-2").await;
        let listed = || async {
            journal
                .unacknowledged(10)
                .await
                .expect("listed")
                .into_iter()
                .map(|record| record.key)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            listed().await,
            ["pay-1"],
            "only the result, not the open one"
        );
        assert!(journal.acknowledge("pay-1").await.expect("acknowledged"));
        assert!(listed().await.is_empty(), "acknowledged, no longer listed");
        assert!(
            !journal.acknowledge("pay-1").await.expect("acknowledged"),
            "a second acknowledgement is not the first"
        );
        let open = journal.acknowledge("pay-2").await.unwrap_err();
        assert!(matches!(open, JournalError::NotTerminal { .. }), "{open}");
        let never = journal.acknowledge("never").await.unwrap_err();
        assert!(matches!(never, JournalError::UnknownKey { .. }), "{never}");
    }
}
