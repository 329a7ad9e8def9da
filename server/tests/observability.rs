//! What the layer logs: a span per keyed request with a short digest of the key's
//! scope, never the key or the principal.
//!
//! A test binary of its own: the subscriber is global here, so no other test running
//! at the same time can leave a callsite's interest cached as "never".

#[allow(dead_code)]
#[path = "all/support.rs"]
mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use tower_idempotency::{IdempotencyLayer, MemoryStore};

use support::{account, send, serve, Effects, Req};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn keys_and_principals_never_reach_the_logs() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let layer = IdempotencyLayer::builder(MemoryStore::new())
        .principal(account)
        .build()
        .unwrap();
    let addr = serve(layer.clone(), Arc::new(Effects::default())).await;
    let key = "SECRET-KEY-0123456789";
    let req = Req {
        account: Some("acct_secret_principal"),
        ..Req::post("/payments", key, "a")
    };
    assert_eq!(send(addr, &req).await.status, 201);
    assert!(send(addr, &req).await.replayed());
    assert_eq!(
        send(
            addr,
            &Req {
                body: "b".into(),
                ..req
            }
        )
        .await
        .status,
        422
    );

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("key claimed"), "{logs}");
    assert!(logs.contains("stored response replayed"), "{logs}");
    assert!(logs.contains("refusal=\"mismatch\""), "{logs}");
    assert!(!logs.contains("SECRET-KEY"), "the key leaked: {logs}");
    assert!(
        !logs.contains("acct_secret"),
        "the principal leaked: {logs}"
    );
    // The span names the scope by 8 hex digits.
    let digest = logs
        .split("idempotency{key=")
        .nth(1)
        .expect("the span")
        .split_whitespace()
        .next()
        .unwrap();
    assert_eq!(digest.len(), 8, "{logs}");
    assert!(digest.chars().all(|c| c.is_ascii_hexdigit()), "{logs}");

    let counters = layer.counters().snapshot();
    assert_eq!(
        (counters.claims, counters.replays, counters.mismatches),
        (1, 1, 1)
    );
}
