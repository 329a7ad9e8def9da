//! Replayable bodies are resent whole; streams are sent once.

use bytes::Bytes;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{client, fail_then_ok, received};

#[tokio::test]
async fn a_streamed_body_is_sent_once_and_never_replayed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .expect(1)
        .mount(&server)
        .await;
    let (client, sleeper) = client();
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from_static(b"part-1,")),
        Ok(Bytes::from_static(b"part-2")),
    ];
    let stream = futures_util::stream::iter(chunks);
    let error = client
        .post(server.uri())
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_body_not_replayable(), "{error}");
    assert_eq!(error.attempts(), 1);
    assert!(sleeper.delays().is_empty());
    assert_eq!(received(&server).await[0].body, b"part-1,part-2");
}

#[tokio::test]
async fn a_streamed_body_that_succeeds_is_fine() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .expect(1)
        .mount(&server)
        .await;
    let (client, _) = client();
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![Ok(Bytes::from_static(b"all"))];
    let response = client
        .post(server.uri())
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
}

#[tokio::test]
async fn a_json_body_is_identical_on_every_attempt() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(fail_then_ok(502, 2))
        .mount(&server)
        .await;
    let (client, _) = client();
    client
        .post(server.uri())
        .json(&serde_json::json!({"amount": 500, "currency": "EUR"}))
        .send()
        .await
        .unwrap();
    let requests = received(&server).await;
    assert_eq!(requests.len(), 3);
    assert!(requests.windows(2).all(|pair| pair[0].body == pair[1].body));
    let body: serde_json::Value = serde_json::from_slice(&requests[2].body).unwrap();
    assert_eq!(body["amount"], 500);
}

#[tokio::test]
async fn a_body_factory_makes_a_complete_identical_stream_for_every_attempt() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let server = MockServer::start().await;
    Mock::given(method("PUT"))
        .respond_with(fail_then_ok(503, 2))
        .expect(3)
        .mount(&server)
        .await;
    let (client, _) = client();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    // 256 KiB in 64 chunks, never held as one buffer by the client.
    let response = client
        .put(server.uri())
        .body_fn(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            let chunks = (0..64u8).map(|i| Ok::<_, std::io::Error>(Bytes::from(vec![i; 4096])));
            reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
        })
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "one fresh body per attempt"
    );
    let requests = received(&server).await;
    let expected: Vec<u8> = (0..64u8).flat_map(|i| vec![i; 4096]).collect();
    for request in &requests {
        assert_eq!(request.body.len(), expected.len());
        assert_eq!(
            request.body, expected,
            "every attempt carries the whole body"
        );
    }
}

#[tokio::test]
async fn with_one_attempt_allowed_a_streamed_body_runs_out_of_attempts_not_replays() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .expect(1)
        .mount(&server)
        .await;
    let (client, sleeper) = crate::support::client_with(|p| p.max_attempts(1));
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![Ok(Bytes::from_static(b"once"))];
    let error = client
        .post(server.uri())
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap_err();
    // No retry was allowed anyway: the body's replayability is not the reason.
    assert!(error.is_attempts_exhausted(), "{error}");
    assert_eq!(error.attempts(), 1);
    assert!(sleeper.delays().is_empty());
    assert_eq!(received(&server).await[0].body, b"once");
}
