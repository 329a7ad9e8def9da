//! Replayable bodies are resent whole; streams are sent once.

use bytes::Bytes;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{client, received, Sequence};

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
        .respond_with(Sequence::fail_then_ok(502, 2))
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
