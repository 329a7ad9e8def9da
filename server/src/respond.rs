//! The responses the layer writes itself: refusals and replays.

use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderName, HeaderValue, Response};

use crate::body::{full, ResponseBody};
use crate::record::StoredResponse;
use crate::refusal::{Refusal, RefusalFormat};

/// The header that marks a replayed response (Stripe's name).
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

pub(crate) fn refusal(format: &dyn RefusalFormat, refusal: Refusal) -> Response<ResponseBody> {
    let rendered = format.render(&refusal);
    let mut response = Response::new(full(rendered.body));
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
