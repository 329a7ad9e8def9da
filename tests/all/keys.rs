//! One intent = one key, sent unchanged on every attempt; one request id per attempt.

use reqwest_resilience::{KeyAttachment, KeyFormat};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    assert_distinct_request_ids, client, client_with, fail_then_ok, header_values, received,
    single_key,
};

#[tokio::test]
async fn same_key_on_every_attempt_and_a_fresh_request_id_each() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/payments"))
        .respond_with(fail_then_ok(503, 2))
        .expect(3)
        .mount(&server)
        .await;
    let (client, _) = client();

    let response = client
        .post(format!("{}/payments", server.uri()))
        .body(r#"{"amount":500}"#)
        .send()
        .await
        .expect("third attempt succeeds");

    assert_eq!(response.status(), 200);
    let requests = received(&server).await;
    assert_eq!(requests.len(), 3);
    let key = single_key(&requests);
    // The generated key is readable on success, to store with the order.
    let log = reqwest_resilience::ResponseExt::attempt_log(&response).unwrap();
    assert_eq!(log.idempotency_key().unwrap().as_str(), key);
    assert_eq!(uuid::Uuid::parse_str(&key).unwrap().get_version_num(), 4);
    assert_distinct_request_ids(&requests);
    // The body is replayed byte for byte.
    assert!(requests.iter().all(|r| r.body == br#"{"amount":500}"#));
}

#[tokio::test]
async fn caller_supplied_key_is_sent_verbatim_on_every_attempt() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(fail_then_ok(502, 1))
        .expect(2)
        .mount(&server)
        .await;
    let (client, _) = client();

    client
        .post(server.uri())
        .idempotency_key("form-opened-2026-11-30/order-1842")
        .send()
        .await
        .unwrap();

    let requests = received(&server).await;
    assert_eq!(single_key(&requests), "form-opened-2026-11-30/order-1842");
}

#[tokio::test]
async fn different_intents_get_different_keys() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .expect(3)
        .mount(&server)
        .await;
    let (client, _) = client();
    for _ in 0..3 {
        client.post(server.uri()).send().await.unwrap();
    }
    let mut keys = header_values(&received(&server).await, "idempotency-key");
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(keys.iter().all(Option::is_some));
}

#[tokio::test]
async fn idempotent_methods_get_no_key_unless_asked() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let (client, _) = client();
    client.get(server.uri()).send().await.unwrap();
    client.put(server.uri()).send().await.unwrap();
    client.delete(server.uri()).send().await.unwrap();
    client.patch(server.uri()).send().await.unwrap();
    client
        .post(server.uri())
        .without_idempotency_key()
        .send()
        .await
        .unwrap();
    let keys = header_values(&received(&server).await, "idempotency-key");
    assert_eq!(
        keys.iter().map(Option::is_some).collect::<Vec<_>>(),
        vec![false, false, false, true, false]
    );

    let (always, _) = client_with(|p| p.key_attachment(KeyAttachment::Always));
    always.get(server.uri()).send().await.unwrap();
    let (never, _) = client_with(|p| p.key_attachment(KeyAttachment::Never));
    never.post(server.uri()).send().await.unwrap();
    let keys = header_values(&received(&server).await, "idempotency-key");
    assert!(keys[5].is_some(), "Always attaches to GET");
    assert!(keys[6].is_none(), "Never attaches nothing");
}

#[tokio::test]
async fn sf_string_format_and_custom_header_names() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .mount(&server)
        .await;
    let (client, _) = client_with(|p| {
        p.key_format(KeyFormat::SfString)
            .key_header("X-Idempotency-Key")
            .request_id_header("X-Attempt-Id")
    });
    client
        .post(server.uri())
        .idempotency_key("k-42")
        .send()
        .await
        .unwrap();
    let requests = received(&server).await;
    assert_eq!(
        header_values(&requests, "x-idempotency-key"),
        vec![Some("\"k-42\"".to_owned())]
    );
    assert!(header_values(&requests, "x-attempt-id")[0].is_some());
    assert!(header_values(&requests, "idempotency-key")[0].is_none());
}

#[tokio::test]
async fn a_key_header_set_by_hand_is_the_callers_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(fail_then_ok(503, 1))
        .expect(2)
        .mount(&server)
        .await;
    let (client, _) = client();
    let response = client
        .post(server.uri())
        .header("Idempotency-Key", "by-hand-1")
        .send()
        .await
        .unwrap();
    // Retried (a POST is retried only with a key) under the hand-set key.
    assert_eq!(response.status(), 200);
    assert_eq!(single_key(&received(&server).await), "by-hand-1");
    let log = reqwest_resilience::ResponseExt::attempt_log(&response).unwrap();
    assert_eq!(log.idempotency_key().unwrap().as_str(), "by-hand-1");
}

#[tokio::test]
async fn invalid_caller_keys_fail_before_anything_is_sent() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(201))
        .expect(0)
        .mount(&server)
        .await;
    let (client, _) = client();
    for bad in ["line\nbreak", "tab\there", &"x".repeat(256), "", "ключ"] {
        let error = client
            .post(server.uri())
            .idempotency_key(bad)
            .send()
            .await
            .expect_err("invalid key refused");
        assert!(error.is_invalid_request(), "{error}");
        assert!(error.key_error().is_some());
        assert_eq!(error.attempts(), 0);
        assert!(!error.is_outcome_unknown());
    }
}

#[tokio::test]
async fn execute_sends_a_prebuilt_request_as_one_intent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(fail_then_ok(502, 1))
        .expect(2)
        .mount(&server)
        .await;
    let (client, _) = client();
    let request = client
        .inner()
        .post(server.uri())
        .body("{}")
        .build()
        .unwrap();
    let response = client.execute(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let requests = received(&server).await;
    single_key(&requests);
    assert_distinct_request_ids(&requests);
}
