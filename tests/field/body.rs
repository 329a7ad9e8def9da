//! A request body stream that fails is the caller's problem: not retried, and the
//! outcome is known (the server never got a complete request).

use bytes::Bytes;
use reqwest_resilience::{RecordingSleeper, ResilientClient, TransportFailure};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{failures, policy};

/// A PUT whose `body_fn` stream yields an I/O error is the caller's failure: sent
/// once, not retried, and not reported as a lost connection with an unknown outcome.
#[tokio::test]
async fn a_failing_body_stream_is_sent_once_and_not_retried() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let sleeper = RecordingSleeper::new();
    let client = ResilientClient::with_policy(policy(&sleeper).build().unwrap());
    let error = client
        .put(format!("{}/reports/7", server.uri()))
        .body_fn(|| {
            // The cause is an I/O error of a "network" kind, nested deep in the chain.
            let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(Bytes::from_static(b"first part")),
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "the file went away",
                )),
            ];
            reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
        })
        .send()
        .await
        .expect_err("the body cannot be produced");
    assert_eq!(failures(&error), [TransportFailure::Body], "{error}");
    assert!(error.is_not_retryable(), "{error}");
    assert!(!error.is_outcome_unknown(), "{error}");
    assert!(sleeper.delays().is_empty());
    assert!(error.to_string().contains("request body"), "{error}");
    // The server never received a complete request.
    assert!(server.received_requests().await.unwrap().is_empty());
}
