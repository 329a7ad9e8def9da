//! What sends one attempt: the crate's client, or the rest of a middleware chain.

use std::future::Future;
use std::time::Duration;

use crate::error::{BoxError, LastResult};

/// Sends one attempt. Implemented for the crate's client (`client.rs`) and, with
/// the `middleware` feature, for the rest of a reqwest-middleware chain.
pub(crate) trait Transport: Send {
    fn send(
        &mut self,
        request: reqwest::Request,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + Send;

    /// The timeout the transport applies by itself to a request that carries none;
    /// `None` when it applies none or it cannot be known.
    fn timeout(&self) -> Option<Duration> {
        None
    }
}

/// An attempt that produced no response.
pub(crate) enum TransportError {
    Reqwest(reqwest::Error),
    /// An error from another middleware further down the chain: never retried.
    #[cfg_attr(not(any(feature = "middleware", test)), allow(dead_code))]
    Other(BoxError),
}

impl From<TransportError> for LastResult {
    fn from(error: TransportError) -> Self {
        match error {
            TransportError::Reqwest(error) => LastResult::Transport(error),
            TransportError::Other(error) => LastResult::Other(error),
        }
    }
}
