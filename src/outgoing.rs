//! What goes on the wire for each attempt: the one place that writes the key
//! header and the request id onto an outgoing request.
//!
//! A request may arrive with a timeout of its own (the caller's `.timeout()`, a
//! middleware's): it is taken off once, before the first attempt
//! ([`take_own_timeout`]), and becomes the attempts' timeout. Each attempt's
//! timeout is then cut to the time left (`Deadline::attempt_timeout`) and handed
//! to the transport, which writes it on the wire (`Transport::send`).

use std::time::Duration;

use http::header::{HeaderName, HeaderValue};

use crate::ids::RequestId;

/// Takes the request's own timeout off it, so that it cannot outlive the deadline
/// on any attempt, and returns it (it replaces the policy's attempt timeout).
pub(crate) fn take_own_timeout(request: &mut reqwest::Request) -> Option<Duration> {
    // `timeout_mut` creates reqwest's extension entry when there is none: only
    // a request that has a timeout pays for taking it.
    request.timeout()?;
    request.timeout_mut().take()
}

/// Puts the intent's key on the request every attempt is copied from.
pub(crate) fn put_key(request: &mut reqwest::Request, header: &HeaderName, value: HeaderValue) {
    request.headers_mut().insert(header.clone(), value);
}

/// What one attempt's request must carry besides what every attempt shares.
pub(crate) struct AttemptWire<'a> {
    pub(crate) request_id_header: &'a HeaderName,
    pub(crate) request_id: RequestId,
}

/// Writes the attempt's request id and body on `request`.
pub(crate) fn dress(
    request: &mut reqwest::Request,
    body: Option<reqwest::Body>,
    wire: AttemptWire<'_>,
) {
    if let Some(body) = body {
        *request.body_mut() = Some(body);
    }
    request.headers_mut().insert(
        wire.request_id_header.clone(),
        wire.request_id.header_value(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn request(timeout: Option<Duration>) -> reqwest::Request {
        let mut request =
            reqwest::Request::new(http::Method::POST, "http://127.0.0.1:1/".parse().unwrap());
        if let Some(timeout) = timeout {
            *request.timeout_mut() = Some(timeout);
        }
        request
    }

    fn wire() -> AttemptWire<'static> {
        static HEADER: HeaderName = HeaderName::from_static("x-request-id");
        AttemptWire {
            request_id_header: &HEADER,
            request_id: RequestId::generate(),
        }
    }

    #[test]
    fn the_callers_timeout_is_taken_off_once() {
        let mut with = request(Some(5000 * MS));
        assert_eq!(take_own_timeout(&mut with), Some(5000 * MS));
        assert_eq!(with.timeout(), None);
        let mut without = request(None);
        assert_eq!(take_own_timeout(&mut without), None);
        assert_eq!(without.timeout(), None);
    }

    #[test]
    fn an_attempt_gets_its_request_id_and_body_and_no_timeout() {
        let wire = wire();
        let id = wire.request_id;
        let mut outgoing = request(None);
        dress(&mut outgoing, Some(reqwest::Body::from("{}")), wire);
        assert_eq!(outgoing.headers()["x-request-id"], id.header_value());
        assert_eq!(
            outgoing.body().and_then(reqwest::Body::as_bytes),
            Some(&b"{}"[..])
        );
        assert_eq!(outgoing.timeout(), None, "the transport writes it");
    }
}
