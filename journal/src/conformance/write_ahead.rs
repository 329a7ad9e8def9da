//! The contract of the write-ahead: every field comes back as written, and a key
//! is journaled once.

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue};

use super::{payment, w, HOUR};
use crate::{IntentState, JournalStore};

/// A check of the storage contract (see the [module docs](super)).
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

/// A check of the storage contract (see the [module docs](super)).
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
