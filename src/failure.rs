//! What a transport failure proves about the server: the failure taxonomy.
//!
//! Every fact about a kind — its class (and so its retry rule and whether it leaves
//! the outcome unknown), its `error.type` label and its messages — is written once, in
//! the kind's row of the table below; the predicates read the row. The doc table on
//! [`TransportFailure`] is `failure/taxonomy.md`, which a test renders from the same
//! rows. Reading an error's source chain is in `failure/chain.rs`; the TLS backends'
//! errors, and which backend the crate's clients use, in `failure/tls.rs`.
//!
//! Adding a kind: one row in the `kinds!` table (its doc comment, class, label and
//! message), the case in `chain::sort` or a reader that produces it, and its test;
//! then `BLESS=1 cargo test --lib failure` rewrites `taxonomy.md` from the rows.

use std::borrow::Cow;

mod causes;
mod chain;
mod tls;

pub(crate) use chain::detail;
pub(crate) use tls::readable_backend;

/// What a class of failures proves, and so what the crate does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// The request provably never left, and the next attempt may get through.
    NeverLeftTransient,
    /// The request never left, and the next attempt would fail the same way.
    NeverLeftPermanent,
    /// The request may have been received and acted on; another attempt may succeed.
    MayHaveBeenProcessed,
    /// The caller's own problem (a body stream, a redirect policy): not the server's.
    Callers,
    /// Nothing the crate recognises. Not retried — it may be permanent, and it does
    /// not prove the request stayed home — and, for the same reason, an intent that
    /// ends on it has an unknown outcome.
    Unrecognised,
}

/// One class's answers; the kinds' predicates are these.
#[derive(Debug, Clone, Copy)]
struct ClassRule {
    transient: bool,
    proves_not_sent: bool,
    may_have_reached_server: bool,
}

impl Class {
    fn rule(self) -> ClassRule {
        let (transient, proves_not_sent, may_have_reached_server) = match self {
            Self::NeverLeftTransient => (true, true, false),
            Self::NeverLeftPermanent => (false, true, false),
            Self::MayHaveBeenProcessed => (true, false, true),
            Self::Callers => (false, false, false),
            Self::Unrecognised => (false, false, true),
        };
        ClassRule {
            transient,
            proves_not_sent,
            may_have_reached_server,
        }
    }
}

/// One kind's row: its class, its OpenTelemetry `error.type` label, a short phrase
/// for people, and — where the host and a remedy help — a longer message.
#[derive(Debug, Clone, Copy)]
struct Row {
    class: Class,
    label: &'static str,
    summary: &'static str,
    /// The message for people, with `{host}` where the server's host goes; the
    /// summary when absent.
    message: Option<&'static str>,
    certificate: bool,
}

impl Row {
    const fn new(class: Class, label: &'static str, summary: &'static str) -> Self {
        Self {
            class,
            label,
            summary,
            message: None,
            certificate: false,
        }
    }

    /// A message that names the host and says what to do.
    const fn message(self, message: &'static str) -> Self {
        Self {
            message: Some(message),
            ..self
        }
    }

    /// A problem with the server's certificate.
    const fn certificate(self) -> Self {
        Self {
            certificate: true,
            ..self
        }
    }
}

/// Declares the enum and its table from one list: each kind with its doc comment and
/// its row, so that no other place lists the kinds.
macro_rules! kinds {
    (
        $(#[$meta:meta])*
        pub enum TransportFailure {
            $( $(#[doc = $doc:expr])* $kind:ident => $row:expr, )*
        }
    ) => {
        $(#[$meta])*
        pub enum TransportFailure {
            $( $(#[doc = $doc])* $kind, )*
        }

        impl TransportFailure {
            /// Every kind, in the table's order.
            #[cfg(test)]
            const ALL: &'static [Self] = &[$(Self::$kind),*];

            /// This kind's row of the table.
            const fn row(self) -> Row {
                match self {
                    $(Self::$kind => $row,)*
                }
            }
        }
    };
}

kinds! {
    /// A transport failure, sorted by what it proves about the server's side.
    ///
    /// The crate sorts each failed attempt by walking the whole error source chain
    /// (reqwest → hyper-util → hyper → h2 / rustls / native-tls / io) into five classes:
    ///
    #[doc = include_str!("failure/taxonomy.md")]
    ///
    /// Unknown causes in the connect phase stay transient: the connection was not
    /// established, so a retry is safe, and only causes known to repeat (a certificate, a
    /// TLS version) stop the intent. `Other` is its own class: a failure the crate does
    /// not recognise is not retried (it may be permanent) and, since it does not prove
    /// the request stayed home, leaves the outcome unknown.
    ///
    /// **DNS.** A failed lookup is *never left, transient*, whether the resolver said "no
    /// such host" or "try again": the system resolver reports both through one opaque
    /// `io::Error`, custom resolvers return anything, and NXDOMAIN is itself often
    /// temporary (a record being published, split-horizon DNS, a resolver failing over).
    /// Nothing was sent, so the cost of being wrong is a few attempts within the policy's
    /// limits; the error then says `DNS lookup failed`.
    ///
    /// **TLS backends.** reqwest picks native-tls as soon as anything in your dependency
    /// tree enables it, so the clients this crate builds ([`ResilientClient::new`],
    /// [`with_policy`], [`reqwest_builder`], [`reqwest_builder_for`]) select the backend
    /// whose errors it reads by type: rustls when this crate's `rustls` (or
    /// `rustls-no-provider`) feature is on. [`from_builder`] keeps the builder's
    /// backend, and [`from_parts`] the client's. Whatever the client, a TLS failure is
    /// read by every reader there is: rustls's typed errors; native-tls's (with this
    /// crate's `native-tls` feature); and OpenSSL's own words (`SSL routines: …`),
    /// whatever the features — so a self-signed certificate behind native-tls on Linux is
    /// `UntrustedCertificate` even when native-tls came in through another crate. A
    /// native-tls error on other platforms names its certificate problem only with the
    /// `native-tls` feature (`InvalidCertificate` or `TlsProtocol`, permanent all the
    /// same). **A handshake failure that no reader can read stays *never left,
    /// transient*** (`Connect`): nothing was sent, so the cost is a few attempts within
    /// the policy's limits, whereas calling an unreadable connect failure permanent would
    /// stop retrying resets and refusals too. Mid-handshake closes and `internal_error`
    /// alerts are transient on every backend.
    ///
    /// Decide with the predicates ([`is_transient`](Self::is_transient),
    /// [`proves_not_sent`](Self::proves_not_sent),
    /// [`may_have_reached_server`](Self::may_have_reached_server)) rather than by
    /// matching every kind: kinds are added as more failures can be told apart.
    ///
    /// [`ResilientClient::new`]: crate::ResilientClient::new
    /// [`with_policy`]: crate::ResilientClient::with_policy
    /// [`reqwest_builder`]: crate::ResilientClient::reqwest_builder
    /// [`reqwest_builder_for`]: crate::ResilientClient::reqwest_builder_for
    /// [`from_builder`]: crate::ResilientClient::from_builder
    /// [`from_parts`]: crate::ResilientClient::from_parts
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[non_exhaustive]
    pub enum TransportFailure {
        /// The connection could not be established (refused, connect timeout, reset
        /// during the TLS handshake): the request provably never left.
        Connect => Row::new(Class::NeverLeftTransient, "connect", "could not connect"),
        /// The host name could not be resolved: the request never left.
        Dns => Row::new(Class::NeverLeftTransient, "dns", "DNS lookup failed"),
        /// The HTTP/2 server refused the stream (`REFUSED_STREAM`) before processing it.
        RefusedStream => Row::new(
            Class::NeverLeftTransient,
            "refused_stream",
            "HTTP/2 stream refused by the server (REFUSED_STREAM)",
        ),
        /// The HTTP/2 server's `GOAWAY` excluded this stream (its id was above the
        /// last-stream-id): the server did not process it.
        GoAway => Row::new(
            Class::NeverLeftTransient,
            "goaway",
            "HTTP/2 GOAWAY excluded the request",
        ),
        /// The connection closed before the request was written (hyper returned the
        /// request unsent).
        ClosedBeforeSend => Row::new(
            Class::NeverLeftTransient,
            "closed_before_send",
            "connection closed before the request was sent",
        ),
        /// The request could not be built (bad URL or scheme, bad header): the caller's error.
        InvalidRequest => Row::new(Class::NeverLeftPermanent, "invalid_request", "invalid request"),
        /// An `https` URL, but no TLS backend is compiled in (see the crate's features).
        NoTlsBackend => Row::new(
            Class::NeverLeftPermanent,
            "no_tls_backend",
            "https URL but no TLS backend compiled in (enable the `default-tls` feature)",
        )
        .message(
            "no TLS backend is compiled in to reach {host} over https; enable this crate's \
             `default-tls` (or `native-tls`) feature",
        ),
        /// The server's certificate is not signed by a trusted root (e.g. self-signed).
        UntrustedCertificate => Row::new(
            Class::NeverLeftPermanent,
            "untrusted_certificate",
            "TLS certificate not trusted (unknown issuer)",
        )
        .message(
            "the certificate of {host} is not signed by a trusted root; if the server uses \
             a private CA or a self-signed certificate, trust its root: \
             reqwest_resilience::reqwest::Certificate::from_pem, \
             ClientBuilder::tls_certs_merge, then ResilientClient::from_builder",
        )
        .certificate(),
        /// The server's certificate has expired or is not valid yet.
        ExpiredCertificate => Row::new(
            Class::NeverLeftPermanent,
            "expired_certificate",
            "TLS certificate expired or not yet valid",
        )
        .message(
            "the certificate of {host} has expired or is not yet valid; the server's \
             certificate must be renewed, or this machine's clock is wrong",
        )
        .certificate(),
        /// The server's certificate is for another host name.
        CertificateHostMismatch => Row::new(
            Class::NeverLeftPermanent,
            "certificate_host_mismatch",
            "TLS certificate is for another host name",
        )
        .message(
            "the certificate of {host} is for another host name; use a host name the \
             certificate lists (its subjectAltName), or reissue the certificate for this host",
        )
        .certificate(),
        /// The server's certificate is otherwise invalid (revoked, bad signature, wrong
        /// purpose, …).
        InvalidCertificate => Row::new(
            Class::NeverLeftPermanent,
            "invalid_certificate",
            "TLS certificate invalid",
        )
        .message(
            "the certificate of {host} is invalid (revoked, badly signed or not for a \
             server); check the chain the server sends \
             (openssl s_client -connect host:443 -showcerts)",
        )
        .certificate(),
        /// The TLS handshake failed for a reason that will repeat: no common protocol
        /// version or cipher, the server refused the handshake, or the server does not
        /// speak TLS on that port.
        TlsProtocol => Row::new(
            Class::NeverLeftPermanent,
            "tls_protocol",
            "TLS handshake failed (protocol mismatch or refused)",
        )
        .message(
            "TLS handshake failed with {host} (no common protocol version or cipher, or \
             no TLS on that port); check the URL's scheme and port, and \
             `ClientBuilder::tls_version_min`/`tls_version_max`",
        ),
        /// The attempt timed out after the connection was made: the server may or may
        /// not have acted on it.
        Timeout => Row::new(Class::MayHaveBeenProcessed, "timeout", "timeout"),
        /// The connection closed or reset before a full response: the server may have acted.
        ConnectionLost => Row::new(
            Class::MayHaveBeenProcessed,
            "connection_lost",
            "connection lost before a full response",
        ),
        /// In the browser and node: `fetch` failed without a response. Its `TypeError`
        /// is the same for a network error, a connection lost after the request was
        /// written and a response the CORS policy hid, so it proves nothing about the
        /// server: it may have acted. (A CORS misconfiguration is retried too, within
        /// the policy's limits, then reported as this.)
        FetchFailed => Row::new(
            Class::MayHaveBeenProcessed,
            "fetch_failed",
            "fetch failed (network error, connection lost or CORS refusal)",
        ),
        /// The HTTP/2 stream was reset for another reason than `REFUSED_STREAM`: the
        /// server may have acted.
        StreamReset => Row::new(
            Class::MayHaveBeenProcessed,
            "stream_reset",
            "HTTP/2 stream reset by the server",
        ),
        /// The connection closed or reset while the response body was read inside the
        /// intent (`RequestBuilder::whole_body`): the server acted, but its answer was
        /// not all received.
        ResponseBodyCut => Row::new(
            Class::MayHaveBeenProcessed,
            "response_body_cut",
            "connection lost while reading the response body",
        ),
        /// The response body was larger than the intent reads whole
        /// (`RequestBuilder::whole_body`): the answer arrived and is final.
        ResponseTooLarge => Row::new(
            Class::Callers,
            "response_too_large",
            "the response body is larger than the limit it is read whole under",
        ),
        /// The request body could not be produced (a failing stream): the caller's, not
        /// transient.
        Body => Row::new(Class::Callers, "body", "the request body stream failed"),
        /// A redirect loop or a redirect policy error: the caller's, not transient.
        Redirect => Row::new(Class::Callers, "redirect", "redirect policy error"),
        /// Anything else reqwest reports: not retried, outcome unknown.
        Other => Row::new(Class::Unrecognised, "other", "transport error"),
    }
}

impl TransportFailure {
    /// Sorts a reqwest error by walking its whole source chain.
    pub(crate) fn of(error: &reqwest::Error) -> Self {
        chain::sort(chain::Surface::of(error), error)
    }

    fn class(self) -> ClassRule {
        self.row().class.rule()
    }

    /// True when another attempt may get a different answer (`Other` is not: an
    /// unknown failure is not retried).
    pub fn is_transient(&self) -> bool {
        self.class().transient
    }

    /// True when the failure proves the server did not process the request: it may
    /// be sent again whatever its method, with or without an idempotency key.
    pub fn proves_not_sent(&self) -> bool {
        self.class().proves_not_sent
    }

    /// True when the server may have received the whole request and acted on it:
    /// if the intent ends here, its outcome is unknown. False for failures that
    /// never left and for the caller's own (a body stream that failed mid-way is an
    /// incomplete request; a redirect error follows a response).
    pub fn may_have_reached_server(&self) -> bool {
        self.class().may_have_reached_server
    }

    /// True for a problem with the server's TLS certificate.
    pub fn is_certificate(&self) -> bool {
        self.row().certificate
    }

    /// The OpenTelemetry `error.type` value for this failure.
    pub fn as_str(&self) -> &'static str {
        self.row().label
    }

    /// A phrase for people, as in `last: could not connect`.
    pub fn describe(&self) -> &'static str {
        self.row().summary
    }

    /// The message for people, naming the server's `host` (when known) and what to
    /// do where the table says it; [`describe`](Self::describe)'s phrase otherwise.
    pub(crate) fn explain(&self, host: Option<&str>) -> Cow<'static, str> {
        let row = self.row();
        match row.message {
            Some(message) => Cow::Owned(message.replace("{host}", host.unwrap_or("the server"))),
            None => Cow::Borrowed(row.summary),
        }
    }
}

#[cfg(test)]
mod tests;
