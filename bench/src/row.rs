//! What every compared row shares, whichever client it drives: the attempt timeout
//! it sets, and what one intent ended with.

use std::time::Duration;

use reqwest::StatusCode;

/// The attempt timeout reqwest-resilience sets on every attempt by default.
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// What one intent ended with.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// The last status seen, if any response came back.
    pub status: Option<StatusCode>,
}

/// The status, after reading the body so the connection goes back to the pool.
pub async fn drain(response: reqwest::Response) -> Outcome {
    let status = response.status();
    // Read the body so the connection goes back to the pool, as real code would.
    let _ = response.bytes().await;
    Outcome {
        status: Some(status),
    }
}
