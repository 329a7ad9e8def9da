//! The answers the layer gives instead of running the handler, and their bodies.
//!
//! Statuses follow the IETF `Idempotency-Key` draft (400 missing, 409 in progress,
//! 422 reused with another payload). Bodies are problem+json (RFC 9457) by default;
//! an API whose clients read errors in another shape (a payments SDK that treats a 4xx
//! as an error only when its JSON has an `error` member) plugs in its own
//! [`RefusalFormat`].

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, StatusCode};

use crate::record::NotStored;

/// Why the layer refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefusalKind {
    /// 400: the route requires an `Idempotency-Key` and none came.
    MissingKey,
    /// 400: the key is empty, too long, has a character outside visible ASCII, or the
    /// request carries more than one key.
    InvalidKey,
    /// 401: no principal could be found to scope the key to.
    NoPrincipal,
    /// 409: a request with this key is still executing (answered with `Retry-After`).
    InProgress,
    /// 422: the key was used before with another request fingerprint.
    Mismatch,
    /// 410: the key finished, but its response was too large or streamed to be kept.
    NotStored(NotStored),
    /// 413: the request body is larger than the layer reads to fingerprint it.
    BodyTooLarge,
    /// 400: the request body could not be read.
    UnreadableBody,
    /// 503: the store could not be reached (answered with `Retry-After`).
    StoreUnavailable,
}

impl RefusalKind {
    /// The status the refusal is sent with.
    pub fn status(self) -> StatusCode {
        match self {
            RefusalKind::MissingKey | RefusalKind::InvalidKey | RefusalKind::UnreadableBody => {
                StatusCode::BAD_REQUEST
            }
            RefusalKind::NoPrincipal => StatusCode::UNAUTHORIZED,
            RefusalKind::InProgress => StatusCode::CONFLICT,
            RefusalKind::Mismatch => StatusCode::UNPROCESSABLE_ENTITY,
            RefusalKind::NotStored(_) => StatusCode::GONE,
            RefusalKind::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            RefusalKind::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// A stable name, used in the default problem type and in metrics.
    pub fn slug(self) -> &'static str {
        match self {
            RefusalKind::MissingKey => "missing-key",
            RefusalKind::InvalidKey => "invalid-key",
            RefusalKind::NoPrincipal => "no-principal",
            RefusalKind::InProgress => "in-progress",
            RefusalKind::Mismatch => "mismatch",
            RefusalKind::NotStored(_) => "not-stored",
            RefusalKind::BodyTooLarge => "body-too-large",
            RefusalKind::UnreadableBody => "unreadable-body",
            RefusalKind::StoreUnavailable => "store-unavailable",
        }
    }

    /// A short human summary (the problem's `title`).
    pub fn title(self) -> &'static str {
        match self {
            RefusalKind::MissingKey => "Idempotency-Key is missing",
            RefusalKind::InvalidKey => "Idempotency-Key is not valid",
            RefusalKind::NoPrincipal => "No caller to scope the Idempotency-Key to",
            RefusalKind::InProgress => "A request is outstanding for this Idempotency-Key",
            RefusalKind::Mismatch => "Idempotency-Key is already used",
            RefusalKind::NotStored(_) => "The response for this Idempotency-Key was not kept",
            RefusalKind::BodyTooLarge => "Request body too large",
            RefusalKind::UnreadableBody => "Request body could not be read",
            RefusalKind::StoreUnavailable => "Idempotency store unavailable",
        }
    }

    /// What the client should do (the problem's `detail`).
    pub fn detail(self) -> &'static str {
        match self {
            RefusalKind::MissingKey => "This operation is idempotent and requires an Idempotency-Key header.",
            RefusalKind::InvalidKey => "Send one Idempotency-Key of 1 or more visible ASCII characters, within the length limit, without quotes or backslashes.",
            RefusalKind::NoPrincipal => "Authenticate the request; keys are kept per caller.",
            RefusalKind::InProgress => "A request with the same Idempotency-Key for the same operation is being processed. Retry after the time given.",
            RefusalKind::Mismatch => "This Idempotency-Key was used with a different request payload. Use a new key for a new request.",
            RefusalKind::NotStored(NotStored::TooLarge) => "The operation completed, but its response was too large to keep for replay.",
            RefusalKind::NotStored(NotStored::Failed) => "The operation completed, but its response failed midway and was not kept for replay.",
            RefusalKind::NotStored(_) => "The operation completed, but its response was streamed and could not be kept for replay.",
            RefusalKind::BodyTooLarge => "The request body is larger than this endpoint accepts.",
            RefusalKind::UnreadableBody => "The request body could not be read to the end.",
            RefusalKind::StoreUnavailable => "The idempotency store could not be reached; nothing was executed. Retry with the same key.",
        }
    }
}

/// One refusal: its kind and, for 409 and 503, when to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    kind: RefusalKind,
    retry_after: Option<Duration>,
}

impl Refusal {
    pub(crate) fn new(kind: RefusalKind, retry_after: Option<Duration>) -> Self {
        Self { kind, retry_after }
    }

    /// Why.
    pub fn kind(&self) -> RefusalKind {
        self.kind
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.kind.status()
    }

    /// The `Retry-After` sent with it, whole seconds rounded up.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

/// A refusal's body and its content type.
#[derive(Debug, Clone)]
pub struct RenderedBody {
    /// The `Content-Type` header.
    pub content_type: HeaderValue,
    /// The body.
    pub body: Bytes,
}

/// Gives refusals the body shape (and, if it must, the status) an API already uses.
/// `Retry-After` stays the layer's. Any `Fn(&Refusal) -> RenderedBody` is a format
/// that keeps the draft's statuses.
pub trait RefusalFormat: Send + Sync + 'static {
    /// The body of one refusal.
    fn render(&self, refusal: &Refusal) -> RenderedBody;

    /// The status of one refusal: the draft's by default ([`Refusal::status`]). An
    /// API may answer with its own (Stripe answers `400` for a key reused with another
    /// payload, which its SDKs raise as an idempotency error). Keep `409` for a key in
    /// progress and `503` for an unreachable store: clients wait those out and retry,
    /// and would give up on anything else. The layer recognises its refusals by a
    /// marker, not by status, so a changed status never gets a refusal stored.
    fn status(&self, refusal: &Refusal) -> StatusCode {
        refusal.status()
    }
}

impl<F> RefusalFormat for F
where
    F: Fn(&Refusal) -> RenderedBody + Send + Sync + 'static,
{
    fn render(&self, refusal: &Refusal) -> RenderedBody {
        self(refusal)
    }
}

/// `application/problem+json` bodies (RFC 9457), as the draft asks.
///
/// # Default
///
/// The `type` of each problem is the documentation of its [`RefusalKind`] on docs.rs.
#[derive(Debug, Clone)]
pub struct ProblemJson {
    type_base: String,
}

const DOCS_TYPE_BASE: &str =
    "https://docs.rs/tower-idempotency/latest/tower_idempotency/enum.RefusalKind.html#";

impl ProblemJson {
    /// Problems typed by this crate's documentation.
    pub fn new() -> Self {
        Self {
            type_base: DOCS_TYPE_BASE.to_owned(),
        }
    }

    /// Problems typed `{base}{slug}` (e.g. `https://api.example.com/problems/` +
    /// `in-progress`), for an API that documents its own problem types.
    pub fn with_type_base(base: impl Into<String>) -> Self {
        Self {
            type_base: base.into(),
        }
    }
}

impl Default for ProblemJson {
    fn default() -> Self {
        Self::new()
    }
}

impl RefusalFormat for ProblemJson {
    fn render(&self, refusal: &Refusal) -> RenderedBody {
        let kind = refusal.kind();
        let problem = serde_json::json!({
            "type": format!("{}{}", self.type_base, kind.slug()),
            "title": kind.title(),
            "status": kind.status().as_u16(),
            "detail": kind.detail(),
        });
        RenderedBody {
            content_type: HeaderValue::from_static("application/problem+json"),
            body: Bytes::from(problem.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_draft() {
        #[rustfmt::skip]
        let cases = [
            (RefusalKind::MissingKey, 400),
            (RefusalKind::InvalidKey, 400),
            (RefusalKind::NoPrincipal, 401),
            (RefusalKind::InProgress, 409),
            (RefusalKind::Mismatch, 422),
            (RefusalKind::NotStored(NotStored::TooLarge), 410),
            (RefusalKind::BodyTooLarge, 413),
            (RefusalKind::UnreadableBody, 400),
            (RefusalKind::StoreUnavailable, 503),
        ];
        for (kind, status) in cases {
            assert_eq!(kind.status().as_u16(), status, "{kind:?}");
        }
    }

    #[test]
    fn problem_json_has_the_rfc_members() {
        let body = ProblemJson::with_type_base("https://api.example.com/problems/")
            .render(&Refusal::new(RefusalKind::Mismatch, None));
        assert_eq!(body.content_type, "application/problem+json");
        let json: serde_json::Value = serde_json::from_slice(&body.body).unwrap();
        assert_eq!(json["type"], "https://api.example.com/problems/mismatch");
        assert_eq!(json["title"], "Idempotency-Key is already used");
        assert_eq!(json["status"], 422);
        assert!(json["detail"]
            .as_str()
            .unwrap()
            .contains("different request payload"));
    }
}
