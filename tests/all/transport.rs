//! Transport failures: connections lost before a response, connections refused.

use reqwest_resilience::{AttemptOutcome, TransportFailure};

use crate::support::{client, raw_header, DroppingServer};

#[tokio::test]
async fn lost_connection_is_retried_for_a_keyed_post_with_the_same_key() {
    let server = DroppingServer::start(1).await;
    let (client, sleeper) = client();
    let response = client
        .post(format!("{}/payments", server.url))
        .body(r#"{"amount":500}"#)
        .send()
        .await
        .expect("second attempt answered");
    assert_eq!(response.status(), 201);
    let received = server.received();
    assert_eq!(received.len(), 2, "committed once, replayed once");
    let keys: Vec<_> = received
        .iter()
        .map(|r| raw_header(r, "idempotency-key").unwrap())
        .collect();
    assert_eq!(keys[0], keys[1]);
    assert_ne!(
        raw_header(&received[0], "x-request-id"),
        raw_header(&received[1], "x-request-id")
    );
    assert!(received.iter().all(|r| r.ends_with(r#"{"amount":500}"#)));
    assert_eq!(sleeper.delays().len(), 1);
}

#[tokio::test]
async fn lost_connection_is_retried_for_get() {
    let server = DroppingServer::start(2).await;
    let (client, _) = client();
    let response = client.get(&server.url).send().await.unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(server.received().len(), 3);
    let log = reqwest_resilience::ResponseExt::attempt_log(&response).unwrap();
    assert_eq!(
        *log.attempts()[0].outcome(),
        AttemptOutcome::Failed(TransportFailure::ConnectionLost)
    );
}

#[tokio::test]
async fn unkeyed_post_is_not_retried_after_a_lost_connection_and_the_outcome_is_unknown() {
    let server = DroppingServer::start(1).await;
    let (client, sleeper) = client();
    let error = client
        .post(&server.url)
        .without_idempotency_key()
        .send()
        .await
        .unwrap_err();
    assert!(error.is_not_retryable(), "{error}");
    assert!(error.is_outcome_unknown());
    assert!(error.idempotency_key().is_none());
    assert!(error.transport_error().is_some());
    assert!(std::error::Error::source(&error).is_some());
    assert_eq!(server.received().len(), 1, "never sent twice without a key");
    assert!(sleeper.delays().is_empty());
}

#[tokio::test]
async fn refused_connection_is_retried_even_for_an_unkeyed_post() {
    // A port nobody listens on: bind, note the port, close.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let (client, sleeper) = client();
    let error = client
        .post(format!("http://{address}/"))
        .without_idempotency_key()
        .send()
        .await
        .unwrap_err();
    assert!(error.is_attempts_exhausted(), "{error}");
    assert_eq!(error.attempts(), 3);
    assert_eq!(sleeper.delays().len(), 2);
    assert!(
        !error.is_outcome_unknown(),
        "a request that never left has a known outcome"
    );
    assert!(error
        .attempt_log()
        .attempts()
        .iter()
        .all(|a| *a.outcome() == AttemptOutcome::Failed(TransportFailure::Connect)));
}

#[tokio::test]
async fn an_invalid_url_is_the_callers_error_and_nothing_is_sent() {
    let (client, _) = client();
    let error = client.get("not a url").send().await.unwrap_err();
    assert!(error.is_invalid_request(), "{error}");
    assert_eq!(error.attempts(), 0);
}

#[tokio::test]
async fn a_streamed_body_is_never_sent_twice_after_a_lost_connection() {
    use bytes::Bytes;
    let server = DroppingServer::start(1).await;
    let (client, sleeper) = client();
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![Ok(Bytes::from_static(b"upload"))];
    let error = client
        .post(&server.url)
        .idempotency_key("stream-1")
        .header("content-length", "6")
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_body_not_replayable(), "{error}");
    assert!(
        error.is_outcome_unknown(),
        "the upload may have been processed"
    );
    assert_eq!(
        server.received().len(),
        1,
        "never a second send of the stream"
    );
    assert!(sleeper.delays().is_empty());
}

#[tokio::test]
async fn credentials_in_the_url_never_reach_the_error_text() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let (client, _) = client();
    // Built by hand: reqwest's own builder would already move the credentials into an
    // Authorization header, a raw `Request` keeps them in the URL.
    let url = reqwest::Url::parse(&format!("http://alice:hunter2-secret@{address}/")).unwrap();
    let request = reqwest::Request::new(http::Method::GET, url);
    let error = client.execute(request).await.unwrap_err();
    assert!(error.is_attempts_exhausted(), "{error}");
    let shown = format!("{error} {error:?} {:?}", error.transport_error());
    assert!(!shown.contains("hunter2-secret"), "{shown}");
    assert!(!shown.contains("alice"), "{shown}");
}
