//! What sends one attempt: the crate's client, or the rest of a middleware chain.

use std::future::Future;
use std::time::Duration;

use crate::error::{BoxError, LastResult};

/// Sends one attempt. Implemented for the crate's client (`client.rs`) and, with
/// the `middleware` feature, for the rest of a reqwest-middleware chain.
pub(crate) trait Transport: Send {
    /// Sends `request`, which carries no timeout of its own, bounded by `timeout`
    /// (the attempt's, cut to the time left: `Deadline::attempt_timeout`): the
    /// transport is the one place that writes it on the wire.
    fn send(
        &mut self,
        request: reqwest::Request,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<reqwest::Response, TransportError>> + Send;

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

/// Writes the attempt's `timeout` on `request`: what reqwest applies to it (a
/// request's own timeout, else its client's). `built_in` is the timeout the
/// client was built with, when the transport built it (`None` otherwise): reqwest
/// keeps a per-request timeout in an extension map, which costs allocations on
/// every request, so a request whose timeout the client already applies goes
/// without. (No timeout at all with a client that has one cannot happen: the
/// crate builds such a client only for a policy whose attempts always have one.)
pub(crate) fn write_timeout(
    request: &mut reqwest::Request,
    timeout: Option<Duration>,
    built_in: Option<Duration>,
) {
    if timeout != built_in {
        *request.timeout_mut() = timeout;
    }
}

/// An attempt that produced no response (or, read whole, not all of it).
pub(crate) enum TransportError {
    Reqwest(reqwest::Error),
    /// The response's body failed part-way while it was read whole.
    BodyCut(reqwest::Error),
    /// The response's body was longer than the limit it is read whole under.
    TooLarge {
        limit: usize,
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
            TransportError::TooLarge { limit } => LastResult::Other(Box::new(TooLarge { limit })),
            TransportError::Other(error) => LastResult::Other(error),
        }
    }
}

/// The error a [`TransportError::TooLarge`] leaves as the intent's last result.
#[derive(Debug)]
struct TooLarge {
    limit: usize,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the response body is larger than {} bytes, the limit it is read whole under",
            self.limit
        )
    }
}

impl std::error::Error for TooLarge {}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// The timeout reqwest will apply: the request's, else the client's.
    fn applied(request: &reqwest::Request, built_in: Option<Duration>) -> Option<Duration> {
        request.timeout().copied().or(built_in)
    }

    #[test]
    fn the_attempt_goes_out_with_exactly_its_timeout() {
        // (attempt's timeout, the client's built-in one) -> what reqwest applies
        let table = [
            (Some(200 * MS), Some(200 * MS)),
            (Some(200 * MS), Some(10_000 * MS)),
            (Some(200 * MS), None),
            (Some(10_000 * MS), Some(200 * MS)),
            (None, None),
        ];
        for (timeout, built_in) in table {
            let mut request =
                reqwest::Request::new(http::Method::POST, "http://127.0.0.1:1/".parse().unwrap());
            write_timeout(&mut request, timeout, built_in);
            assert_eq!(
                applied(&request, built_in),
                timeout,
                "attempt {timeout:?} built in {built_in:?}"
            );
        }
    }
}
