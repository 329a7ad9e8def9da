//! What a transport failure proves about the server: the failure taxonomy.
//!
//! reqwest's own predicates (`is_connect()`, `is_timeout()`, …) look at the top of an
//! error; the facts that decide a retry sit further down, in hyper-util, hyper, h2,
//! rustls and `std::io`. [`TransportFailure::of`] walks the whole source chain once —
//! at every `io::Error` it also looks through `get_ref()`, because `io::Error::source()`
//! skips the error it wraps — and sorts the failure into four classes.
//!
//! [`TransportFailure`]'s docs hold the table of classes and the DNS decision.

use std::error::Error as StdError;
use std::io;

/// A transport failure, sorted by what it proves about the server's side.
///
/// The crate sorts each failed attempt by walking the whole error source chain
/// (reqwest → hyper-util → hyper → h2 / rustls / io) into four classes:
///
/// | class | kinds | retried | outcome |
/// |---|---|---|---|
/// | never left, transient | `Connect`, `Dns`, `RefusedStream`, `GoAway`, `ClosedBeforeSend` | any method, key or not | known: nothing happened |
/// | never left, permanent | `InvalidRequest`, `NoTlsBackend`, `UntrustedCertificate`, `ExpiredCertificate`, `CertificateHostMismatch`, `InvalidCertificate`, `TlsProtocol` | no | known |
/// | may have been processed | `Timeout`, `ConnectionLost`, `StreamReset` (and `Other`, never retried) | idempotent methods, or with a key | unknown if it ends here |
/// | the caller's | `Body`, `Redirect` | no | known |
///
/// Unknown causes in the connect phase stay transient: the connection was not
/// established, so a retry is safe, and only causes known to repeat (a certificate, a
/// TLS version) stop the intent.
///
/// **DNS.** A failed lookup is *never left, transient*, whether the resolver said "no
/// such host" or "try again": the system resolver reports both through one opaque
/// `io::Error`, custom resolvers return anything, and NXDOMAIN is itself often
/// temporary (a record being published, split-horizon DNS, a resolver failing over).
/// Nothing was sent, so the cost of being wrong is a few attempts within the policy's
/// limits; the error then says `DNS lookup failed`.
///
/// **TLS backends.** rustls's errors are typed and sorted exactly. native-tls's are
/// opaque: the certificate problem is read from OpenSSL's verify message, and on
/// other platforms falls back to `InvalidCertificate` or `TlsProtocol` (permanent all
/// the same). With neither backend's types compiled in (`default-features = false`
/// and only your own reqwest's TLS), certificate failures look like connect failures.
///
/// Decide with the predicates ([`is_transient`](Self::is_transient),
/// [`proves_not_sent`](Self::proves_not_sent),
/// [`may_have_reached_server`](Self::may_have_reached_server)) rather than by
/// matching every kind: kinds are added as more failures can be told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportFailure {
    /// The connection could not be established (refused, connect timeout, reset
    /// during the TLS handshake): the request provably never left.
    Connect,
    /// The host name could not be resolved: the request never left.
    Dns,
    /// The HTTP/2 server refused the stream (`REFUSED_STREAM`) before processing it.
    RefusedStream,
    /// The HTTP/2 server's `GOAWAY` excluded this stream (its id was above the
    /// last-stream-id): the server did not process it.
    GoAway,
    /// The connection closed before the request was written (hyper returned the
    /// request unsent).
    ClosedBeforeSend,
    /// The request could not be built (bad URL or scheme, bad header): the caller's error.
    InvalidRequest,
    /// An `https` URL, but no TLS backend is compiled in (see the crate's features).
    NoTlsBackend,
    /// The server's certificate is not signed by a trusted root (e.g. self-signed).
    UntrustedCertificate,
    /// The server's certificate has expired or is not valid yet.
    ExpiredCertificate,
    /// The server's certificate is for another host name.
    CertificateHostMismatch,
    /// The server's certificate is otherwise invalid (revoked, bad signature, wrong
    /// purpose, …).
    InvalidCertificate,
    /// The TLS handshake failed for a reason that will repeat: no common protocol
    /// version or cipher, the server refused the handshake, or the server does not
    /// speak TLS on that port.
    TlsProtocol,
    /// The attempt timed out after the connection was made: the server may or may
    /// not have acted on it.
    Timeout,
    /// The connection closed or reset before a full response: the server may have acted.
    ConnectionLost,
    /// The HTTP/2 stream was reset for another reason than `REFUSED_STREAM`: the
    /// server may have acted.
    StreamReset,
    /// The request body could not be produced (a failing stream): the caller's, not
    /// transient.
    Body,
    /// A redirect loop or a redirect policy error: the caller's, not transient.
    Redirect,
    /// Anything else reqwest reports: not retried.
    Other,
}

/// The four classes of the taxonomy (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    NeverLeftTransient,
    NeverLeftPermanent,
    MayHaveBeenProcessed,
    Callers,
}

impl TransportFailure {
    /// Sorts a reqwest error by walking its whole source chain.
    pub(crate) fn of(error: &reqwest::Error) -> Self {
        sort(Surface::of(error), error)
    }

    fn class(&self) -> Class {
        match self {
            Self::Connect
            | Self::Dns
            | Self::RefusedStream
            | Self::GoAway
            | Self::ClosedBeforeSend => Class::NeverLeftTransient,
            Self::InvalidRequest
            | Self::NoTlsBackend
            | Self::UntrustedCertificate
            | Self::ExpiredCertificate
            | Self::CertificateHostMismatch
            | Self::InvalidCertificate
            | Self::TlsProtocol => Class::NeverLeftPermanent,
            Self::Timeout | Self::ConnectionLost | Self::StreamReset | Self::Other => {
                Class::MayHaveBeenProcessed
            }
            Self::Body | Self::Redirect => Class::Callers,
        }
    }

    /// True when another attempt may get a different answer (`Other` is not: an
    /// unknown failure is not retried).
    pub fn is_transient(&self) -> bool {
        self.class() == Class::NeverLeftTransient
            || matches!(
                self,
                Self::Timeout | Self::ConnectionLost | Self::StreamReset
            )
    }

    /// True when the failure proves the server did not process the request: it may
    /// be sent again whatever its method, with or without an idempotency key.
    pub fn proves_not_sent(&self) -> bool {
        matches!(
            self.class(),
            Class::NeverLeftTransient | Class::NeverLeftPermanent
        )
    }

    /// True when the server may have received the whole request and acted on it:
    /// if the intent ends here, its outcome is unknown. False for failures that
    /// never left and for the caller's own (a body stream that failed mid-way is an
    /// incomplete request; a redirect error follows a response).
    pub fn may_have_reached_server(&self) -> bool {
        self.class() == Class::MayHaveBeenProcessed
    }

    /// True for a problem with the server's TLS certificate.
    pub fn is_certificate(&self) -> bool {
        matches!(
            self,
            Self::UntrustedCertificate
                | Self::ExpiredCertificate
                | Self::CertificateHostMismatch
                | Self::InvalidCertificate
        )
    }

    /// The OpenTelemetry `error.type` value for this failure.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Connect => "connect",
            Self::Dns => "dns",
            Self::RefusedStream => "refused_stream",
            Self::GoAway => "goaway",
            Self::ClosedBeforeSend => "closed_before_send",
            Self::InvalidRequest => "invalid_request",
            Self::NoTlsBackend => "no_tls_backend",
            Self::UntrustedCertificate => "untrusted_certificate",
            Self::ExpiredCertificate => "expired_certificate",
            Self::CertificateHostMismatch => "certificate_host_mismatch",
            Self::InvalidCertificate => "invalid_certificate",
            Self::TlsProtocol => "tls_protocol",
            Self::Timeout => "timeout",
            Self::ConnectionLost => "connection_lost",
            Self::StreamReset => "stream_reset",
            Self::Body => "body",
            Self::Redirect => "redirect",
            Self::Other => "other",
        }
    }

    /// A phrase for people, as in `last: connection refused or timed out`.
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Connect => "could not connect",
            Self::Dns => "DNS lookup failed",
            Self::RefusedStream => "HTTP/2 stream refused by the server (REFUSED_STREAM)",
            Self::GoAway => "HTTP/2 GOAWAY excluded the request",
            Self::ClosedBeforeSend => "connection closed before the request was sent",
            Self::InvalidRequest => "invalid request",
            Self::NoTlsBackend => {
                "https URL but no TLS backend compiled in (enable the `default-tls` feature)"
            }
            Self::UntrustedCertificate => "TLS certificate not trusted (unknown issuer)",
            Self::ExpiredCertificate => "TLS certificate expired or not yet valid",
            Self::CertificateHostMismatch => "TLS certificate is for another host name",
            Self::InvalidCertificate => "TLS certificate invalid",
            Self::TlsProtocol => "TLS handshake failed (protocol mismatch or refused)",
            Self::Timeout => "timeout",
            Self::ConnectionLost => "connection lost before a full response",
            Self::StreamReset => "HTTP/2 stream reset by the server",
            Self::Body => "the request body stream failed",
            Self::Redirect => "redirect policy error",
            Self::Other => "transport error",
        }
    }
}

/// What reqwest's own predicates say about the top of the error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Surface {
    pub(crate) builder: bool,
    pub(crate) redirect: bool,
    pub(crate) body: bool,
    /// hyper-util's connector failed: nothing was written on any connection.
    pub(crate) connect: bool,
    pub(crate) dns: bool,
    pub(crate) timeout: bool,
    pub(crate) request: bool,
}

impl Surface {
    fn of(error: &reqwest::Error) -> Self {
        Self {
            builder: error.is_builder(),
            redirect: error.is_redirect(),
            body: error.is_body(),
            connect: error.is_connect(),
            dns: error.is_dns(),
            timeout: error.is_timeout(),
            request: error.is_request(),
        }
    }
}

/// What the walk found below the surface.
#[derive(Debug, Default)]
struct Clues {
    /// A permanent TLS failure (certificate, protocol), from the backend's error.
    tls: Option<TransportFailure>,
    /// hyper-util's connector refused the URL before connecting.
    url: Option<TransportFailure>,
    /// A nested reqwest body error: the caller's body stream failed.
    body: bool,
    /// hyper handed the request back unsent.
    unsent: bool,
    /// What an HTTP/2 error says about the stream.
    stream: Option<TransportFailure>,
}

/// The taxonomy: one pure function of the surface flags and the source chain.
pub(crate) fn sort(surface: Surface, error: &(dyn StdError + 'static)) -> TransportFailure {
    if surface.builder {
        return TransportFailure::InvalidRequest;
    }
    if surface.redirect {
        return TransportFailure::Redirect;
    }
    let clues = Clues::gather(error);
    if surface.body || clues.body {
        return TransportFailure::Body;
    }
    if surface.connect || surface.dns {
        return clues.tls.or(clues.url).unwrap_or(if surface.dns {
            TransportFailure::Dns
        } else {
            TransportFailure::Connect
        });
    }
    if clues.unsent {
        return TransportFailure::ClosedBeforeSend;
    }
    match clues.stream {
        Some(never_left) if never_left.proves_not_sent() => never_left,
        _ if surface.timeout => TransportFailure::Timeout,
        Some(reset) => reset,
        None if surface.request => TransportFailure::ConnectionLost,
        None => TransportFailure::Other,
    }
}

/// Longer chains than this are not real (and a cycle must not hang the walk).
const MAX_CHAIN: usize = 32;

/// Calls `visit` on every error in the chain, including the error each `io::Error`
/// wraps (which `io::Error::source()` skips: it returns the wrapped error's source).
pub(crate) fn for_each_cause(
    error: &(dyn StdError + 'static),
    mut visit: impl FnMut(&(dyn StdError + 'static)),
) {
    let mut next = Some(error);
    for _ in 0..MAX_CHAIN {
        let Some(current) = next else { return };
        visit(current);
        // io::Error inside io::Error: look through every layer.
        let mut wrapped = current;
        for _ in 0..MAX_CHAIN {
            let Some(inner) = wrapped
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
            else {
                break;
            };
            let inner: &(dyn StdError + 'static) = inner;
            visit(inner);
            wrapped = inner;
        }
        next = current.source();
    }
}

/// hyper-util's connector messages for URLs it will not connect to (it has no typed
/// accessor; `tests/field` pins the TLS one against the real connector).
const NOT_HTTP: &str = "invalid URL, scheme is not http";
const BAD_URL: [&str; 2] = [
    "invalid URL, scheme is missing",
    "invalid URL, host is missing",
];

impl Clues {
    fn gather(error: &(dyn StdError + 'static)) -> Self {
        let mut clues = Self::default();
        let mut depth = 0usize;
        for_each_cause(error, |cause| {
            depth += 1;
            if depth > 1 {
                if let Some(nested) = cause.downcast_ref::<reqwest::Error>() {
                    clues.body |= nested.is_body();
                }
            }
            if let Some(hyper) = cause.downcast_ref::<hyper::Error>() {
                clues.unsent |= hyper.is_canceled();
            }
            let message = cause.to_string();
            if message == NOT_HTTP {
                clues.url = Some(TransportFailure::NoTlsBackend);
            } else if BAD_URL.contains(&message.as_str()) {
                clues.url = Some(TransportFailure::InvalidRequest);
            }
            if clues.tls.is_none() {
                clues.tls = tls_failure(cause);
            }
            if clues.stream.is_none() {
                clues.stream = stream_failure(cause);
            }
        });
        clues
    }
}

/// A TLS failure that will repeat on the next attempt, if `cause` is one.
fn tls_failure(cause: &(dyn StdError + 'static)) -> Option<TransportFailure> {
    #[cfg(feature = "rustls-no-provider")]
    if let Some(error) = cause.downcast_ref::<rustls::Error>() {
        return rustls_failure(error);
    }
    #[cfg(feature = "native-tls")]
    if let Some(error) = cause.downcast_ref::<native_tls::Error>() {
        return native_tls_failure(error);
    }
    let _ = cause;
    None
}

#[cfg(feature = "rustls-no-provider")]
fn rustls_failure(error: &rustls::Error) -> Option<TransportFailure> {
    use rustls::{AlertDescription, CertificateError, Error};
    Some(match error {
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
        Error::AlertReceived(AlertDescription::InternalError) => return None,
        Error::AlertReceived(_) => TransportFailure::TlsProtocol,
        _ => return None,
    })
}

/// native-tls's errors are opaque; one with an `io::Error` below it is a broken
/// connection (transient), anything else a handshake the backend rejected. Which
/// problem is read from OpenSSL's verify message (Linux); other platforms' messages
/// fall back to `InvalidCertificate` or `TlsProtocol`, permanent all the same.
#[cfg(feature = "native-tls")]
fn native_tls_failure(error: &native_tls::Error) -> Option<TransportFailure> {
    let mut io_below = false;
    for_each_cause(error, |cause| io_below |= cause.is::<io::Error>());
    if io_below {
        return None;
    }
    Some(openssl_verify_failure(&error.to_string()))
}

#[cfg(any(feature = "native-tls", test))]
fn openssl_verify_failure(message: &str) -> TransportFailure {
    const UNTRUSTED: [&str; 4] = [
        "self-signed certificate",
        "self signed certificate",
        "unable to get local issuer certificate",
        "unable to get issuer certificate",
    ];
    const EXPIRED: [&str; 2] = ["certificate has expired", "certificate is not yet valid"];
    const HOST: [&str; 2] = ["Hostname mismatch", "IP address mismatch"];
    let has = |needles: &[&str]| needles.iter().any(|needle| message.contains(needle));
    if has(&UNTRUSTED) {
        TransportFailure::UntrustedCertificate
    } else if has(&EXPIRED) {
        TransportFailure::ExpiredCertificate
    } else if has(&HOST) {
        TransportFailure::CertificateHostMismatch
    } else if message.contains("certificate") {
        TransportFailure::InvalidCertificate
    } else {
        TransportFailure::TlsProtocol
    }
}

/// What an HTTP/2 error says about the stream, if `cause` is one.
fn stream_failure(cause: &(dyn StdError + 'static)) -> Option<TransportFailure> {
    #[cfg(feature = "http2")]
    if let Some(error) = cause.downcast_ref::<h2::Error>() {
        return h2_failure(error);
    }
    let _ = cause;
    None
}

/// RFC 9113 §8.7: `REFUSED_STREAM` means "closed before any processing"; §6.8:
/// streams above a `GOAWAY`'s last-stream-id were not processed (h2 gives those,
/// and only those, the remote GOAWAY as their error). Only the peer's word counts.
#[cfg(feature = "http2")]
fn h2_failure(error: &h2::Error) -> Option<TransportFailure> {
    if error.is_io() {
        return None;
    }
    if error.is_remote() && error.is_go_away() {
        return Some(TransportFailure::GoAway);
    }
    if error.is_remote() && error.reason() == Some(h2::Reason::REFUSED_STREAM) {
        return Some(TransportFailure::RefusedStream);
    }
    Some(TransportFailure::StreamReset)
}

/// The most specific readable cause below a reqwest error, for the give-up
/// message: a TLS, HTTP/2 or I/O error's own text (these never carry the URL).
pub(crate) fn detail(error: &reqwest::Error) -> Option<String> {
    let mut found = None;
    for_each_cause(error, |cause| {
        let readable = cause.is::<io::Error>() || is_h2(cause) || is_tls(cause);
        if readable {
            found = Some(readable_io(cause).unwrap_or_else(|| cause.to_string()));
        }
    });
    found
}

/// An `io::Error` of a well-known kind, in the words people search for.
fn readable_io(cause: &(dyn StdError + 'static)) -> Option<String> {
    let error = cause.downcast_ref::<io::Error>()?;
    if error.get_ref().is_some() {
        // A wrapper: the error it wraps is visited next and is more precise.
        return Some(error.to_string());
    }
    let phrase = match error.kind() {
        io::ErrorKind::ConnectionReset => "connection reset by peer",
        io::ErrorKind::ConnectionRefused => "connection refused",
        io::ErrorKind::ConnectionAborted => "connection aborted",
        io::ErrorKind::BrokenPipe => "connection closed (broken pipe)",
        io::ErrorKind::UnexpectedEof => "connection closed before a full response",
        io::ErrorKind::TimedOut => "timed out",
        _ => return None,
    };
    Some(phrase.to_owned())
}

fn is_tls(cause: &(dyn StdError + 'static)) -> bool {
    #[cfg(feature = "rustls-no-provider")]
    if cause.is::<rustls::Error>() {
        return true;
    }
    #[cfg(feature = "native-tls")]
    if cause.is::<native_tls::Error>() {
        return true;
    }
    let _ = cause;
    false
}

fn is_h2(cause: &(dyn StdError + 'static)) -> bool {
    #[cfg(feature = "http2")]
    if cause.is::<h2::Error>() {
        return true;
    }
    let _ = cause;
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    /// A stand-in for the layers we do not look into (reqwest, hyper-util).
    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<dyn StdError + Send + Sync>>);

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl StdError for Layer {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    fn layer(message: &'static str, source: impl StdError + Send + Sync + 'static) -> Layer {
        Layer(message, Some(Box::new(source)))
    }

    fn connect() -> Surface {
        Surface {
            connect: true,
            request: true,
            ..Surface::default()
        }
    }

    fn request() -> Surface {
        Surface {
            request: true,
            ..Surface::default()
        }
    }

    #[test]
    fn connect_failures_never_left_and_are_transient() {
        let refused = layer(
            "client error (Connect)",
            io::Error::from(io::ErrorKind::ConnectionRefused),
        );
        let failure = sort(connect(), &refused);
        assert_eq!(failure, TransportFailure::Connect);
        assert!(failure.is_transient() && failure.proves_not_sent());
        assert!(!failure.may_have_reached_server());
        // A connect timeout is connect *and* timeout: still never left.
        let timed_out = Surface {
            timeout: true,
            ..connect()
        };
        assert_eq!(sort(timed_out, &refused), TransportFailure::Connect);
        let dns = Surface {
            dns: true,
            ..connect()
        };
        assert_eq!(sort(dns, &refused), TransportFailure::Dns);
    }

    #[test]
    fn a_timeout_after_connecting_may_have_been_processed() {
        let error = layer("operation timed out", Layer("TimedOut", None));
        let surface = Surface {
            timeout: true,
            ..request()
        };
        let failure = sort(surface, &error);
        assert_eq!(failure, TransportFailure::Timeout);
        assert!(failure.is_transient() && failure.may_have_reached_server());
        assert!(!failure.proves_not_sent());
    }

    #[test]
    fn a_reset_after_connecting_is_a_lost_connection() {
        let error = layer(
            "error sending request",
            io::Error::from(io::ErrorKind::ConnectionReset),
        );
        assert_eq!(sort(request(), &error), TransportFailure::ConnectionLost);
    }

    #[test]
    fn reqwest_flags_come_first() {
        let error = Layer("x", None);
        let builder = Surface {
            builder: true,
            connect: true,
            ..Surface::default()
        };
        assert_eq!(sort(builder, &error), TransportFailure::InvalidRequest);
        let redirect = Surface {
            redirect: true,
            ..Surface::default()
        };
        assert_eq!(sort(redirect, &error), TransportFailure::Redirect);
        assert_eq!(sort(Surface::default(), &error), TransportFailure::Other);
    }

    #[test]
    fn connector_url_refusals_are_permanent() {
        let no_tls = layer("client error (Connect)", Layer(NOT_HTTP, None));
        let failure = sort(connect(), &no_tls);
        assert_eq!(failure, TransportFailure::NoTlsBackend);
        assert!(!failure.is_transient() && failure.proves_not_sent());
        let no_host = layer("client error (Connect)", Layer(BAD_URL[1], None));
        assert_eq!(sort(connect(), &no_host), TransportFailure::InvalidRequest);
    }

    #[test]
    fn the_walk_looks_through_nested_io_errors() {
        // io(Other, io(InvalidData, marker)): `source()` alone never yields the marker.
        let marker = Layer(NOT_HTTP, None);
        let inner = io::Error::new(io::ErrorKind::InvalidData, marker);
        let outer = io::Error::other(inner);
        assert!(outer.source().is_none_or(|s| s.to_string() != NOT_HTTP));
        let mut seen = Vec::new();
        for_each_cause(&outer, |cause| seen.push(cause.to_string()));
        assert_eq!(seen.last().map(String::as_str), Some(NOT_HTTP), "{seen:?}");
        assert_eq!(
            sort(connect(), &layer("client error (Connect)", outer)),
            TransportFailure::NoTlsBackend
        );
    }

    #[test]
    fn every_kind_is_in_exactly_one_class() {
        use TransportFailure::*;
        for kind in [
            Connect,
            Dns,
            RefusedStream,
            GoAway,
            ClosedBeforeSend,
            InvalidRequest,
            NoTlsBackend,
            UntrustedCertificate,
            ExpiredCertificate,
            CertificateHostMismatch,
            InvalidCertificate,
            TlsProtocol,
            Timeout,
            ConnectionLost,
            StreamReset,
            Body,
            Redirect,
            Other,
        ] {
            // Never both "proves not sent" and "may have reached the server".
            assert!(!(kind.proves_not_sent() && kind.may_have_reached_server()));
            // A permanent failure is never retried; the caller's never counts as unknown.
            if matches!(kind, Body | Redirect | Other) || kind.is_certificate() {
                assert!(!kind.is_transient(), "{kind:?}");
            }
            assert!(!kind.as_str().is_empty() && !kind.describe().is_empty());
        }
    }

    #[test]
    fn openssl_verify_messages_name_the_certificate_problem() {
        let verify = |reason: &str| {
            openssl_verify_failure(&format!(
                "error:0A000086:SSL routines:tls_post_process_server_certificate:\
                 certificate verify failed:../ssl/statem/statem_clnt.c:1889: ({reason})"
            ))
        };
        use TransportFailure::*;
        assert_eq!(verify("self-signed certificate"), UntrustedCertificate);
        assert_eq!(
            verify("unable to get local issuer certificate"),
            UntrustedCertificate
        );
        assert_eq!(verify("certificate has expired"), ExpiredCertificate);
        assert_eq!(verify("Hostname mismatch"), CertificateHostMismatch);
        assert_eq!(verify("certificate revoked"), InvalidCertificate);
        assert_eq!(
            openssl_verify_failure("error:0A00042E:SSL routines::tlsv1 alert protocol version"),
            TlsProtocol
        );
    }

    #[cfg(feature = "rustls-no-provider")]
    mod rustls_errors {
        use super::*;
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

    /// With no TLS backend compiled in, reqwest's real connector refuses https.
    #[cfg(not(any(feature = "rustls-no-provider", feature = "native-tls")))]
    #[tokio::test]
    async fn https_without_a_tls_backend_is_named_and_permanent() {
        let client = reqwest::Client::builder()
            .retry(reqwest::retry::never())
            .build()
            .unwrap();
        // Refused by the connector before any socket is opened.
        let error = client.get("https://127.0.0.1:9/").send().await.unwrap_err();
        assert_eq!(TransportFailure::of(&error), TransportFailure::NoTlsBackend);
    }
}
