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

mod delivery;

pub use delivery::{
    only_one_of_concurrent_acknowledgements_is_the_first,
    results_are_listed_oldest_first_until_acknowledged,
};

use std::collections::HashSet;
use std::future::Future;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue};

use crate::{IntentRecord, IntentState, JournalStore, ListCursor, NewIntent, Outcome, Worker};

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

/// A check of the storage contract (see the [module docs](self)).
pub async fn write_ahead_round_trips_every_field(store: impl JournalStore) {
    let mut intent = payment("key-round-trip");
    intent.body = vec![0, 159, 146, 150, b'{', 255];
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.append("x-tag", HeaderValue::from_static("a"));
    headers.append("x-tag", HeaderValue::from_static("b"));
    intent.headers = headers.clone();
    intent.retention = HOUR;
    let before = SystemTime::now() - Duration::from_secs(5);
    let lease = store.write_ahead(&intent, &w("w1"), HOUR).await.unwrap();
    assert_eq!((lease.fence, lease.owner.as_str()), (1, "w1"));

    let row = store.get("key-round-trip").await.unwrap().expect("row");
    assert_eq!(row.state, IntentState::InFlight);
    assert_eq!(row.method, http::Method::POST);
    assert_eq!(row.url, intent.url);
    assert_eq!(row.headers, headers);
    assert_eq!(row.body, intent.body, "exact body bytes");
    assert_eq!(row.deadline, Some(Duration::from_secs(5)));
    assert!(row.key_on_wire);
    assert_eq!((row.fence, row.runs), (1, 1));
    assert_eq!(row.owner.as_deref(), Some("w1"));
    assert!(row.retention_end > before + HOUR - Duration::from_secs(1));
    assert!(row.retention_end < SystemTime::now() + HOUR + Duration::from_secs(5));
    assert!(row.lease_until.is_some());
    assert!(store.get("missing").await.unwrap().is_none());
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn a_key_is_journaled_once(store: impl JournalStore) {
    store
        .write_ahead(&payment("dup"), &w("w1"), HOUR)
        .await
        .unwrap();
    let error = store
        .write_ahead(&payment("dup"), &w("w2"), HOUR)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("already journaled"), "{error}");
    let row = store.get("dup").await.unwrap().unwrap();
    assert_eq!(row.owner.as_deref(), Some("w1"), "the first write stays");
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn take_over_takes_only_what_nobody_may_be_sending(store: impl JournalStore) {
    let live = store
        .write_ahead(&payment("live"), &w("w1"), HOUR)
        .await
        .unwrap();
    assert!(
        store
            .take_over("live", &w("w2"), HOUR)
            .await
            .unwrap()
            .is_none(),
        "a live lease is not taken over"
    );
    // Unknown, even before it is due: its caller is sending it again.
    let mut later = unknown_now();
    if let Outcome::Unknown { retry_in, .. } = &mut later {
        *retry_in = HOUR;
    }
    store.record(&live, &later).await.unwrap();
    let taken = store
        .take_over("live", &w("w2"), HOUR)
        .await
        .unwrap()
        .expect("an unknown intent is taken over");
    assert_eq!((taken.record.fence, taken.record.runs), (2, 2));
    assert_eq!(taken.record.state, IntentState::InFlight);
    assert_eq!(taken.lease.fence, 2);
    assert!(
        store
            .record(&live, &unknown_now())
            .await
            .unwrap_err()
            .is_lease_lost(),
        "the old lease is fenced off"
    );
    // An ended lease is taken over; a terminal row and a missing key are not.
    store
        .write_ahead(&payment("ended"), &w("w1"), Duration::ZERO)
        .await
        .unwrap();
    assert!(store
        .take_over("ended", &w("w2"), HOUR)
        .await
        .unwrap()
        .is_some());
    store
        .record(
            &taken.lease,
            &Outcome::Succeeded {
                status: 201,
                locator: None,
            },
        )
        .await
        .unwrap();
    assert!(store
        .take_over("live", &w("w3"), HOUR)
        .await
        .unwrap()
        .is_none());
    assert!(store
        .take_over("missing", &w("w3"), HOUR)
        .await
        .unwrap()
        .is_none());
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn claims_take_due_unknown_and_expired_leases_only(store: impl JournalStore) {
    store
        .write_ahead(&payment("live-lease"), &w("w1"), HOUR)
        .await
        .unwrap();
    store
        .write_ahead(&payment("expired-lease"), &w("dead"), Duration::ZERO)
        .await
        .unwrap();
    let due = store
        .write_ahead(&payment("unknown-due"), &w("w1"), HOUR)
        .await
        .unwrap();
    store.record(&due, &unknown_now()).await.unwrap();
    let later = store
        .write_ahead(&payment("unknown-later"), &w("w1"), HOUR)
        .await
        .unwrap();
    let retry_later = Outcome::Unknown {
        status: Some(409),
        retry_in: HOUR,
        reason: "in progress".into(),
    };
    store.record(&later, &retry_later).await.unwrap();

    let claimed = store.claim(&w("w2"), HOUR, 10).await.unwrap();
    let keys: HashSet<_> = claimed.iter().map(|c| c.record.key.as_str()).collect();
    assert_eq!(keys, HashSet::from(["expired-lease", "unknown-due"]));
    for claim in &claimed {
        assert_eq!(claim.record.state, IntentState::InFlight);
        assert_eq!((claim.record.fence, claim.record.runs), (2, 2));
        assert_eq!(claim.lease.fence, 2);
        assert_eq!(claim.record.owner.as_deref(), Some("w2"));
        assert!(claim.lease.until > claim.now);
    }
    assert!(
        store.claim(&w("w3"), HOUR, 10).await.unwrap().is_empty(),
        "all leased now"
    );
    assert!(store.claim(&w("w3"), HOUR, 0).await.unwrap().is_empty());
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn concurrent_claims_are_disjoint(store: impl JournalStore + Clone) {
    for i in 0..40 {
        let lease = store
            .write_ahead(&payment(&format!("k{i}")), &w("w0"), HOUR)
            .await
            .unwrap();
        store.record(&lease, &unknown_now()).await.unwrap();
    }
    let claims = (0..4).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            let mut mine = Vec::new();
            for _ in 0..20 {
                let batch = store.claim(&w(&format!("w{i}")), HOUR, 3).await.unwrap();
                if batch.is_empty() {
                    break;
                }
                mine.extend(batch.into_iter().map(|c| c.record.key));
            }
            mine
        })
    });
    let mut seen = HashSet::new();
    for claim in claims {
        for key in claim.await.unwrap() {
            assert!(seen.insert(key.clone()), "{key} claimed twice");
        }
    }
    assert_eq!(seen.len(), 40);
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn lease_lost_after_reclaim_drops_the_late_result(store: impl JournalStore) {
    // Worker A's lease expires at once (a paused worker); B claims and finishes.
    let a = store
        .write_ahead(&payment("lease"), &w("a"), Duration::ZERO)
        .await
        .unwrap();
    let b = store
        .claim(&w("b"), HOUR, 10)
        .await
        .unwrap()
        .remove(0)
        .lease;
    assert_eq!(b.fence, a.fence + 1);
    let late = Outcome::Failed {
        status: Some(400),
        reason: "late".into(),
    };
    let error = store.record(&a, &late).await.unwrap_err();
    assert!(error.is_lease_lost(), "{error}");
    let fresh = Outcome::Succeeded {
        status: 201,
        locator: Some("/payments/1".into()),
    };
    store.record(&b, &fresh).await.unwrap();
    let error = store.record(&a, &late).await.unwrap_err();
    assert!(error.is_lease_lost(), "{error}");
    let row = store.get("lease").await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Succeeded);
    assert_eq!(row.status, Some(201));
    assert_eq!(row.locator.as_deref(), Some("/payments/1"));
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn lease_lost_after_manual_abandon(store: impl JournalStore) {
    let lease = store
        .write_ahead(&payment("by-hand"), &w("w1"), HOUR)
        .await
        .unwrap();
    assert!(store
        .abandon("by-hand", "reconciled by support")
        .await
        .unwrap());
    let error = store
        .record(
            &lease,
            &Outcome::Succeeded {
                status: 200,
                locator: None,
            },
        )
        .await
        .unwrap_err();
    assert!(error.is_lease_lost());
    let row = store.get("by-hand").await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Abandoned);
    assert_eq!(row.detail.as_deref(), Some("reconciled by support"));
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn unknown_gets_a_later_due_time(store: impl JournalStore) {
    let lease = store
        .write_ahead(&payment("conflict"), &w("w1"), HOUR)
        .await
        .unwrap();
    let before = SystemTime::now();
    let outcome = Outcome::Unknown {
        status: Some(409),
        retry_in: Duration::from_secs(60),
        reason: "409 in progress".into(),
    };
    store.record(&lease, &outcome).await.unwrap();
    let row = store.get("conflict").await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Unknown);
    assert_eq!(row.status, Some(409));
    let due = row.due_at.expect("due time");
    assert!(due >= before + Duration::from_secs(59), "due {due:?}");
    assert!(
        store.claim(&w("w2"), HOUR, 10).await.unwrap().is_empty(),
        "not due yet"
    );
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn a_run_that_did_nothing_is_given_back(store: impl JournalStore) {
    let lease = store
        .write_ahead(&payment("held-back"), &w("w1"), HOUR)
        .await
        .unwrap();
    store.record(&lease, &unknown_now()).await.unwrap();
    let claimed = store.claim(&w("w2"), HOUR, 10).await.unwrap();
    assert_eq!((claimed[0].record.runs, claimed[0].record.fence), (2, 2));
    let nothing = |queued| Outcome::NotPerformed {
        queued,
        status: Some(429),
        retry_in: Duration::ZERO,
        reason: "refused before sending".into(),
    };
    store
        .record(&claimed[0].lease, &nothing(false))
        .await
        .unwrap();
    let row = store.get("held-back").await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Unknown);
    assert_eq!(
        (row.runs, row.fence),
        (1, 2),
        "the run is given back, the fence kept"
    );
    assert_eq!(row.status, Some(429));
    let again = store.claim(&w("w2"), HOUR, 10).await.unwrap();
    assert_eq!((again[0].record.runs, again[0].record.fence), (2, 3));
    store.record(&again[0].lease, &nothing(true)).await.unwrap();
    let row = store.get("held-back").await.unwrap().unwrap();
    assert_eq!((row.state, row.runs), (IntentState::Queued, 1));
    assert_eq!(
        store.claim(&w("w3"), HOUR, 10).await.unwrap().len(),
        1,
        "a queued row is due"
    );
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn terminal_rows_are_never_claimed(store: impl JournalStore) {
    let outcomes = [
        Outcome::Succeeded {
            status: 201,
            locator: None,
        },
        Outcome::Failed {
            status: Some(422),
            reason: "mismatch".into(),
        },
        Outcome::Abandoned {
            reason: "expired".into(),
        },
    ];
    for (i, outcome) in outcomes.iter().enumerate() {
        // Leases already expired: only the state keeps them from being claimed.
        let lease = store
            .write_ahead(&payment(&format!("t{i}")), &w("w1"), Duration::ZERO)
            .await
            .unwrap();
        store.record(&lease, outcome).await.unwrap();
    }
    assert!(store.claim(&w("w2"), HOUR, 100).await.unwrap().is_empty());
    assert!(
        !store.abandon("t0", "too late").await.unwrap(),
        "terminal stays"
    );
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn list_abandon_and_prune(store: impl JournalStore) {
    let done = store
        .write_ahead(&payment("done"), &w("w1"), HOUR)
        .await
        .unwrap();
    store
        .record(
            &done,
            &Outcome::Succeeded {
                status: 200,
                locator: None,
            },
        )
        .await
        .unwrap();
    let open = store
        .write_ahead(&payment("open"), &w("w1"), HOUR)
        .await
        .unwrap();
    store.record(&open, &unknown_now()).await.unwrap();
    store
        .write_ahead(&payment("flying"), &w("w1"), HOUR)
        .await
        .unwrap();

    let keys = |rows: Vec<IntentRecord>| rows.into_iter().map(|r| r.key).collect::<Vec<_>>();
    assert_eq!(
        keys(store.list(IntentState::Unknown, None, 10).await.unwrap()),
        ["open"]
    );
    assert_eq!(
        keys(store.list(IntentState::Succeeded, None, 10).await.unwrap()),
        ["done"]
    );
    assert_eq!(
        keys(store.list(IntentState::InFlight, None, 10).await.unwrap()),
        ["flying"]
    );
    assert!(!store.abandon("missing", "x").await.unwrap());

    assert_eq!(store.prune(HOUR).await.unwrap(), 0, "nothing that old");
    assert_eq!(
        store.prune(Duration::ZERO).await.unwrap(),
        1,
        "only the terminal row"
    );
    assert!(store.get("done").await.unwrap().is_none());
    assert!(store.get("open").await.unwrap().is_some());
    assert!(store.get("flying").await.unwrap().is_some());
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn a_new_incarnation_takes_back_its_predecessors_leases_at_once(
    store: impl JournalStore,
) {
    let before = Worker::with_incarnation("payments-1", "boot-1");
    let after = Worker::with_incarnation("payments-1", "boot-2");
    let old = store
        .write_ahead(&payment("mine"), &before, HOUR)
        .await
        .unwrap();
    store
        .write_ahead(&payment("theirs"), &w("payments-2"), HOUR)
        .await
        .unwrap();
    assert!(
        store.claim(&before, HOUR, 10).await.unwrap().is_empty(),
        "the same incarnation does not take its own live leases"
    );
    assert!(
        store
            .claim(&w("payments-3"), HOUR, 10)
            .await
            .unwrap()
            .is_empty(),
        "another name waits for the lease to end"
    );
    let claimed = store.claim(&after, HOUR, 10).await.unwrap();
    let keys: Vec<_> = claimed.iter().map(|c| c.record.key.as_str()).collect();
    assert_eq!(keys, ["mine"], "only its own name's leases, at once");
    let claim = &claimed[0];
    assert_eq!(claim.lease.fence, old.fence + 1);
    assert_eq!(claim.record.owner.as_deref(), Some("payments-1"));
    assert_eq!(claim.record.incarnation.as_deref(), Some("boot-2"));
    let late = Outcome::Succeeded {
        status: 201,
        locator: None,
    };
    let error = store.record(&old, &late).await.unwrap_err();
    assert!(
        error.is_lease_lost(),
        "the predecessor's late result: {error}"
    );
    assert!(
        store.claim(&after, HOUR, 10).await.unwrap().is_empty(),
        "taken once, then held"
    );
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn backlog_counts_due_leased_and_waiting(store: impl JournalStore) {
    let me = w("me");
    let empty = store.backlog(&me).await.unwrap();
    assert_eq!((empty.due, empty.leased, empty.waiting), (0, 0, 0));
    assert_eq!(empty.next_claimable(), None);

    let before = SystemTime::now() - Duration::from_secs(5);
    store
        .write_ahead(&payment("leased"), &w("other"), HOUR)
        .await
        .unwrap();
    let waiting = store
        .write_ahead(&payment("waiting"), &me, HOUR)
        .await
        .unwrap();
    let later = Outcome::Unknown {
        status: Some(409),
        retry_in: Duration::from_secs(600),
        reason: "in progress".into(),
    };
    store.record(&waiting, &later).await.unwrap();
    let backlog = store.backlog(&me).await.unwrap();
    assert_eq!((backlog.due, backlog.leased, backlog.waiting), (0, 1, 1));
    let lease_end = backlog.leased_until.expect("lease end");
    let next_due = backlog.next_due.expect("next due");
    assert!(
        lease_end > before + HOUR && lease_end < SystemTime::now() + HOUR + Duration::from_secs(5)
    );
    assert!(next_due > before + Duration::from_secs(600));
    assert!(next_due < SystemTime::now() + Duration::from_secs(605));
    assert_eq!(backlog.next_claimable(), Some(next_due));

    let due = store.write_ahead(&payment("due"), &me, HOUR).await.unwrap();
    store
        .record(
            &due,
            &Outcome::Unknown {
                status: None,
                retry_in: Duration::ZERO,
                reason: "lost".into(),
            },
        )
        .await
        .unwrap();
    store
        .write_ahead(&payment("expired"), &w("dead"), Duration::ZERO)
        .await
        .unwrap();
    let backlog = store.backlog(&me).await.unwrap();
    assert_eq!((backlog.due, backlog.leased, backlog.waiting), (2, 1, 1));
    assert_eq!(backlog.next_claimable(), Some(backlog.now));
    assert_eq!(
        store.backlog(&w("other")).await.unwrap().leased,
        1,
        "its own live lease counts as leased, not due"
    );
}

/// A check of the storage contract (see the [module docs](self)).
pub async fn list_pages_follow_the_cursor(store: impl JournalStore) {
    for i in 0..7 {
        let lease = store
            .write_ahead(&payment(&format!("page-{i}")), &w("w1"), HOUR)
            .await
            .unwrap();
        store
            .record(
                &lease,
                &Outcome::Succeeded {
                    status: 201,
                    locator: None,
                },
            )
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor: Option<ListCursor> = None;
    for _ in 0..10 {
        let page = store
            .list(IntentState::Succeeded, cursor.as_ref(), 3)
            .await
            .unwrap();
        assert!(page.len() <= 3);
        let Some(last) = page.last() else { break };
        cursor = Some(ListCursor::after(last));
        seen.extend(page.into_iter().map(|r| r.key));
    }
    let mut expected: Vec<_> = (0..7).map(|i| format!("page-{i}")).collect();
    let mut sorted = seen.clone();
    sorted.sort();
    expected.sort();
    assert_eq!(sorted, expected, "every row once, across pages");
    assert_eq!(seen.len(), 7);
}
