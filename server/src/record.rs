//! What a store keeps for a key: who holds it, or the response it finished with.

use std::time::SystemTime;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode};

use crate::fingerprint::Fingerprint;

/// A response kept for replay: status, the chosen headers, the whole body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The status the handler answered.
    pub status: StatusCode,
    /// The headers chosen for replay, in the handler's order.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The whole body.
    pub body: Bytes,
}

/// Why a finished response was not kept (its retry is refused, never given a part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotStored {
    /// The body was larger than the stored-body limit.
    TooLarge,
    /// The body's length was not known up front (a stream), or it carried trailers.
    Streamed,
    /// The body failed before its end (the first caller got a broken response).
    Failed,
}

impl NotStored {
    /// The name a store keeps and the refusal names.
    pub fn as_str(self) -> &'static str {
        match self {
            NotStored::TooLarge => "too-large",
            NotStored::Streamed => "streamed",
            NotStored::Failed => "failed",
        }
    }

    /// The reason a store wrote with [`NotStored::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "too-large" => Some(NotStored::TooLarge),
            "streamed" => Some(NotStored::Streamed),
            "failed" => Some(NotStored::Failed),
            _ => None,
        }
    }
}

/// How a key's execution finished.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Completion {
    /// The response, kept for replay.
    Stored(StoredResponse),
    /// The handler answered `status`, but the response was not kept.
    NotStored {
        /// The status the first caller received.
        status: StatusCode,
        /// Why it was not kept.
        reason: NotStored,
    },
}

/// A key someone else claimed, as the store found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Existing {
    /// The fingerprint of the request that claimed the key.
    pub fingerprint: Fingerprint,
    /// Where that request is.
    pub state: ExistingState,
}

/// Where the request holding a key is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExistingState {
    /// Still executing; its claim lapses at `lease_until` unless it finishes.
    InProgress {
        /// When another request may reclaim the key.
        lease_until: SystemTime,
    },
    /// Being executed by a transaction that has not committed (the strong mode on
    /// PostgreSQL, seen through a lock wait that timed out): nothing of it is readable
    /// yet, not even when it started.
    Uncommitted,
    /// Finished.
    Completed(Completion),
}
