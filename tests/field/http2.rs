//! HTTP/2: a refused stream and a stream excluded by GOAWAY never reached the
//! application, so even an unkeyed POST is sent again; other resets may have.

use reqwest_resilience::{
    RecordingSleeper, ResilientClient, ResponseExt, RetryPolicy, TransportFailure,
};

use crate::support::goaway_server::GoAwayServer;
use crate::support::h2_server::RefusingH2Server;
use crate::support::{failures, policy};

/// HTTP/2 over cleartext; reqwest's own retry off, as on every client the crate builds.
fn h2_client(policy: RetryPolicy) -> ResilientClient {
    let http = ResilientClient::reqwest_builder_for(&policy)
        .http2_prior_knowledge()
        .build()
        .unwrap();
    ResilientClient::from_parts(http, policy)
}

fn first_failure(response: &reqwest::Response) -> Option<TransportFailure> {
    match response.attempt_log()?.attempts().first()?.outcome() {
        reqwest_resilience::AttemptOutcome::Failed(failure) => Some(*failure),
        _ => None,
    }
}

#[tokio::test]
async fn a_refused_stream_is_resent_for_an_unkeyed_post() {
    let server = RefusingH2Server::start(1, h2::Reason::REFUSED_STREAM).await;
    let client = h2_client(policy(&RecordingSleeper::new()).build().unwrap());
    let response = client
        .post(format!("http://{}/payments", server.addr))
        .without_idempotency_key()
        .body("pay 5")
        .send()
        .await
        .expect("refused once, then processed");
    assert_eq!(response.status(), 200);
    assert_eq!(response.attempt_log().unwrap().len(), 2);
    assert_eq!(
        first_failure(&response),
        Some(TransportFailure::RefusedStream)
    );
    assert_eq!(server.streams(), 2);
    assert_eq!(server.effects(), [b"pay 5".to_vec()], "exactly one effect");
}

#[tokio::test]
async fn a_stream_above_the_goaway_last_stream_id_is_resent_for_an_unkeyed_post() {
    let server = GoAwayServer::start().await;
    let client = h2_client(policy(&RecordingSleeper::new()).build().unwrap());
    let response = client
        .post(format!("http://{}/payments", server.addr))
        .without_idempotency_key()
        .body("pay 7")
        .send()
        .await
        .expect("excluded once, then processed on a new connection");
    assert_eq!(response.status(), 200);
    assert_eq!(response.attempt_log().unwrap().len(), 2);
    assert_eq!(first_failure(&response), Some(TransportFailure::GoAway));
    assert_eq!(server.excluded(), 1);
    assert_eq!(server.effects(), [b"pay 7".to_vec()], "exactly one effect");
}

#[tokio::test]
async fn another_stream_reset_leaves_an_unkeyed_post_unknown() {
    let server = RefusingH2Server::start(1, h2::Reason::INTERNAL_ERROR).await;
    let sleeper = RecordingSleeper::new();
    let client = h2_client(policy(&sleeper).build().unwrap());
    let error = client
        .post(format!("http://{}/payments", server.addr))
        .without_idempotency_key()
        .body("pay 9")
        .send()
        .await
        .expect_err("not resent without a key");
    assert_eq!(failures(&error), [TransportFailure::StreamReset], "{error}");
    assert!(
        error.is_not_retryable() && error.is_outcome_unknown(),
        "{error}"
    );
    assert!(sleeper.delays().is_empty());
    assert!(server.effects().is_empty());
    // With a key the same reset is retried: the key makes a second effect harmless.
    let server = RefusingH2Server::start(1, h2::Reason::INTERNAL_ERROR).await;
    let keyed = client
        .post(format!("http://{}/payments", server.addr))
        .body("pay 9")
        .send()
        .await
        .expect("keyed: retried");
    assert_eq!(keyed.status(), 200);
    assert_eq!(keyed.attempt_log().unwrap().len(), 2);
    assert_eq!(first_failure(&keyed), Some(TransportFailure::StreamReset));
}
