//! What sends one attempt: the crate's client, or the rest of a middleware chain.

use std::future::Future;

use crate::attempt_timeout::WireTimeout;
use crate::error::{BoxError, LastResult};

/// `Send` on every target with threads. In the browser and node
/// (wasm32-unknown-unknown) nothing is: `fetch`'s futures and the host's timers hold
/// JavaScript values, which stay on the one thread that made them, so the intent's
/// future is not `Send` there either.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub(crate) trait MaybeSend: Send {}
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
impl<T: Send + ?Sized> MaybeSend for T {}

/// See the other target's definition.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(crate) trait MaybeSend {}
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
impl<T: ?Sized> MaybeSend for T {}

/// Sends one attempt. Implemented for the crate's client (`client.rs`) and, with
/// the `middleware` feature, for the rest of a reqwest-middleware chain.
pub(crate) trait Transport: MaybeSend {
    /// Sends `request` as it is: its timeout is already written as
    /// [`wire_timeout`](Transport::wire_timeout) asked.
    fn send(
        &mut self,
        request: reqwest::Request,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + MaybeSend;

    /// Who applies an attempt's timeout through this transport: by default the
    /// request, since a client built elsewhere may have any timeout of its own.
    fn wire_timeout(&self) -> WireTimeout {
        WireTimeout::PerRequest
    }

    /// A second transport that sends concurrently with this one, for a hedged
    /// intent's copies; `None` (the default) when it cannot (a middleware chain
    /// holds the request's extensions mutably): such an intent is not hedged.
    fn copy(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
}

/// An attempt that produced no response (or, read whole, not all of it).
pub(crate) enum TransportError {
    Reqwest(reqwest::Error),
    /// The response's body failed part-way while it was read whole.
    // (Bodies are never read whole in the browser: see `whole_body.rs`.)
    #[cfg_attr(all(target_arch = "wasm32", target_os = "unknown"), allow(dead_code))]
    BodyCut(reqwest::Error),
    /// The response's body was longer than the limit it is read whole under.
    #[cfg_attr(all(target_arch = "wasm32", target_os = "unknown"), allow(dead_code))]
    TooLarge {
        limit: usize,
        /// The body's size as far as it is known: its `Content-Length`, or the bytes
        /// that had arrived when the limit was passed.
        size: u64,
        /// Whether `size` is the announced `Content-Length` (else: at least this).
        announced: bool,
    },
    /// An error from another middleware further down the chain: never retried.
    #[cfg_attr(not(any(feature = "middleware", test)), allow(dead_code))]
    Other(BoxError),
}

impl From<TransportError> for LastResult {
    fn from(error: TransportError) -> Self {
        match error {
            TransportError::Reqwest(error) | TransportError::BodyCut(error) => {
                LastResult::Transport(error)
            }
            TransportError::TooLarge {
                limit,
                size,
                announced,
            } => LastResult::Other(Box::new(TooLarge {
                limit,
                size,
                announced,
            })),
            TransportError::Other(error) => LastResult::Other(error),
        }
    }
}

/// The error a [`TransportError::TooLarge`] leaves as the intent's last result.
#[derive(Debug)]
struct TooLarge {
    limit: usize,
    size: u64,
    announced: bool,
}

/// Names the limit, the size and the two ways out, so that the caller can act.
impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (limit, size) = (self.limit, self.size);
        if self.announced {
            write!(f, "the response body is {size} bytes (its Content-Length)")?;
        } else {
            write!(
                f,
                "the response body is over {size} bytes (what had arrived)"
            )?;
        }
        write!(
            f,
            ", more than the whole_body_limit of {limit} bytes it is read whole under; \
             the answer is final: raise .whole_body_limit(..) or send without \
             .whole_body() and read the body yourself"
        )
    }
}

impl std::error::Error for TooLarge {}
