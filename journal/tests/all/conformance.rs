//! The storage contract, run against both backends (`sqlite::*`, `postgres::*`).

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue};
use reqwest_resilience_journal::{IntentState, JournalStore, Outcome};

use crate::support::payment;

crate::on_both_backends!(
    write_ahead_round_trips_every_field,
    a_key_is_journaled_once,
    claims_take_due_unknown_and_expired_leases_only,
    concurrent_claims_are_disjoint,
    lease_lost_after_reclaim_drops_the_late_result,
    lease_lost_after_manual_abandon,
    unknown_gets_a_later_due_time,
    terminal_rows_are_never_claimed,
    list_abandon_and_prune,
);

const HOUR: Duration = Duration::from_secs(3600);

fn unknown_now() -> Outcome {
    Outcome::Unknown {
        status: None,
        retry_in: Duration::ZERO,
        reason: "test".into(),
    }
}

async fn write_ahead_round_trips_every_field(store: impl JournalStore) {
    let mut intent = payment("key-round-trip");
    intent.body = vec![0, 159, 146, 150, b'{', 255];
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.append("x-tag", HeaderValue::from_static("a"));
    headers.append("x-tag", HeaderValue::from_static("b"));
    intent.headers = headers.clone();
    intent.retention = HOUR;
    let before = SystemTime::now() - Duration::from_secs(5);
    let lease = store.write_ahead(&intent, "w1", HOUR).await.unwrap();
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

async fn a_key_is_journaled_once(store: impl JournalStore) {
    store
        .write_ahead(&payment("dup"), "w1", HOUR)
        .await
        .unwrap();
    let error = store
        .write_ahead(&payment("dup"), "w2", HOUR)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("already journaled"), "{error}");
    let row = store.get("dup").await.unwrap().unwrap();
    assert_eq!(row.owner.as_deref(), Some("w1"), "the first write stays");
}

async fn claims_take_due_unknown_and_expired_leases_only(store: impl JournalStore) {
    store
        .write_ahead(&payment("live-lease"), "w1", HOUR)
        .await
        .unwrap();
    store
        .write_ahead(&payment("expired-lease"), "dead", Duration::ZERO)
        .await
        .unwrap();
    let due = store
        .write_ahead(&payment("unknown-due"), "w1", HOUR)
        .await
        .unwrap();
    store.record(&due, &unknown_now()).await.unwrap();
    let later = store
        .write_ahead(&payment("unknown-later"), "w1", HOUR)
        .await
        .unwrap();
    let retry_later = Outcome::Unknown {
        status: Some(409),
        retry_in: HOUR,
        reason: "in progress".into(),
    };
    store.record(&later, &retry_later).await.unwrap();

    let claimed = store.claim("w2", HOUR, 10).await.unwrap();
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
        store.claim("w3", HOUR, 10).await.unwrap().is_empty(),
        "all leased now"
    );
    assert!(store.claim("w3", HOUR, 0).await.unwrap().is_empty());
}

async fn concurrent_claims_are_disjoint(store: impl JournalStore + Clone) {
    for i in 0..40 {
        let lease = store
            .write_ahead(&payment(&format!("k{i}")), "w0", HOUR)
            .await
            .unwrap();
        store.record(&lease, &unknown_now()).await.unwrap();
    }
    let claims = (0..4).map(|w| {
        let store = store.clone();
        tokio::spawn(async move {
            let mut mine = Vec::new();
            for _ in 0..20 {
                let batch = store.claim(&format!("w{w}"), HOUR, 3).await.unwrap();
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

async fn lease_lost_after_reclaim_drops_the_late_result(store: impl JournalStore) {
    // Worker A's lease expires at once (a paused worker); B claims and finishes.
    let a = store
        .write_ahead(&payment("lease"), "a", Duration::ZERO)
        .await
        .unwrap();
    let b = store.claim("b", HOUR, 10).await.unwrap().remove(0).lease;
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

async fn lease_lost_after_manual_abandon(store: impl JournalStore) {
    let lease = store
        .write_ahead(&payment("by-hand"), "w1", HOUR)
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

async fn unknown_gets_a_later_due_time(store: impl JournalStore) {
    let lease = store
        .write_ahead(&payment("conflict"), "w1", HOUR)
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
        store.claim("w2", HOUR, 10).await.unwrap().is_empty(),
        "not due yet"
    );
}

async fn terminal_rows_are_never_claimed(store: impl JournalStore) {
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
            .write_ahead(&payment(&format!("t{i}")), "w1", Duration::ZERO)
            .await
            .unwrap();
        store.record(&lease, outcome).await.unwrap();
    }
    assert!(store.claim("w2", HOUR, 100).await.unwrap().is_empty());
    assert!(
        !store.abandon("t0", "too late").await.unwrap(),
        "terminal stays"
    );
}

async fn list_abandon_and_prune(store: impl JournalStore) {
    let done = store
        .write_ahead(&payment("done"), "w1", HOUR)
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
        .write_ahead(&payment("open"), "w1", HOUR)
        .await
        .unwrap();
    store.record(&open, &unknown_now()).await.unwrap();
    store
        .write_ahead(&payment("flying"), "w1", HOUR)
        .await
        .unwrap();

    let keys = |rows: Vec<reqwest_resilience_journal::IntentRecord>| {
        rows.into_iter().map(|r| r.key).collect::<Vec<_>>()
    };
    assert_eq!(
        keys(store.list(IntentState::Unknown, 10).await.unwrap()),
        ["open"]
    );
    assert_eq!(
        keys(store.list(IntentState::Succeeded, 10).await.unwrap()),
        ["done"]
    );
    assert_eq!(
        keys(store.list(IntentState::InFlight, 10).await.unwrap()),
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
