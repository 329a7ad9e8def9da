//! The contract of what an operator reads and removes: the list and its cursor,
//! abandon and prune, and the backlog counts.

use std::time::{Duration, SystemTime};

use super::{payment, unknown_now, w, HOUR};
use crate::{IntentRecord, IntentState, JournalStore, ListCursor, Outcome};

/// A check of the storage contract (see the [module docs](super)).
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

/// A check of the storage contract (see the [module docs](super)).
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

/// A check of the storage contract (see the [module docs](super)).
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
