//! Settings that change answers: the refusal body shape, releasing a key after a 5xx.

use std::sync::Arc;

use bytes::Bytes;
use http::HeaderValue;
use tower_idempotency::{IdempotencyLayer, MemoryStore, Refusal, RenderedBody, ServerErrors};

use crate::support::{account, send, serve, Effects, Req};

/// The shape a payments SDK reads as an error: a JSON object with an `error` member.
fn stripe_shaped(refusal: &Refusal) -> RenderedBody {
    let body = serde_json::json!({
        "error": {
            "type": "idempotency_error",
            "code": refusal.kind().slug(),
            "message": refusal.kind().detail(),
        }
    });
    RenderedBody {
        content_type: HeaderValue::from_static("application/json"),
        body: Bytes::from(body.to_string()),
    }
}

#[tokio::test]
async fn refusals_take_the_api_s_own_shape() {
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .refusal_format(stripe_shaped)
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(layer, effects.clone()).await;
    assert_eq!(
        send(addr, &Req::post("/payments", "k", "a")).await.status,
        201
    );
    let refused = send(addr, &Req::post("/payments", "k", "b")).await;
    assert_eq!(refused.status, 422);
    assert_eq!(refused.headers["content-type"], "application/json");
    let json: serde_json::Value = serde_json::from_slice(&refused.body).unwrap();
    assert_eq!(json["error"]["code"], "mismatch");
    assert_eq!(effects.count(), 1);
}

#[tokio::test]
async fn a_released_5xx_lets_the_retry_execute() {
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .server_errors(ServerErrors::Release)
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(layer.clone(), effects.clone()).await;
    let first = send(addr, &Req::post("/fail", "k", "")).await;
    let second = send(addr, &Req::post("/fail", "k", "")).await;
    assert_eq!((first.status, first.text().as_str()), (500, "failed 1"));
    assert_eq!((second.status, second.text().as_str()), (500, "failed 2"));
    assert!(!second.replayed());
    assert_eq!(effects.count(), 2);
    let counters = layer.counters().snapshot();
    assert_eq!(
        (counters.claims, counters.released, counters.replays),
        (2, 2, 0)
    );
}

#[tokio::test]
async fn an_optional_key_passes_keyless_requests_through() {
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .key_required(false)
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(layer, effects.clone()).await;
    let keyless = Req {
        key: None,
        ..Req::post("/payments", "k", "a")
    };
    assert_eq!(send(addr, &keyless).await.text(), "{\"payment\":1}");
    assert_eq!(send(addr, &keyless).await.text(), "{\"payment\":2}");
    assert_eq!(effects.count(), 2);
}

#[tokio::test]
async fn the_pruner_empties_expired_keys() {
    use std::time::{Duration, SystemTime};
    use tower_idempotency::ManualClock;

    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000),
    ));
    let layer = IdempotencyLayer::builder(store.clone())
        .principal(account)
        .lease(Duration::from_secs(5))
        .retention(Duration::from_secs(60))
        .clock(clock.clone())
        .build()
        .unwrap();
    let addr = serve(layer.clone(), Arc::new(Effects::default())).await;
    for key in ["a", "b", "c"] {
        assert_eq!(
            send(addr, &Req::post("/payments", key, "x")).await.status,
            201
        );
    }
    let pruner = layer.spawn_pruner(Duration::from_millis(5));
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert_eq!(store.len(), 3, "nothing expired yet");
    clock.advance(Duration::from_secs(60));
    let start = std::time::Instant::now();
    while !store.is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the pruner never ran"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    pruner.abort();
}

/// Compares JSON bodies by their parsed value: whitespace and member order do not
/// make another request.
struct JsonValueFingerprint;

impl tower_idempotency::Fingerprinter for JsonValueFingerprint {
    fn fingerprint(
        &self,
        parts: &http::request::Parts,
        body: &[u8],
    ) -> tower_idempotency::Fingerprint {
        let value: serde_json::Value =
            serde_json::from_slice(body).unwrap_or(serde_json::Value::Null);
        let canonical = format!("{} {} {}", parts.method, parts.uri.path(), value);
        tower_idempotency::Fingerprint::from_bytes(canonical.into_bytes())
    }
}

#[tokio::test]
async fn the_fingerprint_is_configurable() {
    let first = r#"{"amount":500,"currency":"EUR"}"#;
    let same_value = r#"{ "currency": "EUR", "amount": 500 }"#;
    for (custom, want) in [(false, 422), (true, 201)] {
        let builder = IdempotencyLayer::builder(MemoryStore::new()).principal(account);
        let layer = if custom {
            builder.fingerprinter(JsonValueFingerprint)
        } else {
            builder
        }
        .build()
        .unwrap();
        let effects = Arc::new(Effects::default());
        let addr = serve(layer, effects.clone()).await;
        assert_eq!(
            send(addr, &Req::post("/payments", "k", first)).await.status,
            201
        );
        let retry = send(addr, &Req::post("/payments", "k", same_value)).await;
        assert_eq!(retry.status, want, "custom fingerprint: {custom}");
        assert_eq!(retry.replayed(), custom);
        assert_eq!(effects.count(), 1);
    }
}

#[tokio::test]
async fn a_body_that_fails_midway_is_not_stored() {
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(layer.clone(), effects.clone()).await;
    // The first caller's connection breaks with the body (no answer to read whole).
    let first = crate::support::try_send(addr, &Req::post("/broken", "k", "")).await;
    assert!(first.is_none(), "{first:?}");
    let retry = send(addr, &Req::post("/broken", "k", "")).await;
    assert_eq!(retry.status, 410);
    let problem: serde_json::Value = serde_json::from_slice(&retry.body).unwrap();
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("failed midway"),
        "{problem}"
    );
    assert_eq!(effects.count(), 1);
    assert_eq!(layer.counters().snapshot().not_stored, 1);
}
