//! Spans carry OpenTelemetry attribute names; secrets never reach the logs.

use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

use crate::log_capture::capture_traces;
use crate::support::{client, fail_then_ok, received, single_key};

#[tokio::test]
async fn spans_use_otel_names_and_never_log_the_key_the_token_or_the_body() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(fail_then_ok(503, 1))
        .mount(&server)
        .await;
    let (captured, _guard) = capture_traces();

    let (client, _) = client();
    client
        .post(server.uri())
        .idempotency_key("super-secret-idempotency-key-0001")
        .bearer_auth("token-that-must-not-leak")
        .body("card=4242424242424242")
        .send()
        .await
        .unwrap();

    let output = captured.text();
    for expected in [
        "intent",
        "attempt",
        "otel.kind=\"client\"",
        "otel.kind=\"internal\"",
        "http.request.method=POST",
        "http.response.status_code=503",
        "http.response.status_code=200",
        "http.request.resend_count=1",
        "error.type=\"503\"",
        "url.full=",
        "server.address=\"127.0.0.1\"",
        "server.port=",
        "idempotency_key=super-se…",
        "transient failure; retrying",
    ] {
        assert!(
            output.contains(expected),
            "missing {expected:?} in:\n{output}"
        );
    }
    // Nesting: the retry decision is logged in the intent's span, each attempt's
    // span is a child of it, and the intent's span closes with what happened.
    let retrying = output
        .lines()
        .find(|line| line.contains("transient failure; retrying"))
        .unwrap();
    assert!(retrying.contains("intent{"), "{retrying}");
    let attempt_closes: Vec<&str> = output
        .lines()
        .filter(|line| line.contains("attempt{") && line.contains("close"))
        .collect();
    assert_eq!(attempt_closes.len(), 2, "{output}");
    for line in &attempt_closes {
        assert!(
            line.contains("intent{"),
            "an attempt outside its intent: {line}"
        );
    }
    let intent_close = output
        .lines()
        .find(|line| {
            line.contains("intent{") && !line.contains("attempt{") && line.contains("close")
        })
        .unwrap_or_else(|| panic!("no intent close in:\n{output}"));
    assert!(intent_close.contains("attempts=2"), "{intent_close}");
    assert!(
        intent_close.contains("outcome=\"response\""),
        "{intent_close}"
    );
    // The first attempt has no resend_count at all.
    let first_attempt_close = output
        .lines()
        .find(|line| line.contains("http.response.status_code=503"))
        .unwrap();
    assert!(
        !first_attempt_close.contains("resend_count"),
        "{first_attempt_close}"
    );
    for secret in [
        "super-secret-idempotency-key-0001",
        "token-that-must-not-leak",
        "4242424242424242",
    ] {
        assert!(!output.contains(secret), "{secret} leaked:\n{output}");
    }
    // The server did get the whole key.
    assert_eq!(
        single_key(&received(&server).await),
        "super-secret-idempotency-key-0001"
    );
}
