//! [`Response`]: the final response of an intent, its body read by waiting.

use std::fmt;
use std::io::{self, Read};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use http::{HeaderMap, StatusCode, Version};

use super::runtime::Runtime;
use crate::attempt_log::{AttemptLog, ResponseExt};

/// The response an intent ended with, as `reqwest::blocking::Response`: status and
/// headers at hand, the body read by waiting (through [`bytes`](Self::bytes),
/// [`text`](Self::text), `json` or [`Read`]), the [`AttemptLog`] through
/// [`ResponseExt`].
///
/// Reading the body is still bounded as with the async client: by the attempt's
/// timeout and the deadline, or not at all after
/// [`whole_body`](super::RequestBuilder::whole_body) (the body is in memory).
///
/// # Panics
/// Every method that reads the body panics on a thread that drives async tasks (see
/// [Inside an async runtime](super#inside-an-async-runtime)).
pub struct Response {
    inner: reqwest::Response,
    runtime: Arc<Runtime>,
    /// What a [`Read::read`] fetched beyond its buffer, given to the next one.
    unread: Bytes,
}

impl Response {
    pub(super) fn new(inner: reqwest::Response, runtime: Arc<Runtime>) -> Self {
        Self {
            inner,
            runtime,
            unread: Bytes::new(),
        }
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.inner.status()
    }

    /// The HTTP version.
    pub fn version(&self) -> Version {
        self.inner.version()
    }

    /// The headers.
    pub fn headers(&self) -> &HeaderMap {
        self.inner.headers()
    }

    /// The final URL (after redirects).
    pub fn url(&self) -> &reqwest::Url {
        self.inner.url()
    }

    /// The body's length, when the server announced it.
    pub fn content_length(&self) -> Option<u64> {
        self.inner.content_length()
    }

    /// The response's extensions (where the [`AttemptLog`] travels).
    pub fn extensions(&self) -> &http::Extensions {
        self.inner.extensions()
    }

    /// Turns a 4xx or 5xx status into an error, as `reqwest`'s.
    ///
    /// # Errors
    /// reqwest's status error, with the URL.
    pub fn error_for_status(self) -> Result<Self, reqwest::Error> {
        let Self {
            inner,
            runtime,
            unread,
        } = self;
        inner.error_for_status().map(|inner| Self {
            inner,
            runtime,
            unread,
        })
    }

    /// The whole body.
    ///
    /// # Errors
    /// reqwest's, when the body cannot be read (cut, timed out).
    pub fn bytes(self) -> reqwest::Result<Bytes> {
        let Self {
            inner,
            runtime,
            unread,
        } = self;
        if unread.is_empty() {
            return runtime.run(inner.bytes());
        }
        // The rest of a body partly read through `Read`.
        let rest = runtime.run(inner.bytes())?;
        Ok([unread, rest].concat().into())
    }

    /// The whole body as text, decoded as `reqwest`'s `text()` does (the rest of a
    /// body partly read through [`Read`] as UTF-8, lossily).
    ///
    /// # Errors
    /// As [`bytes`](Self::bytes).
    pub fn text(self) -> reqwest::Result<String> {
        if !self.unread.is_empty() {
            return Ok(String::from_utf8_lossy(&self.bytes()?).into_owned());
        }
        let Self { inner, runtime, .. } = self;
        runtime.run(inner.text())
    }

    /// The whole body as JSON (feature `json`). Not after a partial [`Read`]: the
    /// bytes it already returned are not parsed again.
    ///
    /// # Errors
    /// As [`bytes`](Self::bytes), and when the body is not valid JSON for `T`.
    #[cfg(feature = "json")]
    pub fn json<T: serde::de::DeserializeOwned + Send + 'static>(self) -> reqwest::Result<T> {
        let Self { inner, runtime, .. } = self;
        runtime.run(inner.json())
    }

    /// The async response (for code that drives it on a runtime of its own).
    pub fn into_async(self) -> reqwest::Response {
        self.inner
    }
}

/// Reads the body chunk by chunk, each chunk fetched on the client's thread.
impl Read for Response {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.unread.is_empty() {
            match self.next_chunk()? {
                Some(chunk) => self.unread = chunk,
                None => return Ok(0),
            }
        }
        let n = self.unread.len().min(buf.len());
        buf[..n].copy_from_slice(&self.unread[..n]);
        self.unread.advance(n);
        Ok(n)
    }
}

impl Response {
    /// The body's next chunk, `None` at its end.
    fn next_chunk(&mut self) -> io::Result<Option<Bytes>> {
        // The chunk future borrows the response, so the response itself travels to
        // the client's thread and back; an empty one holds its place meanwhile.
        let placeholder = reqwest::Response::from(http::Response::new(reqwest::Body::from("")));
        let mut response = std::mem::replace(&mut self.inner, placeholder);
        let (response, chunk) = self.runtime.run(async move {
            let chunk = response.chunk().await;
            (response, chunk)
        });
        self.inner = response;
        chunk.map_err(io::Error::other)
    }
}

impl ResponseExt for Response {
    fn attempt_log(&self) -> Option<&AttemptLog> {
        self.inner.attempt_log()
    }

    fn end_not_recorded(&self) -> bool {
        self.inner.end_not_recorded()
    }
}

impl fmt::Debug for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("blocking::Response")
            .field("status", &self.status())
            .field("url", &self.url().as_str())
            .finish_non_exhaustive()
    }
}
