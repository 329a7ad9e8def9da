//! Which key a builder's [`BuildError`] is about. Every variant is listed, so a new
//! one does not compile until it names its key.

use super::choice::Strategy;
use crate::BuildError;

/// The path of the key `error` is about. `strategy` is the backoff strategy the
/// configuration gives, if it has a `backoff` table: a backoff too long is its
/// `delay` for a constant backoff, its `cap` otherwise.
pub(super) fn path_of(error: &BuildError, strategy: Option<Strategy>) -> &'static str {
    match error {
        BuildError::MaxAttempts(_) => "max_attempts",
        BuildError::ZeroBackoffBase | BuildError::BackoffBaseAboveCap { .. } => "backoff.base",
        BuildError::BackoffTooLong(_) if strategy == Some(Strategy::Constant) => "backoff.delay",
        BuildError::BackoffTooLong(_) => "backoff.cap",
        BuildError::RetryAfterCeilingTooLong(_) => "retry_after_ceiling",
        BuildError::ConflictDelayTooLong(_) => "conflict_delay",
        BuildError::ZeroDeadline => "deadline",
        BuildError::ZeroAttemptTimeout | BuildError::AttemptTimeoutExceedsDeadline { .. } => {
            "attempt_timeout"
        }
        BuildError::EmptyHeaderName(setting) | BuildError::InvalidHeaderName { setting, .. } => {
            setting
        }
        BuildError::SameHeaderNames(_) => "request_id_header",
        BuildError::Hedging { setting, .. } => setting,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::settings::rows;
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn each_build_error_names_its_key() {
        let cases = [
            (BuildError::MaxAttempts(0), None, "max_attempts"),
            (BuildError::ZeroBackoffBase, None, "backoff.base"),
            (
                BuildError::BackoffBaseAboveCap {
                    base: 2 * S,
                    cap: S,
                },
                None,
                "backoff.base",
            ),
            (BuildError::BackoffTooLong(S), None, "backoff.cap"),
            (
                BuildError::BackoffTooLong(S),
                Some(Strategy::DecorrelatedJitter),
                "backoff.cap",
            ),
            (
                BuildError::BackoffTooLong(S),
                Some(Strategy::Constant),
                "backoff.delay",
            ),
            (
                BuildError::RetryAfterCeilingTooLong(S),
                None,
                "retry_after_ceiling",
            ),
            (BuildError::ConflictDelayTooLong(S), None, "conflict_delay"),
            (BuildError::ZeroDeadline, None, "deadline"),
            (BuildError::ZeroAttemptTimeout, None, "attempt_timeout"),
            (
                BuildError::AttemptTimeoutExceedsDeadline {
                    attempt_timeout: 2 * S,
                    deadline: S,
                },
                None,
                "attempt_timeout",
            ),
            (
                BuildError::EmptyHeaderName("key_header"),
                None,
                "key_header",
            ),
            (
                BuildError::InvalidHeaderName {
                    setting: "server_hint_header",
                    name: "a b".to_owned(),
                },
                None,
                "server_hint_header",
            ),
            (
                BuildError::SameHeaderNames("x".to_owned()),
                None,
                "request_id_header",
            ),
        ];
        // Every setting `Hedging::check` (and the build's attempts check) names is
        // a key, so its error can name the variable that set it.
        let hedging = [
            "hedging",
            "hedging.delay",
            "hedging.percentile",
            "hedging.min_samples",
            "hedging.floor",
            "hedging.refresh",
            "hedging.max_copies",
            "hedging.cap_ratio",
            "hedging.methods",
        ]
        .map(|setting| {
            let error = BuildError::Hedging {
                setting,
                problem: String::new(),
            };
            (error, None, setting)
        });
        let cases = cases.into_iter().chain(hedging);
        for (error, strategy, path) in cases {
            assert_eq!(
                path_of(&error, strategy),
                path,
                "{error:?} with {strategy:?}"
            );
            assert!(rows().any(|row| row.path == path), "{path} is no key");
        }
    }
}
