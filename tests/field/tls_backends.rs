//! Whichever TLS backend reqwest ended up with, a self-signed certificate is
//! `UntrustedCertificate` after one attempt. reqwest picks native-tls as soon as
//! anything in the tree enables it; run with `--features native-tls` to have both
//! backends compiled in, as in an application whose other dependencies want native-tls.

use reqwest_resilience::{Error, RecordingSleeper, ResilientClient, RetryPolicy, TransportFailure};

use crate::support::certs::self_signed;
use crate::support::tls_server::TlsServer;
use crate::support::{failures, policy};

const LOCAL_NAMES: [&str; 2] = ["127.0.0.1", "localhost"];

/// A keyed POST to a fresh self-signed server through the client `make` builds: it
/// must stop after one handshake, not retried, outcome known.
async fn refused_by_a_self_signed_server(
    make: impl FnOnce(RetryPolicy) -> ResilientClient,
) -> Error {
    let server = TlsServer::start(self_signed(&LOCAL_NAMES), &[]).await;
    let sleeper = RecordingSleeper::new();
    let client = make(policy(&sleeper).build().unwrap());
    let error = client
        .post(server.url("127.0.0.1", "/payments"))
        .body("{}")
        .send()
        .await
        .expect_err("nobody trusts a self-signed certificate");
    assert_eq!(
        failures(&error),
        [TransportFailure::UntrustedCertificate],
        "{error}"
    );
    assert!(
        error.is_not_retryable() && !error.is_outcome_unknown(),
        "{error}"
    );
    assert!(sleeper.delays().is_empty(), "no pause: {error}");
    assert_eq!(server.connections(), 1, "one handshake: {error}");
    assert!(server.received().is_empty());
    error
}

/// rustls's words for an unknown issuer, in the error's detail.
const RUSTLS_UNTRUSTED: &str = "UnknownIssuer";

#[tokio::test]
async fn with_policy_reads_a_self_signed_certificate_as_untrusted() {
    let error = refused_by_a_self_signed_server(ResilientClient::with_policy).await;
    assert!(error.to_string().contains(RUSTLS_UNTRUSTED), "{error}");
}

#[tokio::test]
async fn reqwest_builder_reads_a_self_signed_certificate_as_untrusted() {
    let error = refused_by_a_self_signed_server(|policy| {
        let http = ResilientClient::reqwest_builder().build().unwrap();
        ResilientClient::from_parts(http, policy)
    })
    .await;
    assert!(error.to_string().contains(RUSTLS_UNTRUSTED), "{error}");
}

#[tokio::test]
async fn reqwest_builder_for_reads_a_self_signed_certificate_as_untrusted() {
    let error = refused_by_a_self_signed_server(|policy| {
        let http = ResilientClient::reqwest_builder_for(&policy)
            .build()
            .unwrap();
        ResilientClient::from_parts(http, policy)
    })
    .await;
    assert!(error.to_string().contains(RUSTLS_UNTRUSTED), "{error}");
}

/// Clients on native-tls: chosen explicitly, or reqwest's default with both compiled in.
#[cfg(feature = "native-tls")]
mod native_tls {
    use super::*;
    use crate::support::certs::TestCa;

    /// OpenSSL's verify reason, which only native-tls's error carries: proof that the
    /// handshake really ran on native-tls.
    const OPENSSL_UNTRUSTED: &str = "self-signed certificate";

    #[tokio::test]
    async fn a_prebuilt_native_tls_client_reads_a_self_signed_certificate_as_untrusted() {
        let error = refused_by_a_self_signed_server(|policy| {
            let http = ResilientClient::reqwest_builder_for(&policy)
                .tls_backend_native()
                .build()
                .unwrap();
            ResilientClient::from_parts(http, policy)
        })
        .await;
        assert!(error.to_string().contains(OPENSSL_UNTRUSTED), "{error}");
    }

    #[tokio::test]
    async fn from_builder_keeps_reqwest_s_default_backend_and_still_reads_it() {
        // With both backends compiled in, reqwest's own default is native-tls.
        let error = refused_by_a_self_signed_server(|policy| {
            ResilientClient::from_builder(reqwest::Client::builder(), policy).unwrap()
        })
        .await;
        assert!(error.to_string().contains(OPENSSL_UNTRUSTED), "{error}");
    }

    /// Expired and wrong-host certificates through a native-tls client trusting the CA.
    #[tokio::test]
    async fn a_native_tls_client_names_expired_and_wrong_host_certificates() {
        let ca = TestCa::new("test CA");
        let cases = [
            (
                ca.expired_leaf(&LOCAL_NAMES),
                TransportFailure::ExpiredCertificate,
            ),
            (
                ca.leaf(&["payments.example"]),
                TransportFailure::CertificateHostMismatch,
            ),
        ];
        for (identity, expected) in cases {
            let server = TlsServer::start(identity, &[]).await;
            let policy = policy(&RecordingSleeper::new()).build().unwrap();
            let http = ResilientClient::reqwest_builder_for(&policy)
                .tls_backend_native()
                .tls_certs_only([ca.root()])
                .build()
                .unwrap();
            let client = ResilientClient::from_parts(http, policy);
            let error = client
                .get(server.url("127.0.0.1", "/"))
                .send()
                .await
                .expect_err("refused certificate");
            assert_eq!(failures(&error), [expected], "{error}");
            assert!(error.is_not_retryable(), "{error}");
            assert!(
                error.to_string().contains("SSL routines"),
                "native-tls: {error}"
            );
            assert_eq!(server.connections(), 1);
        }
    }
}
