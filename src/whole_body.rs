//! Reading a response's whole body inside its attempt (`RequestBuilder::whole_body`),
//! so that the deadline and the attempt timeout cover the body too, and a body cut
//! part-way is a failure of that attempt, resent under the key, rather than the
//! caller's problem after `send()` returned.

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
use reqwest::ResponseBuilderExt;

use crate::transport::TransportError;

/// The default limit: the server layer's stored-body limit (tower-idempotency's
/// `max_stored_body`), so a body this client accepts whole is one that server can
/// replay whole after a cut.
pub const DEFAULT_WHOLE_BODY_LIMIT: usize = 1 << 20;

/// Reads `response`'s body to its end, at most `limit` bytes, and returns the same
/// response (status, version, headers, extensions, URL) with the body in memory.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub(crate) async fn read(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<reqwest::Response, TransportError> {
    if let Some(size) = response.content_length().filter(|&len| len > limit as u64) {
        return Err(TransportError::TooLarge {
            limit,
            size,
            announced: true,
        });
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) if body.len() + chunk.len() > limit => {
                return Err(TransportError::TooLarge {
                    limit,
                    size: (body.len() + chunk.len()) as u64,
                    announced: false,
                })
            }
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => break,
            Err(error) => return Err(TransportError::BodyCut(error)),
        }
    }
    let url = response.url().clone();
    let (parts, _drained) = http::Response::from(response).into_parts();
    let mut whole = http::Response::builder()
        .url(url)
        .body(reqwest::Body::from(body))
        .map_err(|error| TransportError::Other(Box::new(error)))?;
    *whole.status_mut() = parts.status;
    *whole.version_mut() = parts.version;
    *whole.headers_mut() = parts.headers;
    whole.extensions_mut().extend(parts.extensions);
    Ok(reqwest::Response::from(whole))
}

/// `fetch`'s response cannot be rebuilt around a body read in advance, so in the
/// browser and node no intent asks for this (the `whole_body` setters are absent
/// there) and the response goes back as it came.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(crate) async fn read(
    response: reqwest::Response,
    _limit: usize,
) -> Result<reqwest::Response, TransportError> {
    Ok(response)
}
