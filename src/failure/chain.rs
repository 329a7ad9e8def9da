//! Reading an error's source chain: where the facts that sort a failure are found.
//!
//! reqwest's own predicates (`is_connect()`, `is_timeout()`, …) describe the top of an
//! error ([`Surface`]); what decides a retry sits further down, in hyper-util, hyper,
//! h2, the TLS backend and `std::io` ([`Clues`]), found by walking the chain once
//! (`causes.rs`). [`sort`] turns both into a kind; the
//! kinds and what each proves are the table in `failure.rs`.

use std::error::Error as StdError;
use std::io;

use super::causes::for_each_cause;
use super::tls::{self, TlsReading};
use super::TransportFailure;

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
    pub(crate) fn of(error: &reqwest::Error) -> Self {
        Self {
            builder: error.is_builder(),
            redirect: error.is_redirect(),
            body: error.is_body(),
            // `fetch` reports no connect phase and no lookup of its own.
            #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
            connect: error.is_connect(),
            #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
            dns: error.is_dns(),
            #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
            connect: false,
            #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
            dns: false,
            timeout: error.is_timeout(),
            request: error.is_request(),
        }
    }
}

/// What the walk found below the surface.
#[derive(Debug, Default)]
struct Clues {
    /// The first TLS error the chain holds, as read by the TLS readers; the causes
    /// below it are not read again (they are the same failure, in less detail).
    tls: Option<TlsReading>,
    /// hyper-util's connector refused the URL before connecting.
    url: Option<TransportFailure>,
    /// A nested reqwest body error: the caller's body stream failed.
    body: bool,
    /// hyper handed the request back unsent.
    unsent: bool,
    /// What an HTTP/2 error says about the stream.
    stream: Option<TransportFailure>,
}

/// The taxonomy's precedence: one pure function of the surface flags and the chain.
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
        let tls = clues.tls.and_then(TlsReading::permanent);
        return tls.or(clues.url).unwrap_or(if surface.dns {
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
        None if surface.request => UNEXPLAINED_REQUEST,
        None => TransportFailure::Other,
    }
}

/// A request that failed with nothing below it to say where: through hyper, the
/// connection was lost; from `fetch`, a `TypeError` that tells nothing apart.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
const UNEXPLAINED_REQUEST: TransportFailure = TransportFailure::ConnectionLost;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
const UNEXPLAINED_REQUEST: TransportFailure = TransportFailure::FetchFailed;

/// hyper-util's connector messages for URLs it will not connect to (it has no typed
/// accessor; `tests/field` pins the TLS one against the real connector).
pub(super) const NOT_HTTP: &str = "invalid URL, scheme is not http";
pub(super) const BAD_URL: [&str; 2] = [
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
                clues.tls = tls::read(cause, &message);
            }
            if clues.stream.is_none() {
                clues.stream = stream_failure(cause);
            }
        });
        clues
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
/// The deepest readable cause wins, except below a TLS error: those are the same
/// failure in fewer words (native-tls adds OpenSSL's verify reason to the error it
/// wraps).
pub(crate) fn detail(error: &reqwest::Error) -> Option<String> {
    let mut found = None;
    let mut below_tls = false;
    for_each_cause(error, |cause| {
        if below_tls {
            return;
        }
        below_tls = tls::is_tls(cause);
        if below_tls || cause.is::<io::Error>() || is_h2(cause) {
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
    use crate::failure::tests::{connect, layer, request, Layer};

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

    /// hyper hands a request back unsent when its connection is gone before the
    /// request was dispatched: a real `is_canceled()` error, below a request layer.
    #[tokio::test]
    async fn a_request_hyper_handed_back_unsent_never_left() {
        use hyper_util::rt::TokioIo;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let stream = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        drop(connection);
        let unsent = sender
            .send_request(http::Request::new(String::new()))
            .await
            .unwrap_err();
        assert!(unsent.is_canceled(), "{unsent:?}");
        let error = layer("error sending request", unsent);
        let failure = sort(request(), &error);
        assert_eq!(failure, TransportFailure::ClosedBeforeSend);
        assert!(failure.is_transient() && failure.proves_not_sent());
        // Unsent beats a timeout at the surface: nothing was written.
        let timed_out = Surface {
            timeout: true,
            ..request()
        };
        assert_eq!(sort(timed_out, &error), TransportFailure::ClosedBeforeSend);
    }

    /// Only the peer's word proves a stream was not processed; a reset of our own
    /// (here h2's, for the reason given) may follow a request the server acted on.
    #[cfg(feature = "http2")]
    #[test]
    fn a_stream_reset_of_our_own_proves_nothing_and_a_timeout_names_it() {
        for reason in [h2::Reason::REFUSED_STREAM, h2::Reason::CANCEL] {
            let error = layer("error sending request", h2::Error::from(reason));
            assert_eq!(
                sort(request(), &error),
                TransportFailure::StreamReset,
                "{reason:?}"
            );
            let timed_out = Surface {
                timeout: true,
                ..request()
            };
            assert_eq!(
                sort(timed_out, &error),
                TransportFailure::Timeout,
                "{reason:?}"
            );
        }
    }

    #[test]
    fn well_known_io_failures_in_the_words_people_search_for() {
        use io::ErrorKind::*;
        #[rustfmt::skip]
        let rows = [
            (ConnectionReset,   "connection reset by peer"),
            (ConnectionRefused, "connection refused"),
            (ConnectionAborted, "connection aborted"),
            (BrokenPipe,        "connection closed (broken pipe)"),
            (UnexpectedEof,     "connection closed before a full response"),
            (TimedOut,          "timed out"),
        ];
        for (kind, phrase) in rows {
            let error = io::Error::from(kind);
            assert_eq!(readable_io(&error).as_deref(), Some(phrase), "{kind:?}");
        }
        assert_eq!(
            readable_io(&io::Error::from(InvalidData)),
            None,
            "a kind of no interest"
        );
        assert_eq!(readable_io(&Layer("x", None)), None, "not an io::Error");
        // A wrapper says what it says; the error it wraps is read next.
        let wrapper = io::Error::new(ConnectionReset, Layer("tls: close_notify", None));
        assert_eq!(readable_io(&wrapper).as_deref(), Some("tls: close_notify"));
    }

    /// The detail of a real failure: the refused connection's own words; a timeout
    /// has nothing below reqwest's to add.
    #[tokio::test]
    async fn the_detail_is_the_deepest_readable_cause() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = listener.local_addr().unwrap();
        drop(listener);
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let refused = client
            .get(format!("http://{closed}/"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            detail(&refused).as_deref(),
            Some("connection refused"),
            "{refused:?}"
        );
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", silent.local_addr().unwrap());
        let _held = tokio::spawn(async move {
            let (_stream, _) = silent.accept().await.unwrap();
            std::future::pending::<()>().await;
        });
        let timed_out = client
            .get(url)
            .timeout(std::time::Duration::from_millis(50))
            .send()
            .await
            .unwrap_err();
        assert!(timed_out.is_timeout(), "{timed_out:?}");
        assert_eq!(detail(&timed_out), None, "{timed_out:?}");
    }

    /// A real HTTP/2 server's reset of the stream, with `reason`, as reqwest reports it.
    #[cfg(feature = "http2")]
    async fn reset_by_the_peer(reason: h2::Reason) -> reqwest::Error {
        use hyper_util::rt::{TokioExecutor, TokioIo};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            // hyper answers a service error that is an h2::Error with RST_STREAM
            // carrying its reason.
            let service = hyper::service::service_fn(
                move |_: http::Request<hyper::body::Incoming>| async move {
                    Err::<http::Response<String>, _>(h2::Error::from(reason))
                },
            );
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
        let client = reqwest::Client::builder()
            .http2_prior_knowledge()
            .no_proxy()
            .build()
            .unwrap();
        let error = client
            .post(format!("http://{addr}/payments"))
            .body("pay 5")
            .send()
            .await
            .expect_err("the stream is reset");
        server.abort();
        error
    }

    /// The peer's word decides: a refused stream never left, even when reqwest also
    /// reports a timeout; any other reset from the peer may have been processed, and a
    /// timeout then names it.
    #[cfg(feature = "http2")]
    #[tokio::test]
    async fn a_stream_the_peer_refused_never_left_and_its_other_resets_may_have() {
        use h2::Reason;
        use TransportFailure::{RefusedStream, StreamReset, Timeout};
        #[rustfmt::skip]
        let rows = [
            // (the peer's reason, a timeout reported too) → the kind
            (Reason::REFUSED_STREAM, false, RefusedStream),
            (Reason::REFUSED_STREAM, true,  RefusedStream),
            (Reason::INTERNAL_ERROR, false, StreamReset),
            (Reason::INTERNAL_ERROR, true,  Timeout),
        ];
        for (reason, timeout, expected) in rows {
            let error = reset_by_the_peer(reason).await;
            let surface = Surface {
                timeout,
                ..Surface::of(&error)
            };
            assert_eq!(
                sort(surface, &error),
                expected,
                "{reason:?}, timeout {timeout}: {error:?}"
            );
        }
    }

    /// A peer's reset reads, in the give-up message, as HTTP/2's own words for it.
    #[cfg(feature = "http2")]
    #[tokio::test]
    async fn the_detail_of_a_peer_reset_is_its_reason() {
        let refused = reset_by_the_peer(h2::Reason::REFUSED_STREAM).await;
        let detail = detail(&refused);
        assert!(
            detail
                .as_deref()
                .is_some_and(|detail| detail.contains("refused stream")),
            "{detail:?}: {refused:?}"
        );
    }
}
