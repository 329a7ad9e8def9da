//! The journal's one error type.

/// A boxed error from a storage driver or a write-ahead: the core crate's one.
pub use reqwest_resilience::BoxError;

/// What went wrong in the journal.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The lease this worker held was taken over (it expired and another worker
    /// claimed the intent, or a person abandoned it): the result is dropped so it
    /// cannot overwrite a newer one.
    #[error("lease lost on intent {key_prefix}…: another owner holds it now (fence {fence})")]
    LeaseLost {
        /// The first characters of the key (keys are secret-ish).
        key_prefix: String,
        /// The fencing counter this worker held.
        fence: i64,
    },
    /// An intent with this key is already in the journal (the store's answer to
    /// a second write-ahead; a durable send then joins that intent instead).
    #[error("an intent with key {key_prefix}… is already journaled")]
    DuplicateKey {
        /// The first characters of the key.
        key_prefix: String,
    },
    /// A durable send's key is journaled for an intent it cannot join: another
    /// request (method, URL or body) under the same key, an abandoned intent, or
    /// one past the server's key retention. Nothing was sent.
    #[error("key {key_prefix}… is journaled for an intent this send cannot join: {why}")]
    KeyInUse {
        /// The first characters of the key.
        key_prefix: String,
        /// Why the send cannot join it.
        why: &'static str,
    },
    /// A durable intent needs its body in memory (bytes, a string, JSON, or a
    /// `body_fn` that yields bytes); a stream cannot be journaled.
    #[error("a durable intent needs an in-memory body; a streamed body cannot be journaled")]
    BodyNotInMemory,
    /// A request for an outbox that `send()` would refuse before sending it:
    /// an invalid URL, idempotency key or policy, or a zero deadline (the core
    /// crate's error is the source).
    #[error("the request cannot be enqueued: {0}")]
    InvalidRequest(#[source] Box<reqwest_resilience::Error>),
    /// A POST or PATCH sent durably without an idempotency key could never be
    /// resumed safely.
    #[error("a durable {method} needs an idempotency key (do not call without_idempotency_key)")]
    KeyRequired {
        /// The request method.
        method: String,
    },
    /// A stored row could not be read back (edited by hand, or a newer schema).
    #[error("journal row is invalid: {0}")]
    InvalidRecord(String),
    /// The journal's schema cannot be used by this version of the crate: it is
    /// newer (a later version migrated it), a migration step failed, or the
    /// database refused the migration (no privilege to create the tables).
    #[error("journal schema: {0}")]
    Schema(String),
    /// The database did not answer in time: the SQLite write lock stayed taken
    /// past the busy timeout, or a PostgreSQL statement (or connect) ran past its
    /// timeout. Nothing was written by the timed-out step.
    #[error("journal {operation} timed out after {after:?}")]
    Timeout {
        /// What timed out (`"write lock"`, `"statement"`, `"connect"`,
        /// `"migration"`).
        operation: &'static str,
        /// The configured timeout.
        after: std::time::Duration,
    },
    /// A write-ahead's commit was sent but its answer was lost (a timeout, a cut
    /// connection), and the database could not say whether it committed (a
    /// PostgreSQL transaction still waiting for a synchronous standby, or no
    /// connection to ask). The intent may be resumed later under its key: the
    /// durable send reports its outcome as unknown, never "nothing was sent";
    /// retry it with the same key.
    #[error("journal write-ahead of {key_prefix}… may have committed; its outcome is unknown")]
    CommitUnknown {
        /// The first characters of the key.
        key_prefix: String,
        /// Why the answer was lost (the core reads this marker: the durable send's
        /// error then says [`is_outcome_unknown`](reqwest_resilience::Error::is_outcome_unknown)).
        #[source]
        marker: reqwest_resilience::CommitOutcomeUnknown,
    },
    /// A durable send could not join the intent journaled under its key: another
    /// sender held it past the longest wait, or the journal failed meanwhile.
    /// That intent may still be sent, so the outcome is unknown (the core reads
    /// the marker). Nothing was sent by this call; retry later with the same key.
    #[error(
        "could not join intent {key_prefix}…, which may still be sent; its outcome is unknown"
    )]
    JoinUnknown {
        /// The first characters of the key.
        key_prefix: String,
        /// Why (the marker the core reads).
        #[source]
        marker: reqwest_resilience::CommitOutcomeUnknown,
    },
    /// An acknowledgement named a key no intent has: never journaled, or
    /// pruned since.
    #[error("no intent with key {key_prefix}… is journaled")]
    UnknownKey {
        /// The first characters of the key.
        key_prefix: String,
    },
    /// An acknowledgement named an intent with no result yet: it is still
    /// `queued`, `in_flight` or `unknown`. Nothing was acknowledged.
    #[error("intent {key_prefix}… has no result to acknowledge yet: it is {state}")]
    NotTerminal {
        /// The first characters of the key.
        key_prefix: String,
        /// Where the intent stands.
        state: crate::state::IntentState,
    },
    /// The store does not implement this operation: a [`JournalStore`](crate::JournalStore)
    /// written before the operation existed, relying on the trait's default.
    #[error("this journal store does not support {operation}")]
    Unsupported {
        /// The operation (`"unacknowledged"`, `"acknowledge"`).
        operation: &'static str,
    },
    /// A configuration value was rejected.
    #[error("invalid journal configuration: {0}")]
    InvalidConfig(String),
    /// A journal file could not be created, opened or changed: which file, and
    /// what was being done to it.
    #[error("journal file {path}: {operation} failed: {source}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What was being done (`"create"`, `"open"`, `"restrict to its owner"`).
        operation: &'static str,
        /// The failure.
        #[source]
        source: BoxError,
    },
    /// The database failed (I/O, connection lost, constraint, …); the message
    /// carries the driver's.
    #[error("journal storage failed: {0}")]
    Storage(#[source] BoxError),
}

impl JournalError {
    /// True when a worker's lease was taken over and its result was dropped.
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, Self::LeaseLost { .. })
    }

    /// True when the database did not answer within its configured timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }

    /// True when a write-ahead may have committed though it failed: the intent
    /// may still be sent under its key.
    pub fn is_commit_unknown(&self) -> bool {
        matches!(self, Self::CommitUnknown { .. })
    }

    /// Only PostgreSQL's commit can lose its answer (SQLite's is awaited).
    #[cfg(feature = "postgres")]
    pub(crate) fn commit_unknown(key: &str, cause: impl Into<BoxError>) -> Self {
        Self::CommitUnknown {
            key_prefix: key_prefix(key),
            marker: reqwest_resilience::CommitOutcomeUnknown::new(cause),
        }
    }

    pub(crate) fn storage(error: impl Into<BoxError>) -> Self {
        Self::Storage(error.into())
    }

    /// Only SQLite opens a file of the journal's.
    #[cfg(feature = "sqlite")]
    pub(crate) fn file<E: Into<BoxError>>(
        path: &std::path::Path,
        operation: &'static str,
    ) -> impl FnOnce(E) -> Self {
        let path = path.to_owned();
        move |source| Self::File {
            path,
            operation,
            source: source.into(),
        }
    }

    /// A schema that could not be brought up to date: the journal's words for a
    /// newer one, the step or the refusal as the runner says, a driver failure
    /// as [`Storage`](Self::Storage) (so a busy SQLite lock reads as a timeout).
    pub(crate) fn schema(error: idempotency_storage::SchemaError) -> Self {
        use idempotency_storage::SchemaError;
        match error {
            SchemaError::Newer { current, latest } => Self::Schema(format!(
                "the journal's schema is version {current}, newer than this crate's {latest}; \
                 upgrade reqwest-resilience-journal"
            )),
            SchemaError::Driver(source) => Self::Storage(source),
            other => Self::Schema(other.to_string()),
        }
    }

    pub(crate) fn lease_lost(key: &str, fence: i64) -> Self {
        Self::LeaseLost {
            key_prefix: key_prefix(key),
            fence,
        }
    }

    pub(crate) fn join_unknown(key: &str, cause: impl Into<BoxError>) -> Self {
        Self::JoinUnknown {
            key_prefix: key_prefix(key),
            marker: reqwest_resilience::CommitOutcomeUnknown::new(cause),
        }
    }

    pub(crate) fn key_in_use(key: &str, why: &'static str) -> Self {
        Self::KeyInUse {
            key_prefix: key_prefix(key),
            why,
        }
    }

    pub(crate) fn unknown_key(key: &str) -> Self {
        Self::UnknownKey {
            key_prefix: key_prefix(key),
        }
    }

    pub(crate) fn not_terminal(key: &str, state: crate::state::IntentState) -> Self {
        Self::NotTerminal {
            key_prefix: key_prefix(key),
            state,
        }
    }

    pub(crate) fn duplicate_key(key: &str) -> Self {
        Self::DuplicateKey {
            key_prefix: key_prefix(key),
        }
    }
}

/// A file the storage plumbing could not prepare or check, naming it.
impl From<idempotency_storage::FileError> for JournalError {
    fn from(error: idempotency_storage::FileError) -> Self {
        let (path, operation, source) = error.into_parts();
        Self::File {
            path,
            operation,
            source,
        }
    }
}

/// The first 8 characters of a key: enough to find it in the journal, not enough
/// to replay it.
pub(crate) fn key_prefix(key: &str) -> String {
    key.chars().take(8).collect()
}
