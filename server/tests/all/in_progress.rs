//! A key in progress, on the layer's defaults: the 409 is a short poll spread over
//! 1–2 s (not the lease's 60 s), and a request whose connection closed mid-handler
//! still finishes, keeps its result and replays it.

use std::sync::Arc;
use std::time::Duration;

use tower_idempotency::{IdempotencyLayer, MemoryStore};

use crate::support::{account, send, serve, try_send, Effects, Req};

fn retry_after(answer: &crate::support::Answer) -> u64 {
    answer.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_key_in_progress_is_polled_in_seconds_spread_over_two() {
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(layer, Arc::clone(&effects)).await;
    let first =
        tokio::spawn(async move { send(addr, &Req::post("/payments", "k1", "hold")).await });
    effects.wait_for(1).await;
    let mut asked = Vec::new();
    for _ in 0..4 {
        let answer = send(addr, &Req::post("/payments", "k1", "hold")).await;
        assert_eq!(answer.status, 409, "{}", answer.text());
        asked.push(retry_after(&answer));
    }
    // No handler has finished yet: the estimate is 1 s, every other duplicate 2 s.
    assert_eq!(asked, [1, 2, 1, 2], "{asked:?}");
    effects.gate.add_permits(1);
    assert_eq!(first.await.unwrap().status, 201);
    let replay = send(addr, &Req::post("/payments", "k1", "hold")).await;
    assert!(replay.replayed());
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn a_dropped_request_runs_to_the_end_and_its_retry_replays() {
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(layer, Arc::clone(&effects)).await;
    // The client gives up while the handler runs: its connection closes.
    let request = Req::post("/payments", "k-dropped", "hold");
    let cut = tokio::time::timeout(Duration::from_millis(300), try_send(addr, &request)).await;
    assert!(cut.is_err(), "the handler was still holding");
    effects.wait_for(1).await;
    // Meanwhile the key is in progress (a handler is running), asked back in seconds.
    let during = send(addr, &request).await;
    assert_eq!(during.status, 409);
    assert!(retry_after(&during) <= 2);
    effects.gate.add_permits(1);
    // The handler finishes although nobody waits for it, and its result is kept.
    let start = std::time::Instant::now();
    let replay = loop {
        let answer = send(addr, &request).await;
        if answer.status != 409 {
            break answer;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "never finished");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(replay.status, 201, "{}", replay.text());
    assert!(replay.replayed(), "the dropped request's result, replayed");
    assert_eq!(effects.count(), 1);
    assert_eq!(effects.payments.lock().unwrap().len(), 1);
}
