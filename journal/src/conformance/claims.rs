//! The contract of claims: what a claim or a take-over may take (due, unknown,
//! expired, a predecessor's leases), never what somebody may still be sending or
//! what has ended, and never the same row twice.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use super::{payment, unknown_now, w, HOUR};
use crate::{IntentState, JournalStore, Outcome, Worker};

/// A check of the storage contract (see the [module docs](super)).
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

/// A check of the storage contract (see the [module docs](super)).
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

/// A check of the storage contract (see the [module docs](super)).
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

/// A check of the storage contract (see the [module docs](super)).
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

/// A check of the storage contract (see the [module docs](super)).
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

/// A check of the storage contract (see the [module docs](super)).
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

/// A check of the storage contract (see the [module docs](super)).
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
