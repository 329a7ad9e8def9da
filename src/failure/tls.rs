//! TLS: which backend the crate's clients use, and how each backend's errors are read.
//!
//! reqwest picks native-tls over rustls as soon as anything in the dependency tree
//! enables its `native-tls` feature, whatever this crate's features say. So the
//! clients this crate builds name the backend whose errors it reads
//! ([`readable_backend`]), and a client built elsewhere is read by every reader
//! there is: rustls's typed errors, native-tls's (with the `native-tls` feature), and
//! OpenSSL's messages whatever the features (native-tls on Linux). The rule for what
//! none of them can read is on [`TransportFailure`]'s docs ("TLS backends").

use std::error::Error as StdError;

use super::TransportFailure;

/// What a TLS reader made of one error in the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TlsReading {
    /// The handshake was rejected for a reason that will repeat (a certificate, a
    /// protocol version): never left, permanent.
    Permanent(TransportFailure),
    /// A TLS error that may clear: the connection broke mid-handshake, or an
    /// overloaded server answered `internal_error`.
    Transient,
}

impl TlsReading {
    pub(super) fn permanent(self) -> Option<TransportFailure> {
        match self {
            Self::Permanent(failure) => Some(failure),
            Self::Transient => None,
        }
    }
}

/// Selects the TLS backend whose errors the crate reads by type: rustls when it is
/// compiled in (reqwest would pick native-tls if another crate enabled it), else
/// native-tls (reqwest's `http3` would otherwise pick rustls). Applied to the
/// builders the crate makes itself; a later `tls_backend_*` call still wins.
pub(crate) fn readable_backend(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    #[cfg(feature = "rustls-no-provider")]
    let builder = builder.tls_backend_rustls();
    #[cfg(all(feature = "native-tls", not(feature = "rustls-no-provider")))]
    let builder = builder.tls_backend_native();
    builder
}

/// Reads `cause` (whose text is `message`) if it is a TLS error.
pub(super) fn read(cause: &(dyn StdError + 'static), message: &str) -> Option<TlsReading> {
    #[cfg(feature = "rustls-no-provider")]
    if let Some(error) = cause.downcast_ref::<rustls::Error>() {
        return Some(rustls_reading(error));
    }
    #[cfg(feature = "native-tls")]
    if let Some(error) = cause.downcast_ref::<native_tls::Error>() {
        return Some(native_tls_reading(error, message));
    }
    is_openssl(cause, message).then(|| openssl_reading(message))
}

/// True for a TLS error the readers understand (for the give-up message's detail).
pub(super) fn is_tls(cause: &(dyn StdError + 'static)) -> bool {
    #[cfg(feature = "rustls-no-provider")]
    if cause.is::<rustls::Error>() {
        return true;
    }
    #[cfg(feature = "native-tls")]
    if cause.is::<native_tls::Error>() {
        return true;
    }
    is_openssl(cause, &cause.to_string())
}

/// OpenSSL names its TLS library in every error it formats
/// (`error:0A000086:SSL routines:…`), in 1.1 and 3 alike. The layers that carry the
/// URL (reqwest's and hyper's errors) are never read as text.
const OPENSSL_LIBRARY: &str = "SSL routines";

fn is_openssl(cause: &(dyn StdError + 'static), message: &str) -> bool {
    message.contains(OPENSSL_LIBRARY)
        && !cause.is::<reqwest::Error>()
        && !cause.is::<hyper::Error>()
}

#[cfg(feature = "rustls-no-provider")]
fn rustls_reading(error: &rustls::Error) -> TlsReading {
    use rustls::{AlertDescription, CertificateError, Error};
    TlsReading::Permanent(match error {
        Error::InvalidCertificate(certificate) => match certificate {
            CertificateError::UnknownIssuer => TransportFailure::UntrustedCertificate,
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => TransportFailure::ExpiredCertificate,
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                TransportFailure::CertificateHostMismatch
            }
            _ => TransportFailure::InvalidCertificate,
        },
        Error::InvalidCertRevocationList(_) | Error::NoCertificatesPresented => {
            TransportFailure::InvalidCertificate
        }
        // No common version or cipher; the peer does not speak TLS (plain HTTP on
        // an https port); the server refused the handshake.
        Error::PeerIncompatible(_)
        | Error::InvalidMessage(_)
        | Error::UnsupportedNameType
        | Error::NoApplicationProtocol => TransportFailure::TlsProtocol,
        // An overloaded server may fail with `internal_error`; that one may clear.
        Error::AlertReceived(AlertDescription::InternalError) => return TlsReading::Transient,
        Error::AlertReceived(_) => TransportFailure::TlsProtocol,
        _ => return TlsReading::Transient,
    })
}

/// native-tls's errors are opaque; one with an `io::Error` below it is a broken
/// connection (transient), anything else a handshake the backend rejected. Which
/// problem is read from OpenSSL's words (Linux); other platforms' messages fall back
/// to `InvalidCertificate` or `TlsProtocol`, permanent all the same.
#[cfg(feature = "native-tls")]
fn native_tls_reading(error: &native_tls::Error, message: &str) -> TlsReading {
    let mut io_below = false;
    super::causes::for_each_cause(error, |cause| io_below |= cause.is::<std::io::Error>());
    if io_below {
        return TlsReading::Transient;
    }
    openssl_reading(message)
}

/// What OpenSSL's words say: a certificate verify failure names its reason in
/// parentheses (native-tls appends it); an end of stream or an `internal_error` alert
/// mid-handshake may clear; any other handshake failure will repeat.
fn openssl_reading(message: &str) -> TlsReading {
    const UNTRUSTED: [&str; 4] = [
        "self-signed certificate",
        "self signed certificate",
        "unable to get local issuer certificate",
        "unable to get issuer certificate",
    ];
    const EXPIRED: [&str; 2] = ["certificate has expired", "certificate is not yet valid"];
    const HOST: [&str; 2] = ["Hostname mismatch", "IP address mismatch"];
    const MAY_CLEAR: [&str; 2] = ["unexpected eof", "alert internal error"];
    let has = |needles: &[&str]| needles.iter().any(|needle| message.contains(needle));
    TlsReading::Permanent(if has(&MAY_CLEAR) {
        return TlsReading::Transient;
    } else if has(&UNTRUSTED) {
        TransportFailure::UntrustedCertificate
    } else if has(&EXPIRED) {
        TransportFailure::ExpiredCertificate
    } else if has(&HOST) {
        TransportFailure::CertificateHostMismatch
    } else if message.contains("certificate") {
        TransportFailure::InvalidCertificate
    } else {
        TransportFailure::TlsProtocol
    })
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;
    use crate::failure::chain::sort;
    use crate::failure::tests::{connect, layer, Layer};
    use TransportFailure::*;

    fn openssl(message: &str) -> TlsReading {
        openssl_reading(message)
    }

    fn verify(reason: &str) -> TlsReading {
        openssl(&format!(
            "error:0A000086:SSL routines:tls_post_process_server_certificate:\
             certificate verify failed:../ssl/statem/statem_clnt.c:1889: ({reason})"
        ))
    }

    #[test]
    fn openssl_verify_messages_name_the_certificate_problem() {
        let permanent = TlsReading::Permanent;
        assert_eq!(
            verify("self-signed certificate"),
            permanent(UntrustedCertificate)
        );
        assert_eq!(
            verify("unable to get local issuer certificate"),
            permanent(UntrustedCertificate)
        );
        assert_eq!(
            verify("certificate has expired"),
            permanent(ExpiredCertificate)
        );
        assert_eq!(
            verify("Hostname mismatch"),
            permanent(CertificateHostMismatch)
        );
        assert_eq!(verify("certificate revoked"), permanent(InvalidCertificate));
        assert_eq!(
            openssl("error:0A00042E:SSL routines::tlsv1 alert protocol version"),
            permanent(TlsProtocol)
        );
    }

    #[test]
    fn openssl_mid_handshake_closes_and_internal_errors_may_clear() {
        // OpenSSL 3 reports a peer that closed mid-handshake as an SSL error, not an
        // io::Error: rustls calls the same event an unexpected EOF (transient).
        assert_eq!(
            openssl("error:0A000126:SSL routines::unexpected eof while reading"),
            TlsReading::Transient
        );
        assert_eq!(
            openssl("error:0A000438:SSL routines::tlsv1 alert internal error"),
            TlsReading::Transient
        );
    }

    /// native-tls's error as another crate's reqwest hands it over: no type this
    /// crate can name, only OpenSSL's words, under hyper-util's connect layer.
    fn untyped_handshake(message: &'static str) -> TransportFailure {
        sort(
            connect(),
            &layer("client error (Connect)", Layer(message, None)),
        )
    }

    #[test]
    fn openssl_words_are_read_without_the_native_tls_type() {
        assert_eq!(
            untyped_handshake(
                "error:0A000086:SSL routines:tls_post_process_server_certificate:\
                 certificate verify failed:../ssl/statem/statem_clnt.c:1889: \
                 (self-signed certificate)"
            ),
            UntrustedCertificate
        );
        assert_eq!(
            untyped_handshake("error:0A00010B:SSL routines::wrong version number"),
            TlsProtocol
        );
        // A close mid-handshake, and anything that is not OpenSSL's: still transient.
        assert_eq!(
            untyped_handshake("error:0A000126:SSL routines::unexpected eof while reading"),
            Connect
        );
        assert_eq!(untyped_handshake("unexpected EOF"), Connect);
        assert_eq!(
            untyped_handshake("The certificate was not trusted (some other backend)"),
            Connect,
            "a handshake no reader can read stays never left, transient"
        );
    }

    #[test]
    fn the_first_tls_error_in_the_chain_decides() {
        // A transient reading is final: the causes below it are the same failure.
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(read(&reset, "connection reset"), None);
        let closed = layer(
            "error:0A000126:SSL routines::unexpected eof while reading",
            Layer(
                "error:0A000086:SSL routines::certificate verify failed",
                None,
            ),
        );
        assert_eq!(
            sort(connect(), &layer("client error (Connect)", closed)),
            Connect
        );
    }

    /// The untyped reader alone on a real native-tls error: what this crate sees
    /// when another crate enabled reqwest's native-tls and this crate's `native-tls`
    /// feature is off (no type to downcast to, only OpenSSL's words).
    #[cfg(feature = "native-tls")]
    #[tokio::test]
    async fn openssl_words_alone_read_a_real_native_tls_error() {
        let port = self_signed_server().await;
        let client = reqwest::Client::builder()
            .tls_backend_native()
            .retry(reqwest::retry::never())
            .build()
            .unwrap();
        let error = client
            .get(format!("https://127.0.0.1:{port}/"))
            .send()
            .await
            .expect_err("self-signed");
        let mut untyped = None;
        crate::failure::causes::for_each_cause(&error, |cause| {
            let message = cause.to_string();
            if untyped.is_none() && is_openssl(cause, &message) {
                untyped = Some(openssl_reading(&message));
            }
        });
        assert_eq!(
            untyped,
            Some(TlsReading::Permanent(UntrustedCertificate)),
            "{error:?}"
        );
    }

    /// A rustls server on 127.0.0.1 with a self-signed certificate; its port.
    #[cfg(feature = "native-tls")]
    async fn self_signed_server() -> u16 {
        use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
        use std::sync::Arc;

        let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
        let key = PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der());
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![certified.cert.der().clone()],
                PrivateKeyDer::Pkcs8(key),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                // The client refuses the handshake; nothing to serve.
                let _ = acceptor.accept(tcp).await;
            }
        });
        port
    }

    #[cfg(feature = "rustls-no-provider")]
    mod rustls_errors {
        use super::*;
        use crate::failure::tests::request;
        use rustls::{AlertDescription, CertificateError, Error, PeerIncompatible};

        /// As tokio-rustls reports a handshake failure, under hyper-util's layer.
        fn handshake(error: Error) -> TransportFailure {
            let io = io::Error::new(io::ErrorKind::InvalidData, error);
            sort(
                connect(),
                &layer("client error (Connect)", io::Error::other(io)),
            )
        }

        #[test]
        fn certificate_problems_are_named() {
            let cases = [
                (
                    CertificateError::UnknownIssuer,
                    TransportFailure::UntrustedCertificate,
                ),
                (
                    CertificateError::Expired,
                    TransportFailure::ExpiredCertificate,
                ),
                (
                    CertificateError::NotValidYet,
                    TransportFailure::ExpiredCertificate,
                ),
                (
                    CertificateError::NotValidForName,
                    TransportFailure::CertificateHostMismatch,
                ),
                (
                    CertificateError::Revoked,
                    TransportFailure::InvalidCertificate,
                ),
                (
                    CertificateError::BadSignature,
                    TransportFailure::InvalidCertificate,
                ),
            ];
            for (error, expected) in cases {
                let failure = handshake(Error::InvalidCertificate(error.clone()));
                assert_eq!(failure, expected, "{error:?}");
                assert!(failure.proves_not_sent() && !failure.is_transient());
            }
        }

        #[test]
        fn protocol_mismatches_are_permanent_and_internal_errors_are_not() {
            assert_eq!(
                handshake(Error::PeerIncompatible(
                    PeerIncompatible::Tls12NotOfferedOrEnabled
                )),
                TransportFailure::TlsProtocol
            );
            assert_eq!(
                handshake(Error::AlertReceived(AlertDescription::ProtocolVersion)),
                TransportFailure::TlsProtocol
            );
            assert_eq!(
                handshake(Error::AlertReceived(AlertDescription::InternalError)),
                TransportFailure::Connect
            );
        }

        #[test]
        fn a_tls_error_after_connecting_is_not_a_certificate_problem() {
            let io = io::Error::new(
                io::ErrorKind::InvalidData,
                Error::InvalidCertificate(CertificateError::UnknownIssuer),
            );
            // Not in the connect phase: whatever it is, it is not a refused handshake.
            assert_eq!(
                sort(request(), &layer("x", io)),
                TransportFailure::ConnectionLost
            );
        }
    }
}
