//! `RequestBuilder::prepare`: the intent decided as `send()` would, nothing sent.

use std::time::Duration;

use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{client, received};

#[tokio::test]
async fn prepare_decides_the_key_and_body_and_sends_nothing() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let (client, _) = client();

    let prepared = client
        .post(format!("{}/payments", server.uri()))
        .bearer_auth("secret")
        .body(r#"{"amount":500}"#)
        .deadline(Duration::from_secs(7))
        .prepare()
        .expect("a valid request");

    let start = prepared.start();
    let key = start.key().expect("a POST gets a generated key").as_str();
    assert_eq!(uuid::Uuid::parse_str(key).unwrap().get_version_num(), 4);
    let header = start.key_header().expect("keyed");
    assert_eq!(start.headers()[header], key);
    assert_eq!(start.body(), Some(&br#"{"amount":500}"#[..]));
    assert_eq!(start.deadline(), Some(Duration::from_secs(7)));
    assert_eq!(start.method(), "POST");
    assert_eq!(start.url().path(), "/payments");
    assert!(received(&server).await.is_empty(), "prepare sends nothing");
}

#[tokio::test]
async fn prepare_keeps_the_callers_key_and_makes_a_body_fn_body_once() {
    let (client, _) = client();
    let prepared = client
        .patch("http://127.0.0.1:9/orders/7")
        .idempotency_key("order-7-paid")
        .body_fn(|| reqwest::Body::from("made"))
        .prepare()
        .unwrap();
    let start = prepared.start();
    assert_eq!(start.key().unwrap().as_str(), "order-7-paid");
    assert_eq!(start.body(), Some(&b"made"[..]));
}

#[tokio::test]
async fn prepare_refuses_what_send_would_refuse_before_sending() {
    let (client, _) = client();
    let zero = client
        .post("http://127.0.0.1:9/")
        .deadline(Duration::ZERO)
        .prepare()
        .unwrap_err();
    assert!(!zero.is_outcome_unknown(), "{zero}");
    let bad_key = client
        .post("http://127.0.0.1:9/")
        .idempotency_key("line\nbreak")
        .prepare()
        .unwrap_err();
    assert!(bad_key.to_string().contains("key"), "{bad_key}");
    let bad_url = client.post("not a url").prepare().unwrap_err();
    assert!(bad_url.is_invalid_request(), "{bad_url}");
}
