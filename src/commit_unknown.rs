//! The marker a write-ahead returns when its own write may have committed.

use std::fmt;

/// Any error, boxed (as `crate::BoxError`, spelled out so this file imports nothing).
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A write-ahead's write whose commit outcome is not known: a journal's
/// write-ahead that timed out, or whose connection was cut, after the commit was
/// sent and before its answer came back.
///
/// Returned from [`WriteAhead::before_first_byte`](crate::WriteAhead::before_first_byte)
/// (anywhere in the error's source chain), it still stops the intent before its
/// first byte, but the [`Error`](crate::Error) says
/// [`is_outcome_unknown`](crate::Error::is_outcome_unknown) and
/// [`is_write_ahead_unconfirmed`](crate::Error::is_write_ahead_unconfirmed) —
/// never [`is_write_ahead_refused`](crate::Error::is_write_ahead_refused): the write-ahead may
/// send the intent later under its key (a journal resumes what it wrote ahead),
/// so the caller must not take "nothing was sent" for granted, and must retry
/// only with the same key.
#[derive(Debug)]
pub struct CommitOutcomeUnknown {
    cause: BoxError,
}

impl CommitOutcomeUnknown {
    /// Wraps the failure that left the outcome unknown (a timeout, a lost
    /// connection).
    pub fn new(cause: impl Into<BoxError>) -> Self {
        Self {
            cause: cause.into(),
        }
    }

    /// True when `error` or any error in its source chain is this marker.
    pub fn is_in_chain(error: &(dyn std::error::Error + 'static)) -> bool {
        let mut next = Some(error);
        while let Some(error) = next {
            if error.is::<Self>() {
                return true;
            }
            next = error.source();
        }
        false
    }
}

impl fmt::Display for CommitOutcomeUnknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "commit outcome unknown: {}", self.cause)
    }
}

impl std::error::Error for CommitOutcomeUnknown {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.cause.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Wrapper(CommitOutcomeUnknown);
    impl fmt::Display for Wrapper {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("journal write-ahead failed")
        }
    }
    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn found_anywhere_in_the_chain_and_nowhere_else() {
        let marker = || CommitOutcomeUnknown::new("timed out after 1s");
        let plain: BoxError = "timed out after 1s".into();
        let cases: [(BoxError, bool); 3] = [
            (Box::new(marker()), true),
            (Box::new(Wrapper(marker())), true),
            (plain, false),
        ];
        for (error, expected) in cases {
            assert_eq!(
                CommitOutcomeUnknown::is_in_chain(error.as_ref()),
                expected,
                "{error}"
            );
        }
        assert_eq!(
            marker().to_string(),
            "commit outcome unknown: timed out after 1s"
        );
    }

    #[test]
    fn a_write_ahead_error_carrying_it_is_outcome_unknown_never_refused_and_says_so() {
        use crate::attempt_log::AttemptLog;
        use crate::error::Error;
        use crate::error::GiveUpReason;
        use crate::idempotency::IdempotencyKey;

        let key = IdempotencyKey::new("pay-42").unwrap();
        let cases: [(BoxError, bool); 2] = [
            (Box::new(Wrapper(CommitOutcomeUnknown::new("cut"))), true),
            ("the journal is full".into(), false),
        ];
        for (refusal, unknown) in cases {
            let error = Error::write_ahead_refused(refusal, AttemptLog::new(Some(key.clone())));
            assert_eq!(error.is_write_ahead_refused(), !unknown, "{error}");
            assert_eq!(error.is_write_ahead_unconfirmed(), unknown, "{error}");
            let reason = if unknown {
                GiveUpReason::WriteAheadUnconfirmed
            } else {
                GiveUpReason::WriteAheadRefused
            };
            assert_eq!(error.reason(), reason);
            assert_eq!(error.is_outcome_unknown(), unknown, "{error}");
            assert_eq!(error.idempotency_key(), Some(&key));
            let text = error.to_string();
            assert_eq!(text.contains("outcome unknown"), unknown, "{text}");
            assert_eq!(text.contains("may still be sent"), unknown, "{text}");
        }
    }
}
