//! What the journal stores about an intent, and what a worker writes back.

use std::time::{Duration, SystemTime};

use http::{HeaderMap, Method};

use crate::state::IntentState;

/// How long a server is assumed to keep an idempotency key: 24 hours (Stripe's
/// window) minus one hour, so a resend never races the server's expiry.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(23 * 3600);

/// An intent about to be written ahead, before its first byte leaves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NewIntent {
    /// The idempotency key (stored verbatim: it must be resent as it is).
    pub key: String,
    /// False when the request carried no key header (an idempotent method sent
    /// without a key): `key` is then a journal-local id, never put on the wire.
    pub key_on_wire: bool,
    /// The request method.
    pub method: Method,
    /// The full URL.
    pub url: String,
    /// The headers that define the request, credentials already removed.
    pub headers: HeaderMap,
    /// The exact body bytes.
    pub body: Vec<u8>,
    /// The intent's deadline length, reused for each resend.
    pub deadline: Option<Duration>,
    /// How long the server keeps the key, from now: no resend after that.
    pub retention: Duration,
}

impl NewIntent {
    /// An intent with an empty body, no headers, no deadline and a 23-hour retention;
    /// set the rest with the public fields.
    pub fn new(key: impl Into<String>, method: Method, url: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            key_on_wire: true,
            method,
            url: url.into(),
            headers: HeaderMap::new(),
            body: Vec::new(),
            deadline: None,
            retention: DEFAULT_RETENTION,
        }
    }
}

/// A stored intent, as read back from the journal.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IntentRecord {
    /// The idempotency key (or the journal-local id when `key_on_wire` is false).
    pub key: String,
    /// Whether `key` is sent as the idempotency key header.
    pub key_on_wire: bool,
    /// The request method.
    pub method: Method,
    /// The full URL.
    pub url: String,
    /// The defining headers (no credentials).
    pub headers: HeaderMap,
    /// The exact body bytes.
    pub body: Vec<u8>,
    /// The deadline length of one run.
    pub deadline: Option<Duration>,
    /// When the server's key retention ends: nothing is resent after it.
    pub retention_end: SystemTime,
    /// The current state.
    pub state: IntentState,
    /// The worker (its stable name) that holds or last held the lease.
    pub owner: Option<String>,
    /// The incarnation (process) of that worker; `None` for rows written before
    /// incarnations were recorded.
    pub incarnation: Option<String>,
    /// When the current lease ends (`in_flight` only).
    pub lease_until: Option<SystemTime>,
    /// The fencing counter: raised by every claim and every manual abandon.
    pub fence: i64,
    /// How often the intent was taken up: the write-ahead and every claim.
    pub runs: i64,
    /// When an `unknown` intent is due to be resumed.
    pub due_at: Option<SystemTime>,
    /// The last HTTP status seen, if any.
    pub status: Option<u16>,
    /// Where the caller finds the result: the `Location` header of the final
    /// response if it had one.
    pub locator: Option<String>,
    /// Why the intent failed, is unknown or was abandoned.
    pub detail: Option<String>,
    /// When the intent was written ahead.
    pub created_at: SystemTime,
    /// The last change.
    pub updated_at: SystemTime,
}

/// A worker's right to write an intent's result: valid while nobody raised the
/// fencing counter past `fence`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The intent's key.
    pub key: String,
    /// The worker holding the lease.
    pub owner: String,
    /// The fencing counter at the time of the claim.
    pub fence: i64,
    /// When the lease ends, by the store's clock.
    pub until: SystemTime,
}

/// An intent claimed for a resume: the row, the lease, and the store's clock at
/// the claim (PostgreSQL: the database's).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Claimed {
    /// The row after the claim (`in_flight`, runs raised by one).
    pub record: IntentRecord,
    /// The lease taken.
    pub lease: Lease,
    /// The store's time at the claim.
    pub now: SystemTime,
}

/// What a worker writes back under its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// A final success (2xx/3xx).
    Succeeded {
        /// The final status.
        status: u16,
        /// Where to find the result (e.g. the `Location` header).
        locator: Option<String>,
    },
    /// A definite answer that is not a success, or provably not sent.
    Failed {
        /// The final status, if a response came.
        status: Option<u16>,
        /// Why.
        reason: String,
    },
    /// Still unknown: resume again after `retry_in`.
    Unknown {
        /// The last status, if any (409 when the server said "in progress").
        status: Option<u16>,
        /// Delay before the intent is due again.
        retry_in: Duration,
        /// Why.
        reason: String,
    },
    /// Given up without sending again.
    Abandoned {
        /// Why.
        reason: String,
    },
    /// A run that provably did nothing at the server: a gate or the retry
    /// budget held the request back, the connection was refused, or the server
    /// answered that it did nothing (408, 429). Due again after `retry_in`, and
    /// the run is given back: it does not count toward the journal's max runs,
    /// so an outage cannot wear a committed intent down to `abandoned`.
    NotPerformed {
        /// Back to `queued` (no run of the intent was ever performed) rather
        /// than `unknown`.
        queued: bool,
        /// The last status, if a response came (408, 429).
        status: Option<u16>,
        /// Delay before the intent is due again.
        retry_in: Duration,
        /// Why.
        reason: String,
    },
}

impl Outcome {
    /// The state this outcome leads to.
    pub fn state(&self) -> IntentState {
        match self {
            Self::Succeeded { .. } => IntentState::Succeeded,
            Self::Failed { .. } => IntentState::Failed,
            Self::Unknown { .. } => IntentState::Unknown,
            Self::Abandoned { .. } => IntentState::Abandoned,
            Self::NotPerformed { queued: true, .. } => IntentState::Queued,
            Self::NotPerformed { queued: false, .. } => IntentState::Unknown,
        }
    }

    /// Runs a store subtracts from the intent's `runs` when it records this
    /// outcome: 1 for [`NotPerformed`](Self::NotPerformed), else 0.
    pub fn runs_given_back(&self) -> i64 {
        i64::from(matches!(self, Self::NotPerformed { .. }))
    }

    /// Columns written: (status, locator, detail, due in).
    pub(crate) fn columns(&self) -> (Option<u16>, Option<&str>, Option<&str>, Option<Duration>) {
        match self {
            Self::Succeeded { status, locator } => (Some(*status), locator.as_deref(), None, None),
            Self::Failed { status, reason } => (*status, None, Some(reason), None),
            Self::Unknown {
                status,
                retry_in,
                reason,
            } => (*status, None, Some(reason), Some(*retry_in)),
            Self::Abandoned { reason } => (None, None, Some(reason), None),
            Self::NotPerformed {
                status,
                retry_in,
                reason,
                ..
            } => (*status, None, Some(reason), Some(*retry_in)),
        }
    }
}

// The columns' one conversion, idempotency-storage's (shared with
// tower-idempotency); re-exported under the journal's old names so that the
// backends and the outbox call it unchanged.
pub(crate) use idempotency_storage::millis::{
    from_duration as duration_millis, from_time as to_millis, to_time as from_millis,
};
