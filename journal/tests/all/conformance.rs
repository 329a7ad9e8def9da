//! The storage contract (the public `conformance` kit), run against both
//! backends (`sqlite::*`, `postgres::*`).

use reqwest_resilience_journal::conformance::*;
use reqwest_resilience_journal::SqliteStore;

crate::on_both_backends!(
    write_ahead_round_trips_every_field,
    a_key_is_journaled_once,
    take_over_takes_only_what_nobody_may_be_sending,
    claims_take_due_unknown_and_expired_leases_only,
    concurrent_claims_are_disjoint,
    lease_lost_after_reclaim_drops_the_late_result,
    lease_lost_after_manual_abandon,
    unknown_gets_a_later_due_time,
    a_run_that_did_nothing_is_given_back,
    terminal_rows_are_never_claimed,
    list_abandon_and_prune,
    a_new_incarnation_takes_back_its_predecessors_leases_at_once,
    backlog_counts_due_leased_and_waiting,
    list_pages_follow_the_cursor,
    results_are_listed_oldest_first_until_acknowledged,
    only_one_of_concurrent_acknowledgements_is_the_first,
);

/// The entry point a third backend calls runs every check (here on SQLite in
/// memory, a fresh store for each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_all_runs_every_check_on_fresh_stores() {
    let mut made = 0;
    run_all(|| {
        made += 1;
        async { SqliteStore::open_in_memory().unwrap() }
    })
    .await;
    assert_eq!(made, 16, "one fresh store per check");
}
