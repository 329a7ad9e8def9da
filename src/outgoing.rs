//! What goes on the wire for each attempt: the one place that writes the key
//! header and the request id onto an outgoing request. (Its timeout is
//! `attempt_timeout`'s.)

use http::header::{HeaderName, HeaderValue};

use crate::ids::RequestId;

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

    fn request() -> reqwest::Request {
        reqwest::Request::new(http::Method::POST, "http://127.0.0.1:1/".parse().unwrap())
    }

    fn wire() -> AttemptWire<'static> {
        static HEADER: HeaderName = HeaderName::from_static("x-request-id");
        AttemptWire {
            request_id_header: &HEADER,
            request_id: RequestId::generate(),
        }
    }

    #[test]
    fn an_attempt_gets_its_request_id_and_body_and_no_timeout() {
        let wire = wire();
        let id = wire.request_id;
        let mut outgoing = request();
        dress(&mut outgoing, Some(reqwest::Body::from("{}")), wire);
        assert_eq!(outgoing.headers()["x-request-id"], id.header_value());
        assert_eq!(
            outgoing.body().and_then(reqwest::Body::as_bytes),
            Some(&b"{}"[..])
        );
        assert_eq!(outgoing.timeout(), None, "the transport writes it");
    }
}
