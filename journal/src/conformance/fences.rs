//! The contract of the fence: a result recorded under a lease that was lost
//! (reclaimed, or abandoned by hand) is dropped.

use std::time::Duration;

use super::{payment, w, HOUR};
use crate::{IntentState, JournalStore, Outcome};

/// A check of the storage contract (see the [module docs](super)).
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

/// A check of the storage contract (see the [module docs](super)).
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
