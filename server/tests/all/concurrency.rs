//! Concurrent identical requests: exactly one effect per key; every other answer is a
//! 409 or a replay of the one result.

use std::collections::HashSet;
use std::sync::Arc;

use tower_idempotency::{IdempotencyLayer, MemoryStore};

use crate::support::{account, send, serve, Effects, Req};

const CONCURRENT: usize = 64;
// The quick form; scripts/concurrency.sh runs more rounds.
fn rounds() -> usize {
    std::env::var("TOWER_IDEMPOTENCY_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_identical_requests_make_one_effect() {
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(layer.clone(), effects.clone()).await;
    let (mut conflicts, mut replays) = (0, 0);
    for round in 0..rounds() {
        let key = format!("round-{round}");
        let before = effects.count();
        let tasks: Vec<_> = (0..CONCURRENT)
            .map(|_| {
                let req = Req::post("/payments", &key, "slow payment");
                tokio::spawn(async move { send(addr, &req).await })
            })
            .collect();
        let mut bodies = HashSet::new();
        for task in tasks {
            let answer = task.await.unwrap();
            match answer.status {
                201 => {
                    replays += usize::from(answer.replayed());
                    bodies.insert(answer.text());
                }
                409 => conflicts += 1,
                other => panic!("round {round}: unexpected {other}: {}", answer.text()),
            }
        }
        assert_eq!(effects.count(), before + 1, "round {round}: one effect");
        assert_eq!(
            bodies.len(),
            1,
            "round {round}: one result, replayed the same"
        );
    }
    let counters = layer.counters().snapshot();
    assert_eq!(counters.claims, rounds() as u64);
    assert_eq!(
        counters.conflicts + counters.replays,
        (rounds() * (CONCURRENT - 1)) as u64
    );
    assert_eq!(
        (counters.conflicts, counters.replays),
        (conflicts, replays as u64)
    );
    assert!(conflicts > 0, "the requests overlapped at least once");
    eprintln!(
        "rounds: {}, concurrent: {CONCURRENT}, effects: {}, conflicts (409): {conflicts}, replays: {replays}",
        rounds(),
        effects.count()
    );
}
