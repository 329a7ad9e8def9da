//! Why an intent gave up: the reasons an [`Error`](super::Error) names.

/// Why an intent gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GiveUpReason {
    /// Every allowed attempt failed transiently.
    AttemptsExhausted,
    /// The deadline passed, or the next pause would have ended after it.
    DeadlineExceeded,
    /// The server asked to wait longer than the Retry-After ceiling.
    RetryAfterBeyondCeiling,
    /// The server asked to wait past the deadline.
    RetryAfterBeyondDeadline,
    /// The shared retry budget refused the retry.
    BudgetExhausted,
    /// Another [`Gate`](crate::Gate) (a circuit breaker, a throttle) held back an
    /// attempt: the first one (nothing was sent) or a retry. See
    /// [`Error::gate_refusal`](crate::Error::gate_refusal).
    GateRefused,
    /// The body was a stream, sent once, and could not be sent again.
    BodyNotReplayable,
    /// The failure is not transient, or a retry would not be safe (a POST without
    /// idempotency key after the request may have left).
    NotRetryable,
    /// The request could not be built or its idempotency key is invalid; nothing was sent.
    InvalidRequest,
    /// The intent's [`WriteAhead`](crate::WriteAhead) refused it in
    /// `before_first_byte` (e.g. a journal could not write it ahead): nothing was
    /// sent, and nothing will be sent later.
    WriteAheadRefused,
    /// The intent's [`WriteAhead`](crate::WriteAhead) stopped it in
    /// `before_first_byte` without knowing whether its own write committed (a
    /// journal whose `COMMIT` answer was lost): nothing was sent by this call, but
    /// the write-ahead may send the intent later under its key, so the outcome is
    /// unknown. Never reported as [`WriteAheadRefused`](Self::WriteAheadRefused).
    WriteAheadUnconfirmed,
    /// A resend of an intent read whole ([`RequestBuilder::whole_body`]) was answered
    /// `410 Gone`: the server finished the key but did not keep its response (too
    /// large or streamed to store). The effect happened; its answer is lost.
    ///
    /// [`RequestBuilder::whole_body`]: crate::RequestBuilder::whole_body
    CompletedNotKept,
}

impl GiveUpReason {
    /// Renamed [`WriteAheadRefused`](Self::WriteAheadRefused): a write-ahead refuses,
    /// observers only watch. Kept for one release; it matches as the new name does.
    #[deprecated(since = "0.2.0", note = "renamed `GiveUpReason::WriteAheadRefused`")]
    #[allow(non_upper_case_globals)]
    pub const ObserverRefused: GiveUpReason = GiveUpReason::WriteAheadRefused;

    /// A short label for logs.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::AttemptsExhausted => "attempts_exhausted",
            Self::DeadlineExceeded => "deadline_exceeded",
            Self::RetryAfterBeyondCeiling => "retry_after_beyond_ceiling",
            Self::RetryAfterBeyondDeadline => "retry_after_beyond_deadline",
            Self::BudgetExhausted => "budget_exhausted",
            Self::GateRefused => "gate_refused",
            Self::BodyNotReplayable => "body_not_replayable",
            Self::NotRetryable => "not_retryable",
            Self::InvalidRequest => "invalid_request",
            Self::WriteAheadRefused => "write_ahead_refused",
            Self::WriteAheadUnconfirmed => "write_ahead_unconfirmed",
            Self::CompletedNotKept => "completed_not_kept",
        }
    }
}
