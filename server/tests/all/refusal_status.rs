//! A refusal format may choose the status (Stripe answers 400 for a reused key); the
//! key's stored result is untouched by it.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use tower_idempotency::{
    IdempotencyLayer, MemoryStore, Refusal, RefusalFormat, RefusalKind, RenderedBody,
};

use crate::support::{account, send, serve, Effects, Req};

/// Stripe's shape: `{"error": {...}}`, and 400 for a key reused with another payload.
struct StripeLike;

impl RefusalFormat for StripeLike {
    fn render(&self, refusal: &Refusal) -> RenderedBody {
        RenderedBody {
            content_type: HeaderValue::from_static("application/json"),
            body: Bytes::from(format!(
                "{{\"error\":{{\"type\":\"idempotency_error\",\"code\":\"{}\"}}}}",
                refusal.kind().slug()
            )),
        }
    }

    fn status(&self, refusal: &Refusal) -> StatusCode {
        match refusal.kind() {
            RefusalKind::Mismatch => StatusCode::BAD_REQUEST,
            _ => refusal.status(),
        }
    }
}

#[tokio::test]
async fn a_format_may_answer_a_reused_key_with_its_own_status() {
    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .refusal_format(StripeLike)
        .build()
        .unwrap();
    let counters = layer.counters();
    let effects = Arc::new(Effects::default());
    let addr = serve(layer, Arc::clone(&effects)).await;
    let first = send(addr, &Req::post("/payments", "k", "1500")).await;
    assert_eq!(first.status, 201);
    let reused = send(addr, &Req::post("/payments", "k", "9999")).await;
    assert_eq!(reused.status, 400, "{}", reused.text());
    assert!(
        reused.text().contains("\"code\":\"mismatch\""),
        "{}",
        reused.text()
    );
    // Still counted as a mismatch, and the key's own result is still the payment.
    assert_eq!(counters.snapshot().mismatches, 1);
    let again = send(addr, &Req::post("/payments", "k", "1500")).await;
    assert!(again.replayed());
    assert_eq!(again.body, first.body);
    assert_eq!(effects.count(), 1);
}
