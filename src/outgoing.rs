//! What goes on the wire for each attempt: the one place that writes the key
//! header, the request id and the timeout onto an outgoing request.
//!
//! The timeout is the delicate one. reqwest applies a request's own timeout if it
//! carries one, else the client's. A request may arrive with a timeout of its own
//! (the caller's `.timeout()`, a middleware's), and a client built by this crate has
//! one too. So the caller's timeout is taken off the request once, before the
//! first attempt ([`take_own_timeout`]); from then on an attempt's request carries
//! exactly what [`dress`] puts on it, whichever body path or transport it takes,
//! and the deadline rules every attempt.

use std::time::Duration;

use http::header::{HeaderName, HeaderValue};

use crate::ids::RequestId;

/// Takes the request's own timeout off it, so that it cannot outlive the deadline
/// on any attempt, and returns it (it replaces the policy's attempt timeout).
#[inline]
pub(crate) fn take_own_timeout(request: &mut reqwest::Request) -> Option<Duration> {
    // `timeout_mut` creates reqwest's extension entry when there is none: only
    // a request that has a timeout pays for taking it.
    request.timeout()?;
    request.timeout_mut().take()
}

/// Puts the intent's key on the request every attempt is copied from.
#[inline]
pub(crate) fn put_key(request: &mut reqwest::Request, header: &HeaderName, value: HeaderValue) {
    request.headers_mut().insert(header.clone(), value);
}

/// What one attempt's request must carry besides what every attempt shares.
pub(crate) struct AttemptWire<'a> {
    pub(crate) request_id_header: &'a HeaderName,
    pub(crate) request_id: RequestId,
    /// The attempt's timeout: the intent's, cut to the time left.
    pub(crate) timeout: Option<Duration>,
    /// The timeout the transport applies by itself to a request without one (a
    /// client built by `ResilientClient::from_builder`); `None` when it applies
    /// none or it cannot be known.
    pub(crate) transport_timeout: Option<Duration>,
}

/// Writes the attempt's request id, body and timeout on `request`, which carries
/// no timeout of its own (see [`take_own_timeout`]).
#[inline]
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
    // reqwest keeps a per-request timeout in an extension map, which costs
    // allocations on every request: when the transport already applies exactly
    // this timeout, the request goes without. (No timeout at all with a transport
    // that has one cannot happen: the crate builds such a transport only for a
    // policy whose attempts always have a timeout.)
    if wire.timeout != wire.transport_timeout {
        *request.timeout_mut() = wire.timeout;
    }
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

    fn wire(
        timeout: Option<Duration>,
        transport_timeout: Option<Duration>,
    ) -> AttemptWire<'static> {
        static HEADER: HeaderName = HeaderName::from_static("x-request-id");
        AttemptWire {
            request_id_header: &HEADER,
            request_id: RequestId::generate(),
            timeout,
            transport_timeout,
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

    /// The timeout reqwest will apply: the request's, else the transport's.
    fn applied(request: &reqwest::Request, transport: Option<Duration>) -> Option<Duration> {
        request.timeout().copied().or(transport)
    }

    #[test]
    fn the_attempt_goes_out_with_exactly_its_timeout() {
        // (attempt's timeout, transport's own) -> what reqwest applies
        let table = [
            (Some(200 * MS), Some(200 * MS)),
            (Some(200 * MS), Some(10_000 * MS)),
            (Some(200 * MS), None),
            (Some(10_000 * MS), Some(200 * MS)),
            (None, None),
        ];
        for (timeout, transport) in table {
            // Whatever the caller set, it was taken off before the first attempt.
            let mut outgoing = request(Some(5000 * MS));
            let _ = take_own_timeout(&mut outgoing);
            dress(&mut outgoing, None, wire(timeout, transport));
            assert_eq!(
                applied(&outgoing, transport),
                timeout,
                "attempt {timeout:?} transport {transport:?}"
            );
            assert!(outgoing.headers().contains_key("x-request-id"));
        }
    }
}
