//! The responses the layer writes itself: refusals and replays.

use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderName, HeaderValue, Response};

use crate::body::{full, ResponseBody};
use crate::record::StoredResponse;
use crate::refusal::{Refusal, RefusalFormat};
use crate::scope::ScopeId;

/// The header that marks a replayed response (Stripe's name).
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// On every response the layer or the strong mode writes instead of running the
/// handler, with the refusal's slug (a response extension, never on the wire). A layer around a route that
/// answers for itself (a strong-mode route) recognises a refusal by it — not by its
/// status, which a [`RefusalFormat`] may choose — and never keeps one as the key's
/// result: a stored 409 would be replayed to every retry for the whole retention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refused(pub(crate) &'static str);

/// On a request the layer has claimed a key for (a request extension): a strong-mode
/// route below it that finds this same key in progress knows it runs under a layer
/// over its own store, and fails loudly instead of answering 409 forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClaimedByLayer(pub(crate) ScopeId);

pub(crate) fn refusal(format: &dyn RefusalFormat, refusal: Refusal) -> Response<ResponseBody> {
    let rendered = format.render(&refusal);
    let mut response = Response::new(full(rendered.body));
    response
        .extensions_mut()
        .insert(Refused(refusal.kind().slug()));
    *response.status_mut() = refusal.status();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, rendered.content_type);
    if let Some(after) = refusal.retry_after() {
        headers.insert(RETRY_AFTER, HeaderValue::from(after.as_secs()));
    }
    response
}

/// A stored response as a response; `replayed` marks it for a retry.
pub(crate) fn stored(stored: StoredResponse, replayed: bool) -> Response<ResponseBody> {
    let mut response = Response::new(full(stored.body));
    *response.status_mut() = stored.status;
    let headers = response.headers_mut();
    for (name, value) in stored.headers {
        headers.append(name, value);
    }
    if replayed {
        headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    response
}
