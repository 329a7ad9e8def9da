//! HTTPS with certificates made in the test: success through a custom root, and
//! certificate and protocol failures that stop after exactly one attempt — through
//! the clients the crate builds (rustls, whatever else is compiled in) and, with
//! `--features native-tls`, through clients on native-tls (`tls_backends.rs`).

use reqwest_resilience::{RecordingSleeper, ResilientClient, RetryPolicy, TransportFailure};

use crate::support::certs::{self_signed, TestCa};
use crate::support::tls_server::TlsServer;
use crate::support::{failures, policy};

const LOCAL_NAMES: [&str; 2] = ["127.0.0.1", "localhost"];

/// A client trusting only `ca`. The crate's builder selects rustls even when
/// native-tls is compiled in too (`--all-features`), where reqwest would pick native-tls.
fn client_trusting(ca: &TestCa, policy: RetryPolicy) -> ResilientClient {
    let builder = ResilientClient::reqwest_builder_for(&policy).tls_certs_only([ca.root()]);
    ResilientClient::from_parts(builder.build().unwrap(), policy)
}

/// Sends a keyed POST that must fail on its first and only attempt with `expected`.
async fn assert_refused_once(server: &TlsServer, client: &ResilientClient, expected: &str) {
    let error = client
        .post(server.url("127.0.0.1", "/payments"))
        .body(r#"{"amount":500}"#)
        .send()
        .await
        .expect_err("the handshake must fail");
    assert_eq!(error.attempts(), 1, "{error}");
    assert!(error.is_not_retryable(), "{error}");
    assert!(!error.is_outcome_unknown(), "{error}");
    let text = error.to_string();
    assert!(text.contains(expected), "{text}");
    assert!(
        !text.contains(error.idempotency_key().unwrap().as_str()),
        "{text}"
    );
    assert_eq!(server.connections(), 1, "one handshake tried");
    assert!(server.received().is_empty(), "no request got through");
}

#[tokio::test]
async fn https_through_a_custom_root_keeps_one_key_across_attempts() {
    let ca = TestCa::new("test CA");
    let server = TlsServer::start(ca.leaf(&LOCAL_NAMES), &[503]).await;
    let sleeper = RecordingSleeper::new();
    let client = client_trusting(&ca, policy(&sleeper).build().unwrap());
    let response = client
        .post(server.url("127.0.0.1", "/payments"))
        .body(r#"{"amount":500}"#)
        .send()
        .await
        .expect("503, then 200 over HTTPS");
    assert_eq!(response.status(), 200);
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert!(received[0].idempotency_key.is_some());
    assert_eq!(received[0].idempotency_key, received[1].idempotency_key);
    assert_ne!(received[0].request_id, received[1].request_id);
    assert!(received.iter().all(|r| r.body == br#"{"amount":500}"#));
    assert_eq!(sleeper.delays().len(), 1);
}

/// An untrusted self-signed certificate is permanent: one attempt, not one per
/// allowed attempt. Through the client `with_policy` builds (the platform's roots).
#[tokio::test]
async fn an_untrusted_self_signed_certificate_fails_after_one_attempt() {
    let server = TlsServer::start(self_signed(&LOCAL_NAMES), &[]).await;
    let sleeper = RecordingSleeper::new();
    let client = ResilientClient::with_policy(policy(&sleeper).build().unwrap());
    let error = client
        .post(server.url("127.0.0.1", "/payments"))
        .body("{}")
        .send()
        .await
        .expect_err("nobody trusts a self-signed certificate");
    assert_eq!(error.attempts(), 1, "{error}");
    assert!(
        error.is_not_retryable() && !error.is_outcome_unknown(),
        "{error}"
    );
    // On rustls whatever else is compiled in: `with_policy` selects it.
    assert_eq!(
        failures(&error),
        [TransportFailure::UntrustedCertificate],
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("the certificate of 127.0.0.1 is not signed by a trusted root"),
        "{error}"
    );
    assert_eq!(server.connections(), 1);
    assert!(sleeper.delays().is_empty());
}

#[tokio::test]
async fn a_certificate_from_an_unknown_authority_is_untrusted() {
    let ca = TestCa::new("trusted test CA");
    let other_ca = TestCa::new("unknown test CA");
    let server = TlsServer::start(other_ca.leaf(&LOCAL_NAMES), &[]).await;
    let client = client_trusting(&ca, policy(&RecordingSleeper::new()).build().unwrap());
    assert_refused_once(
        &server,
        &client,
        "the certificate of 127.0.0.1 is not signed by a trusted root; if the server uses a \
         private CA",
    )
    .await;
}

#[tokio::test]
async fn an_expired_certificate_fails_after_one_attempt() {
    let ca = TestCa::new("test CA");
    let server = TlsServer::start(ca.expired_leaf(&LOCAL_NAMES), &[]).await;
    let client = client_trusting(&ca, policy(&RecordingSleeper::new()).build().unwrap());
    assert_refused_once(&server, &client, "the certificate of 127.0.0.1 has expired").await;
}

#[tokio::test]
async fn a_certificate_for_another_host_fails_after_one_attempt() {
    let ca = TestCa::new("test CA");
    let server = TlsServer::start(ca.leaf(&["payments.example"]), &[]).await;
    let client = client_trusting(&ca, policy(&RecordingSleeper::new()).build().unwrap());
    assert_refused_once(
        &server,
        &client,
        "the certificate of 127.0.0.1 is for another host",
    )
    .await;
}

#[tokio::test]
async fn no_common_tls_version_fails_after_one_attempt() {
    let ca = TestCa::new("test CA");
    let server =
        TlsServer::start_with_versions(ca.leaf(&LOCAL_NAMES), &[], &[&rustls::version::TLS13])
            .await;
    let policy = policy(&RecordingSleeper::new()).build().unwrap();
    let builder = ResilientClient::reqwest_builder_for(&policy)
        .tls_certs_only([ca.root()])
        .tls_version_max(reqwest::tls::Version::TLS_1_2);
    let client = ResilientClient::from_parts(builder.build().unwrap(), policy);
    assert_refused_once(&server, &client, "TLS handshake failed").await;
}

#[tokio::test]
async fn https_to_a_plain_http_port_fails_after_one_attempt() {
    let server = wiremock::MockServer::start().await;
    let ca = TestCa::new("test CA");
    let client = client_trusting(&ca, policy(&RecordingSleeper::new()).build().unwrap());
    let url = server.uri().replacen("http://", "https://", 1);
    let error = client.get(url).send().await.expect_err("not TLS");
    assert_eq!(failures(&error), [TransportFailure::TlsProtocol], "{error}");
    assert!(!error.is_outcome_unknown());
}
