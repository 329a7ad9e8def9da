//! The error's one line: why the intent gave up, why its last failure was not
//! retried, what that failure was, and whether the outcome is unknown.

use std::fmt;
use std::time::Duration;

use http::header::RETRY_AFTER;
use http::StatusCode;

use super::{Error, GiveUpReason, LastResult};
use crate::attempt_log::{AttemptOutcome, ShortDuration};
use crate::failure::{self, TransportFailure};

/// One line a person can act on: why the intent gave up, why the last failure was
/// not retried, what it was (the host and a remedy for a certificate), and whether the
/// outcome is unknown. Never the URL's credentials, the whole key or a body.
///
/// Every duration is written in one format — `300ms`, `2.002s`, `120s` (Rust's
/// `Duration` notation, rounded to the millisecond) — the notation
/// `RetryPolicyConfig` reads, so a figure can be pasted into a configuration.
///
/// ```text
/// gave up after 3 attempts; last: timeout after 300ms; outcome unknown
/// deadline exceeded (no time left for another attempt) after 2 attempts in 1.201s; last: timeout after 500ms; outcome unknown
/// not retried after 1 attempt: the POST had no idempotency key and may have reached the server, […]; last: timeout after 300ms; outcome unknown
/// not retried after 1 attempt: a retry would fail the same way; last: host api.example.com: TLS certificate not trusted (unknown issuer) (…); if the server uses a private CA […]
/// ```
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.inner;
        let attempts = match self.attempts() {
            1 => "1 attempt".to_owned(),
            n => format!("{n} attempts"),
        };
        match inner.reason {
            GiveUpReason::AttemptsExhausted => write!(f, "gave up after {attempts}")?,
            GiveUpReason::DeadlineExceeded => write!(
                f,
                "deadline exceeded (no time left for another attempt) after {attempts} in {}",
                ShortDuration(inner.elapsed)
            )?,
            GiveUpReason::RetryAfterBeyondCeiling => write!(
                f,
                "server asked to retry after {}, beyond the Retry-After ceiling",
                ShortDuration(inner.retry_after.unwrap_or_default())
            )?,
            GiveUpReason::RetryAfterBeyondDeadline => write!(
                f,
                "server asked to retry after {}, beyond the deadline",
                ShortDuration(inner.retry_after.unwrap_or_default())
            )?,
            GiveUpReason::BudgetExhausted => write!(f, "retry budget exhausted after {attempts}")?,
            GiveUpReason::GateRefused => match (&inner.refusal, self.attempts()) {
                (Some(refusal), 0) => {
                    write!(f, "{refusal} before the first attempt; nothing was sent")?
                }
                (Some(refusal), _) => write!(f, "retry {refusal} after {attempts}")?,
                (None, _) => write!(f, "held back by a gate after {attempts}")?,
            },
            GiveUpReason::BodyNotReplayable => write!(
                f,
                "not retried after {attempts}: the body is a stream, already sent once, and \
                 cannot be sent again (build it with .body_fn(..) to make it replayable)"
            )?,
            GiveUpReason::CompletedNotKept => write!(
                f,
                "the server completed this intent but did not keep its response (410 Gone \
                 on the resend, after {attempts}): the effect happened and its answer is \
                 lost; read the result through the API, never resend under a new key"
            )?,
            GiveUpReason::NotRetryable => {
                write!(f, "not retried after {attempts}: ")?;
                self.write_why_not_retried(f)?;
            }
            GiveUpReason::InvalidRequest => match &inner.last {
                LastResult::InvalidKey(key_error) => write!(f, "invalid request: {key_error}")?,
                LastResult::ZeroDeadline => {
                    write!(f, "invalid request: the deadline must be greater than zero")?
                }
                LastResult::Other(why) => write!(f, "invalid request: {why}")?,
                _ => write!(f, "invalid request")?,
            },
            GiveUpReason::WriteAheadUnconfirmed => match &inner.last {
                LastResult::Other(source) => write!(
                    f,
                    "the intent's write-ahead could not confirm its write before sending (the \
                     intent may still be sent under its key): {source}"
                )?,
                _ => write!(
                    f,
                    "the intent's write-ahead could not confirm its write before sending (the \
                     intent may still be sent under its key)"
                )?,
            },
            GiveUpReason::WriteAheadRefused => match &inner.last {
                LastResult::Other(source) => write!(
                    f,
                    "refused by the intent's write-ahead before sending: {source}"
                )?,
                _ => write!(f, "refused by the intent's write-ahead before sending")?,
            },
        }
        if let Some(status) = self.last_status() {
            write!(f, "; last status {status}")?;
            if status == StatusCode::CONFLICT {
                self.write_conflict_remedy(f)?;
            }
        } else if inner.reason != GiveUpReason::InvalidRequest {
            self.write_last_failure(f)?;
        }
        if inner.outcome_unknown {
            write!(f, "; outcome unknown")?;
        }
        Ok(())
    }
}

impl Error {
    /// Why the last failure of a [`GiveUpReason::NotRetryable`] intent was not
    /// retried, from what the error carries: the failure's kind, whether the intent
    /// had a key, and its method.
    fn write_why_not_retried(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keyed = self.idempotency_key().is_some();
        let why = match self.transport_failure() {
            Some(TransportFailure::Other) if matches!(self.inner.last, LastResult::Other(_)) => {
                "another middleware in the chain failed"
            }
            // A certificate, a TLS version, a bad URL: known before anything was sent,
            // and known to repeat.
            Some(failure) if failure.proves_not_sent() && !failure.is_transient() => {
                "a retry would fail the same way"
            }
            // The limit, the size and the remedy are in the failure's own text.
            Some(TransportFailure::ResponseTooLarge) => {
                return match &self.inner.last {
                    LastResult::Other(too_large) => write!(f, "{too_large}"),
                    _ => f.write_str(TransportFailure::ResponseTooLarge.describe()),
                };
            }
            Some(TransportFailure::Body | TransportFailure::Redirect) => {
                "the failure is the caller's (the body stream or the redirect policy), not \
                 the network's"
            }
            Some(failure) if !failure.is_transient() => {
                "the failure is of a kind not known to be safe to retry"
            }
            Some(failure) if failure.may_have_reached_server() && !keyed => {
                return match &self.inner.method {
                    Some(method) if method.is_idempotent() => {
                        f.write_str("the policy's classifier said not to")
                    }
                    Some(method) => write!(
                        f,
                        "the {method} had no idempotency key and may have reached the server, \
                         so it was not resent (without a key only GET, HEAD, PUT, DELETE, \
                         OPTIONS and TRACE are); send it with a key (the default) to make it \
                         retryable"
                    ),
                    None => f.write_str(
                        "the request had no idempotency key and may have reached the server, \
                         so it is resent only if its method is idempotent (GET, HEAD, PUT, \
                         DELETE, OPTIONS, TRACE); send a POST or PATCH with a key (the \
                         default) to make it retryable",
                    ),
                };
            }
            Some(_) => "the policy's classifier said not to",
            None => "the failure is not transient",
        };
        f.write_str(why)
    }

    /// What to do about a key the server still held at the give-up. A 409 that asks
    /// to come back (`Retry-After`, as tower-idempotency and the IETF draft's servers
    /// send) means the first request was still running: it may yet complete, so the
    /// remedy is patience under the same key. Without one, the server may be of the
    /// kind that answers 409 for *completed* keys too (django-idempotency-key by
    /// default), where waiting never helps.
    fn write_conflict_remedy(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let asked_to_come_back = self
            .response()
            .is_some_and(|response| response.headers().contains_key(RETRY_AFTER));
        if asked_to_come_back {
            f.write_str(
                " (the server was still working on this key and asked to come back later: \
                 the first request may yet complete; retry later under the same key, or \
                 give the intent a longer deadline; never resend under a new key)",
            )
        } else {
            f.write_str(
                " (the server still reports this key in progress and did not say when to \
                 come back; retry later under the same key, and if this server answers 409 \
                 for completed keys too, set retry_conflict_when_keyed(false))",
            )
        }
    }

    /// `; last: …` for an intent whose last attempt got no response: what failed, in
    /// words a person can act on (never the URL, the key or credentials).
    fn write_last_failure(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(AttemptOutcome::Failed(failure)) = self.inner.log.last().map(|a| *a.outcome())
        else {
            return Ok(());
        };
        if failure == TransportFailure::ResponseTooLarge {
            // Already said, with the limit and the size, in why it was not retried.
            return Ok(());
        }
        if failure == TransportFailure::Timeout {
            let after = self
                .inner
                .log
                .last()
                .map_or(Duration::ZERO, |a| a.duration());
            return write!(f, "; last: timeout after {}", ShortDuration(after));
        }
        let host = self
            .transport_error()
            .and_then(reqwest::Error::url)
            .and_then(|url| url.host_str());
        // A certificate belongs to a host: the message names it, and the remedy.
        write!(f, "; last: {}", failure.explain(host))?;
        match self.transport_error().and_then(failure::detail) {
            Some(detail) if detail != failure.describe() => write!(f, " ({detail})")?,
            _ => {}
        }
        Ok(())
    }
}
