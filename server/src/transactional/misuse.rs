//! The strong mode under a layer over its own store: a mistake of the application's
//! wiring, answered loudly on the first request instead of with a 409 forever.

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};

use crate::body::{full, ResponseBody};
use crate::respond::Refused;

/// What the operator reads in the log (an error event). It names the wiring, so it is
/// never sent to the caller, who gets [`GENERIC`].
pub(super) const MESSAGE: &str = "tower-idempotency misconfigured: a strong-mode route \
    (IdempotencyLayer::transactional) runs under an IdempotencyLayer over the same store, \
    so it finds its own key claimed by the layer and can never run. Take the route out \
    of the layer (give the layer's routes `.route_layer(layer)`, or mount the strong-mode \
    routes on a router the layer does not wrap); nothing was executed and the key was \
    released.";

/// What the external caller gets: a plain problem+json 500 (RFC 9457), nothing about
/// the server's wiring.
const GENERIC: &str = r#"{"type":"about:blank","title":"Internal Server Error","status":500}"#;

/// `500`, marked as a refusal so that the layer above frees its claim and keeps
/// nothing: no key is ruined, and every request fails the same until the wiring is
/// fixed. The developer's message goes to the log.
pub(super) fn under_a_layer_over_this_store() -> Response<ResponseBody> {
    tracing::error!("{MESSAGE}");
    let mut response = Response::new(full(Bytes::from_static(GENERIC.as_bytes())));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    response.extensions_mut().insert(Refused("misconfigured"));
    response
}
