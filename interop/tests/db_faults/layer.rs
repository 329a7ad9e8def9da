//! The layer mode under the faults: what tower-idempotency's plain layer on
//! `PostgresStore` answered while its database was away, as the clients
//! received it (counted by the server, `GET /statuses`). Its store failing is
//! a 503 with `Retry-After` the client waits out, never a 500 (whose body
//! would carry a driver's message); that no key was paid twice is the fleet's
//! own verdict, which covers the layer's keys too. A result the store could
//! not write while its database was away is written once it is back, so the
//! key replays it instead of running the handler again.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use tower_idempotency::{
    Claim, ClaimRequest, Completion, ExistingState, Fingerprint, PostgresStore, ScopeId, Store,
    StoredResponse,
};

use crate::faults::Cluster;
use crate::fleet::PaymentsServer;

/// Each status the layer server answered so far, and how often.
pub async fn statuses(server: &PaymentsServer) -> BTreeMap<String, u64> {
    let url = server.url.replace("/payments", "/statuses");
    let text = reqwest::get(&url)
        .await
        .expect("ask the layer server")
        .text()
        .await
        .expect("its statuses");
    text.lines()
        .filter_map(|line| {
            let (status, count) = line.split_once(' ')?;
            Some((status.to_owned(), count.parse().ok()?))
        })
        .collect()
}

/// Judges what the layer answered during one scenario (`after` less
/// `before`), panicking on a 500 or a 503 without `Retry-After`, and returns
/// its figures.
pub fn judge(name: &str, before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> String {
    let during: BTreeMap<&str, u64> = after
        .iter()
        .map(|(status, n)| {
            let was = before.get(status).copied().unwrap_or(0);
            (status.as_str(), n - was)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let figures = format!("{name}_layer: statuses={during:?}");
    let count = |status: &str| during.get(status).copied().unwrap_or(0);
    assert_eq!(count("500"), 0, "{figures}: the layer answered 500");
    assert_eq!(
        count("503-no-retry-after"),
        0,
        "{figures}: a 503 without Retry-After"
    );
    assert!(count("201") > 0, "{figures}: the layer paid nothing");
    figures
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_the_outage_kept_from_the_layers_store_is_stored_once_the_database_is_back() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let store = PostgresStore::connect(cluster.conninfo()).await.unwrap();
    let claim = || ClaimRequest {
        scope: ScopeId::from_bytes([7; 32]),
        fingerprint: Fingerprint::from_bytes(vec![1, 2, 3]),
        now: SystemTime::now(),
        lease: Duration::from_secs(60),
    };
    let Claim::Acquired { token, .. } = store.claim(&claim()).await.unwrap() else {
        panic!("a new key is acquired");
    };
    // The handler ran (its effect is done); then the database goes away
    // before its response is stored.
    cluster.stop().await;
    let response = StoredResponse {
        status: http::StatusCode::CREATED,
        headers: Vec::new(),
        body: bytes::Bytes::from_static(b"paid"),
    };
    let stored = store
        .complete(
            &token,
            Completion::Stored(response),
            SystemTime::now() + Duration::from_secs(3600),
        )
        .await;
    assert!(stored.is_err(), "the database is away: {stored:?}");
    let back = cluster.start_again().await;
    // A retry of the key must find the result, not a key in progress until its
    // lease lapses (and then a second run of the handler).
    loop {
        match store.claim(&claim()).await {
            Ok(Claim::Existing(existing))
                if matches!(existing.state, ExistingState::Completed(_)) =>
            {
                break
            }
            other => assert!(
                back.elapsed() < Duration::from_secs(5),
                "5 s after the database's return the key still reads {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
