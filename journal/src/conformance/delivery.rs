//! The contract of delivery: a terminal result is listed until acknowledged,
//! oldest first; an acknowledgement is idempotent, and only one of several
//! concurrent ones is the first; open and unknown keys are refused.

use std::time::Duration;

use super::{payment, w, HOUR};
use crate::{IntentState, JournalError, JournalStore, Outcome};

fn succeeded() -> Outcome {
    Outcome::Succeeded {
        status: 201,
        locator: None,
    }
}

async fn keys(store: &impl JournalStore, limit: usize) -> Vec<String> {
    let page = store.unacknowledged(limit).await.unwrap();
    assert!(
        page.iter().all(|record| record.state.is_terminal()),
        "only results are listed: {page:?}"
    );
    page.into_iter().map(|record| record.key).collect()
}

/// A check of the storage contract (see the [module docs](super)).
pub async fn results_are_listed_oldest_first_until_acknowledged(store: impl JournalStore) {
    // Keys that sort against the order their results are recorded in.
    let outcomes = [
        ("z-paid", succeeded()),
        (
            "y-declined",
            Outcome::Failed {
                status: Some(422),
                reason: "declined".into(),
            },
        ),
        (
            "x-given-up",
            Outcome::Abandoned {
                reason: "too many runs".into(),
            },
        ),
    ];
    let mut leases = Vec::new();
    for (key, _) in &outcomes {
        leases.push(
            store
                .write_ahead(&payment(key), &w("w1"), HOUR)
                .await
                .unwrap(),
        );
    }
    let open = store
        .write_ahead(&payment("w-open"), &w("w1"), HOUR)
        .await
        .unwrap();
    assert!(
        keys(&store, 10).await.is_empty(),
        "nothing has a result yet"
    );
    for (lease, (_, outcome)) in leases.iter().zip(&outcomes) {
        store.record(lease, outcome).await.unwrap();
        // The next result is recorded at a later millisecond.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        keys(&store, 10).await,
        ["z-paid", "y-declined", "x-given-up"]
    );
    assert_eq!(
        keys(&store, 2).await,
        ["z-paid", "y-declined"],
        "a bounded page"
    );

    let before = store.get("y-declined").await.unwrap().unwrap();
    assert!(store.acknowledge("y-declined").await.unwrap(), "the first");
    assert!(
        !store.acknowledge("y-declined").await.unwrap(),
        "idempotent"
    );
    assert_eq!(keys(&store, 10).await, ["z-paid", "x-given-up"]);
    let after = store.get("y-declined").await.unwrap().unwrap();
    assert_eq!(
        (after.state, after.fence, after.updated_at),
        (IntentState::Failed, before.fence, before.updated_at),
        "an acknowledgement changes neither the state nor when it was recorded"
    );

    // An open intent has nothing to acknowledge; once it has, it is listed.
    let refused = store.acknowledge("w-open").await.unwrap_err();
    assert!(
        matches!(
            refused,
            JournalError::NotTerminal {
                state: IntentState::InFlight,
                ..
            }
        ),
        "{refused}"
    );
    let refused = store.acknowledge("never-journaled").await.unwrap_err();
    assert!(
        matches!(refused, JournalError::UnknownKey { .. }),
        "{refused}"
    );
    store.record(&open, &succeeded()).await.unwrap();
    assert_eq!(keys(&store, 10).await, ["z-paid", "x-given-up", "w-open"]);

    // Abandoned by hand is a result too.
    store
        .write_ahead(&payment("v-by-hand"), &w("w1"), HOUR)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(store.abandon("v-by-hand", "reconciled").await.unwrap());
    assert_eq!(
        keys(&store, 10).await.last().map(String::as_str),
        Some("v-by-hand")
    );
}

/// A check of the storage contract (see the [module docs](super)).
pub async fn only_one_of_concurrent_acknowledgements_is_the_first(
    store: impl JournalStore + Clone,
) {
    let lease = store
        .write_ahead(&payment("raced"), &w("w1"), HOUR)
        .await
        .unwrap();
    store.record(&lease, &succeeded()).await.unwrap();
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.acknowledge("raced").await })
        })
        .collect();
    let mut firsts = 0;
    for racer in racers {
        firsts += usize::from(racer.await.unwrap().unwrap());
    }
    assert_eq!(firsts, 1, "exactly one acknowledgement is the first");
    assert!(keys(&store, 10).await.is_empty());
}
