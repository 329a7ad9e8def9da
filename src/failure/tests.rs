//! The table's own tests, and stand-ins for the error layers the readers' tests build.

use std::error::Error as StdError;
use std::fmt;
use std::fmt::Write as _;

use super::chain::Surface;
use super::{Class, TransportFailure};

/// A stand-in for the layers the readers do not look into (reqwest, hyper-util).
#[derive(Debug)]
pub(super) struct Layer(
    pub(super) &'static str,
    pub(super) Option<Box<dyn StdError + Send + Sync>>,
);

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

pub(super) fn layer(message: &'static str, source: impl StdError + Send + Sync + 'static) -> Layer {
    Layer(message, Some(Box::new(source)))
}

/// reqwest's flags for a failure in hyper-util's connector.
pub(super) fn connect() -> Surface {
    Surface {
        connect: true,
        request: true,
        ..Surface::default()
    }
}

/// reqwest's flags for a failure after the connection was made.
pub(super) fn request() -> Surface {
    Surface {
        request: true,
        ..Surface::default()
    }
}

/// A class's name in the docs (DESIGN.md's words).
fn class_name(class: Class) -> &'static str {
    match class {
        Class::NeverLeftTransient => "never left, transient",
        Class::NeverLeftPermanent => "never left, permanent",
        Class::MayHaveBeenProcessed => "may have been processed",
        Class::Callers => "the caller's",
        Class::Unrecognised => "unrecognised",
    }
}

/// `failure/taxonomy.md`, rendered from the rows: the classes with their rules and
/// kinds, then every kind's label and phrase.
fn render_taxonomy() -> String {
    let classes = [
        Class::NeverLeftTransient,
        Class::NeverLeftPermanent,
        Class::MayHaveBeenProcessed,
        Class::Callers,
        Class::Unrecognised,
    ];
    let mut out = String::from(
        "| class | kinds | retried | outcome if the intent ends here |\n|---|---|---|---|\n",
    );
    for class in classes {
        let rule = class.rule();
        let kinds: Vec<String> = TransportFailure::ALL
            .iter()
            .filter(|kind| kind.row().class == class)
            .map(|kind| format!("`{kind:?}`"))
            .collect();
        let retried = match (rule.transient, rule.proves_not_sent) {
            (true, true) => "any method, key or not",
            (true, false) => "idempotent methods, or with a key",
            (false, _) => "no",
        };
        let outcome = match (rule.proves_not_sent, rule.may_have_reached_server) {
            (true, _) => "known: nothing happened",
            (false, true) => "unknown",
            (false, false) => "known",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {retried} | {outcome} |",
            class_name(class),
            kinds.join(", ")
        );
    }
    out.push_str(
        "\n| kind | class | `error.type` | phrase ([`describe`](TransportFailure::describe)) \
         | in the error's message |\n|---|---|---|---|---|\n",
    );
    for kind in TransportFailure::ALL {
        let row = kind.row();
        let message = row
            .message
            .map_or("—".to_owned(), |m| m.replace("{host}", "*host*"));
        let _ = writeln!(
            out,
            "| [`{kind:?}`](TransportFailure::{kind:?}) | {} | `{}` | {} | {message} |",
            class_name(row.class),
            row.label,
            row.summary,
        );
    }
    out
}

#[test]
fn the_doc_table_is_rendered_from_the_rows() {
    let rendered = render_taxonomy();
    if std::env::var_os("BLESS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/failure/taxonomy.md");
        std::fs::write(path, &rendered).expect("write taxonomy.md");
        return;
    }
    assert!(
        rendered == include_str!("taxonomy.md"),
        "src/failure/taxonomy.md is out of date; replace it with:\n{rendered}"
    );
}

#[test]
fn each_class_answers_the_predicates_consistently() {
    for kind in TransportFailure::ALL {
        // Never both "proves not sent" and "may have reached the server".
        assert!(
            !(kind.proves_not_sent() && kind.may_have_reached_server()),
            "{kind:?}"
        );
        // Only what never left or may have been processed is worth another attempt.
        if kind.is_transient() {
            assert!(
                kind.proves_not_sent() || kind.may_have_reached_server(),
                "{kind:?}"
            );
        }
        // A certificate problem will be the same next time, and nothing was sent.
        if kind.is_certificate() {
            assert!(!kind.is_transient() && kind.proves_not_sent(), "{kind:?}");
        }
    }
}

#[test]
fn labels_are_distinct_snake_case_and_messages_present() {
    let mut labels: Vec<&str> = TransportFailure::ALL.iter().map(|k| k.as_str()).collect();
    for label in &labels {
        assert!(
            !label.is_empty() && label.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{label}"
        );
    }
    labels.sort_unstable();
    labels.dedup();
    assert_eq!(labels.len(), TransportFailure::ALL.len());
    for kind in TransportFailure::ALL {
        assert!(!kind.describe().is_empty(), "{kind:?}");
        assert!(
            !kind.explain(None).contains('{'),
            "{kind:?}: a placeholder left"
        );
    }
}

#[test]
fn other_is_a_class_of_its_own_not_retried_with_an_unknown_outcome() {
    let other = TransportFailure::Other;
    assert_eq!(other.row().class, Class::Unrecognised);
    assert!(!other.is_transient() && !other.proves_not_sent());
    assert!(other.may_have_reached_server());
    assert_eq!(
        (other.as_str(), other.describe()),
        ("other", "transport error")
    );
}

#[test]
fn certificate_messages_name_the_host_and_the_remedy() {
    let untrusted = TransportFailure::UntrustedCertificate;
    assert_eq!(
        untrusted.explain(Some("127.0.0.1")),
        "the certificate of 127.0.0.1 is not signed by a trusted root; if the server uses a \
         private CA or a self-signed certificate, trust its root: \
         reqwest_resilience::reqwest::Certificate::from_pem, ClientBuilder::tls_certs_merge, \
         then ResilientClient::from_builder"
    );
    assert!(untrusted
        .explain(None)
        .starts_with("the certificate of the server "));
    for kind in TransportFailure::ALL.iter().filter(|k| k.is_certificate()) {
        let message = kind.explain(Some("pay.example"));
        assert!(message.contains("certificate of pay.example"), "{message}");
        assert!(
            message.contains("; "),
            "{kind:?} says what to do: {message}"
        );
    }
    // Kinds without a message of their own fall back to the phrase.
    assert_eq!(
        TransportFailure::Connect.explain(Some("h")),
        "could not connect"
    );
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

/// `is_certificate` is what an application branches on to say "fix the server's
/// certificate or trust its root": exactly the four certificate problems answer true
/// (the checks above that filter on it would hold vacuously for none).
#[test]
fn the_certificate_kinds_are_the_four_certificate_problems() {
    let certificate: Vec<TransportFailure> = TransportFailure::ALL
        .iter()
        .copied()
        .filter(|kind| kind.is_certificate())
        .collect();
    assert_eq!(
        certificate,
        [
            TransportFailure::UntrustedCertificate,
            TransportFailure::ExpiredCertificate,
            TransportFailure::CertificateHostMismatch,
            TransportFailure::InvalidCertificate,
        ]
    );
}
