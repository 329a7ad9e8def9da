//! The storage contract as a test suite: what [`SqliteStore`](crate::SqliteStore)
//! and [`PostgresStore`](crate::PostgresStore) pass, public so that a third
//! [`JournalStore`] can prove itself (feature `test-util`).
//!
//! Each check takes a fresh, empty store and panics (with `assert!`) when the
//! store breaks the contract: fencing, disjoint claims, expiry, takeover by a new
//! incarnation, retention (prune), the backlog counts, the list cursor, and
//! the delivery of results until they are acknowledged.
//! [`run_all`] runs every check, each on a fresh store from your factory:
//!
//! ```no_run
//! # #[cfg(feature = "sqlite")]
//! # async fn doc() {
//! use reqwest_resilience_journal::{conformance, SqliteStore};
//!
//! conformance::run_all(|| async { SqliteStore::open_in_memory().unwrap() }).await;
//! # }
//! ```
//!
//! The checks wait on real time only where a lease must end (a few tens of
//! milliseconds); leases that must not end are an hour long.

#![allow(clippy::missing_panics_doc)]

mod claims;
mod delivery;
mod fences;
mod listing;
mod write_ahead;

pub use claims::{
    a_new_incarnation_takes_back_its_predecessors_leases_at_once,
    a_run_that_did_nothing_is_given_back, claims_take_due_unknown_and_expired_leases_only,
    concurrent_claims_are_disjoint, take_over_takes_only_what_nobody_may_be_sending,
    terminal_rows_are_never_claimed, unknown_gets_a_later_due_time,
};
pub use delivery::{
    only_one_of_concurrent_acknowledgements_is_the_first,
    results_are_listed_oldest_first_until_acknowledged,
};
pub use fences::{lease_lost_after_manual_abandon, lease_lost_after_reclaim_drops_the_late_result};
pub use listing::{
    backlog_counts_due_leased_and_waiting, list_abandon_and_prune, list_pages_follow_the_cursor,
};
pub use write_ahead::{a_key_is_journaled_once, write_ahead_round_trips_every_field};

use std::future::Future;
use std::time::Duration;

use crate::{JournalStore, NewIntent, Outcome, Worker};

const HOUR: Duration = Duration::from_secs(3600);

/// A POST intent with a JSON body and a 5 s deadline, to a closed local port.
pub fn payment(key: &str) -> NewIntent {
    let mut intent = NewIntent::new(key, http::Method::POST, "http://127.0.0.1:9/payments");
    intent.body = format!(r#"{{"amount":500,"key":"{key}"}}"#).into_bytes();
    intent.deadline = Some(Duration::from_secs(5));
    intent
}

/// A worker named `name` in incarnation `1`.
fn w(name: &str) -> Worker {
    Worker::with_incarnation(name, "1")
}

/// Runs every check, each on a fresh store from `fresh`.
pub async fn run_all<S, F, Fut>(mut fresh: F)
where
    S: JournalStore + Clone,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    write_ahead_round_trips_every_field(fresh().await).await;
    a_key_is_journaled_once(fresh().await).await;
    take_over_takes_only_what_nobody_may_be_sending(fresh().await).await;
    claims_take_due_unknown_and_expired_leases_only(fresh().await).await;
    concurrent_claims_are_disjoint(fresh().await).await;
    lease_lost_after_reclaim_drops_the_late_result(fresh().await).await;
    lease_lost_after_manual_abandon(fresh().await).await;
    unknown_gets_a_later_due_time(fresh().await).await;
    a_run_that_did_nothing_is_given_back(fresh().await).await;
    terminal_rows_are_never_claimed(fresh().await).await;
    list_abandon_and_prune(fresh().await).await;
    a_new_incarnation_takes_back_its_predecessors_leases_at_once(fresh().await).await;
    backlog_counts_due_leased_and_waiting(fresh().await).await;
    list_pages_follow_the_cursor(fresh().await).await;
    results_are_listed_oldest_first_until_acknowledged(fresh().await).await;
    only_one_of_concurrent_acknowledgements_is_the_first(fresh().await).await;
}

fn unknown_now() -> Outcome {
    Outcome::Unknown {
        status: None,
        retry_in: Duration::ZERO,
        reason: "test".into(),
    }
}
