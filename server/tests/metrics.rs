//! The layer's counters through the `metrics` facade (feature `metrics`): every
//! snapshot field is recorded under its name in `METRIC_NAMES`.
//!
//! A test binary of its own: the recorder is global.

#[allow(dead_code)]
#[path = "all/support.rs"]
mod support;

use std::collections::HashMap;
use std::sync::Arc;

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use tower_idempotency::{IdempotencyLayer, MemoryStore, METRIC_NAMES};

use support::{account, send, serve, Effects, Req};

#[tokio::test]
async fn the_counters_are_recorded_through_the_facade() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this binary");

    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .build()
        .unwrap();
    let counters = layer.counters();
    let addr = serve(layer, Arc::new(Effects::default())).await;
    assert_eq!(
        send(addr, &Req::post("/payments", "k", "1")).await.status,
        201
    );
    assert!(send(addr, &Req::post("/payments", "k", "1"))
        .await
        .replayed());
    assert_eq!(
        send(addr, &Req::post("/payments", "k", "2")).await.status,
        422
    );

    let recorded: HashMap<String, u64> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| match value {
            DebugValue::Counter(n) => Some((key.key().name().to_owned(), n)),
            _ => None,
        })
        .collect();
    let snapshot = counters.snapshot();
    assert_eq!(
        recorded.get("tower_idempotency.claims"),
        Some(&snapshot.claims)
    );
    assert_eq!(
        recorded.get("tower_idempotency.replays"),
        Some(&snapshot.replays)
    );
    assert_eq!(recorded.get("tower_idempotency.mismatches"), Some(&1));
    for name in recorded.keys() {
        assert!(
            METRIC_NAMES.contains(&name.as_str()),
            "{name} is documented"
        );
    }
}
