//! Durable send: write the intent ahead, send, record the result.
//!
//! [`DurableExt::durable`] gives a request a write-ahead of its own. Its
//! `before_first_byte` runs after the key is decided and before the first byte leaves:
//! it writes the intent ahead (`in_flight`, leased to this worker), or joins the
//! intent already journaled under the key (see `join`), and refuses the intent —
//! nothing is sent — when that write provably did not commit, when the body is a
//! stream, or when a POST/PATCH has no key; a write whose commit outcome is
//! unknown refuses it as outcome unknown. Its `after_end` records the result
//! under the lease (`succeeded`, `failed`, or `unknown` to be resumed); for a
//! result it could not record, see `unrecorded`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderMap, StatusCode};
use reqwest_resilience::{
    is_idempotent_method, BoxError as CoreBoxError, IntentEnd, IntentStart, RequestBuilder,
    WriteAhead, WriteAheadFuture,
};

use crate::error::JournalError;
use crate::headers::defining_headers;
use crate::join;
use crate::journal::Journal;
use crate::next_run::pause_before_next_run;
use crate::record::{Lease, NewIntent, Outcome};
use crate::unrecorded;

/// Per-intent settings of a durable send.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct DurableOptions {
    retention: Option<Duration>,
}

impl DurableOptions {
    /// The journal's settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long the server keeps this intent's key (overrides the journal's).
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = Some(retention);
        self
    }

    /// This intent's key retention, or the journal's.
    pub(crate) fn retention_or(&self, journal_default: Duration) -> Duration {
        self.retention.unwrap_or(journal_default)
    }
}

/// Makes a [`RequestBuilder`] durable: `client.post(url).json(&b).durable(&journal).send()`.
pub trait DurableExt {
    /// Writes the intent ahead to `journal` before its first byte leaves, and
    /// records its result there.
    ///
    /// `send()` then fails without sending anything
    /// ([`reqwest_resilience::Error::is_write_ahead_refused`]; the
    /// [`JournalError`] is its source, see [`journal_error`]) when the journal
    /// write fails, the body is a stream, the key is journaled for an intent this
    /// send cannot join ([`JournalError::KeyInUse`]), or a POST or PATCH has no
    /// idempotency key. When the write may have committed
    /// ([`JournalError::CommitUnknown`]) the error says
    /// [`is_outcome_unknown`](reqwest_resilience::Error::is_outcome_unknown) and
    /// [`is_write_ahead_unconfirmed`](reqwest_resilience::Error::is_write_ahead_unconfirmed)
    /// instead, never "refused": the journal may still send the intent; retry
    /// only with the same key.
    ///
    /// A key already journaled for the same request is the same intent: the send
    /// joins it (takes it over, waits for its sender, or — once it is terminal —
    /// sends it again without a new row, and the server replays its answer).
    ///
    /// When the result cannot be recorded (after three tries), the caller still
    /// gets its `Ok(response)`, marked
    /// [`end_not_recorded`](reqwest_resilience::ResponseExt::end_not_recorded)
    /// (see [`EndNotRecorded`](reqwest_resilience::EndNotRecorded)).
    ///
    /// This is the request's [write-ahead](reqwest_resilience::WriteAhead): an
    /// intent has one, so a second `durable` replaces the first and the intent is
    /// written once.
    fn durable(self, journal: &Journal) -> Self;

    /// [`durable`](Self::durable) with per-intent settings.
    fn durable_with(self, journal: &Journal, options: DurableOptions) -> Self;
}

impl DurableExt for RequestBuilder {
    fn durable(self, journal: &Journal) -> Self {
        self.durable_with(journal, DurableOptions::default())
    }

    fn durable_with(self, journal: &Journal, options: DurableOptions) -> Self {
        self.write_ahead(Arc::new(DurableWriteAhead {
            retention: options.retention_or(journal.settings().retention),
            journal: journal.clone(),
            lease: Mutex::new(None),
        }))
    }
}

/// The journal's error behind a refused durable send, if that is why it failed.
pub fn journal_error(error: &reqwest_resilience::Error) -> Option<&JournalError> {
    std::error::Error::source(error)?.downcast_ref::<JournalError>()
}

/// One intent's write-ahead: the lease it took, for the end it records.
struct DurableWriteAhead {
    journal: Journal,
    retention: Duration,
    lease: Mutex<Option<Lease>>,
}

impl WriteAhead for DurableWriteAhead {
    fn before_first_byte<'a>(
        &'a self,
        intent: &'a IntentStart<'a>,
    ) -> WriteAheadFuture<'a, Result<(), CoreBoxError>> {
        Box::pin(async move {
            let new = new_intent(&self.journal, self.retention, intent)?;
            let lease_for = self.journal.lease_for(new.deadline);
            let written = self
                .journal
                .store()
                .write_ahead(&new, self.journal.worker(), lease_for)
                .await;
            let lease = match written {
                Ok(lease) => Some(lease),
                // The same key is the same intent: join it.
                Err(JournalError::DuplicateKey { .. }) => {
                    join::join(&self.journal, &new, lease_for).await?
                }
                Err(error) => return Err(error.into()),
            };
            *self.lease.lock().unwrap_or_else(|e| e.into_inner()) = lease;
            Ok(())
        })
    }

    fn after_end<'a>(
        &'a self,
        end: &'a IntentEnd<'a>,
    ) -> WriteAheadFuture<'a, Result<(), CoreBoxError>> {
        Box::pin(async move {
            let lease = self.lease.lock().unwrap_or_else(|e| e.into_inner()).take();
            let Some(lease) = lease else {
                return Ok(()); // never written ahead
            };
            let outcome = first_run_outcome(end, self.journal.settings().unknown_retry_after);
            let state = outcome.state();
            if let Err(error) = unrecorded::record(&self.journal, lease, outcome).await {
                // The rule for what happens next lives in `unrecorded`.
                tracing::warn!(%error, %state, "journal: result not recorded yet; kept to write once the database is back");
                return Err(error.into());
            }
            Ok(())
        })
    }
}

/// The record a durable send writes ahead, and an outbox enqueues: credentials
/// and the key header left out, the body as exact bytes.
///
/// # Errors
/// [`JournalError::BodyNotInMemory`] for a streamed body,
/// [`JournalError::KeyRequired`] for a POST or PATCH without a key.
pub(crate) fn new_intent(
    journal: &Journal,
    retention: Duration,
    intent: &IntentStart<'_>,
) -> Result<NewIntent, JournalError> {
    let body = match intent.body() {
        Some(bytes) => bytes,
        None if intent.has_body() => return Err(JournalError::BodyNotInMemory),
        None => &[],
    };
    let method = intent.method().clone();
    let (key, key_on_wire) = match intent.key() {
        Some(key) => (key.as_str().to_owned(), true),
        None if is_idempotent_method(&method) => (format!("local-{}", uuid::Uuid::new_v4()), false),
        None => {
            return Err(JournalError::KeyRequired {
                method: method.to_string(),
            })
        }
    };
    let key_header = intent.key_header().filter(|_| key_on_wire);
    Ok(NewIntent {
        headers: defining_headers(
            intent.headers(),
            &journal.settings().excluded_headers,
            key_header,
        ),
        url: without_userinfo(intent.url()),
        body: body.to_vec(),
        deadline: intent.deadline(),
        retention,
        key,
        key_on_wire,
        method,
    })
}

/// The URL without `user:password@` (credentials, like `Authorization`, are
/// never journaled; the resume hook adds them back).
fn without_userinfo(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    // Both fail only for URLs that cannot have userinfo, which then have none.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.into()
}

/// The result of the first run, as the caller saw it. A give-up whose outcome is
/// known (nothing reached the server, or it answered that it did nothing) is
/// terminal: the caller was told it failed, so the journal must not do it later.
fn first_run_outcome(end: &IntentEnd<'_>, unknown_retry_after: Duration) -> Outcome {
    first_run_outcome_of(
        end.status(),
        end.headers(),
        end.gave_up().map(|reason| reason.as_str()),
        end.is_outcome_unknown(),
        end.retry_after(),
        unknown_retry_after,
    )
}

/// The caller's own send is an intent's first run.
const FIRST_RUN: i64 = 1;

/// `first_run_outcome` over the facts of the end: its status and headers,
/// why it gave up (if it did), whether the outcome is unknown, and the
/// server's `Retry-After`.
pub fn first_run_outcome_of(
    status: Option<StatusCode>,
    headers: Option<&HeaderMap>,
    gave_up: Option<&str>,
    outcome_unknown: bool,
    retry_after: Option<Duration>,
    unknown_retry_after: Duration,
) -> Outcome {
    let in_progress = status == Some(StatusCode::CONFLICT);
    match gave_up {
        None if !in_progress => final_response(status, headers),
        None => unknown(
            status,
            FIRST_RUN,
            retry_after,
            unknown_retry_after,
            "409 in progress",
        ),
        Some(reason) if outcome_unknown || in_progress => {
            unknown(status, FIRST_RUN, retry_after, unknown_retry_after, reason)
        }
        Some(reason) => Outcome::Failed {
            status: status.map(|s| s.as_u16()),
            reason: reason.to_owned(),
        },
    }
}

/// A final response: a success with its result locator, or a definite failure.
pub(crate) fn final_response(status: Option<StatusCode>, headers: Option<&HeaderMap>) -> Outcome {
    match status {
        Some(status) if status.is_success() || status.is_redirection() => Outcome::Succeeded {
            status: status.as_u16(),
            locator: headers
                .and_then(|h| h.get(http::header::LOCATION))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        },
        Some(status) => Outcome::Failed {
            status: Some(status.as_u16()),
            reason: format!("final status {status}"),
        },
        None => Outcome::Failed {
            status: None,
            reason: "ended without a response".to_owned(),
        },
    }
}

/// An open outcome after the intent's `runs`-th run: due again after the pause
/// `next_run` sets from `hint` (the server's `Retry-After`) and `longest` (the
/// journal's `unknown_retry_after`).
pub(crate) fn unknown(
    status: Option<StatusCode>,
    runs: i64,
    hint: Option<Duration>,
    longest: Duration,
    reason: &str,
) -> Outcome {
    Outcome::Unknown {
        status: status.map(|s| s.as_u16()),
        retry_in: pause_before_next_run(runs, hint, longest),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A per-intent retention wins over the journal's; without one the
    /// journal's holds.
    #[test]
    fn an_intents_own_retention_overrides_the_journals() {
        let hour = Duration::from_secs(3_600);
        let journals = Duration::from_secs(23 * 3_600);
        assert_eq!(
            DurableOptions::new().retention(hour).retention_or(journals),
            hour
        );
        assert_eq!(DurableOptions::new().retention_or(journals), journals);
    }

    /// The first run's outcome for every kind of end: a final response is
    /// terminal (success with its locator, or failure), a 409 or a give-up
    /// whose outcome is unknown is resumed later, a give-up that provably did
    /// nothing is a failure the journal must never send again.
    #[test]
    fn the_first_run_comes_to_what_the_caller_saw() {
        let s = Duration::from_secs;
        let code = |c: u16| Some(StatusCode::from_u16(c).expect("status"));
        let mut located = HeaderMap::new();
        located.insert(
            http::header::LOCATION,
            "/payments/7".parse().expect("value"),
        );
        let succeeded = |status, locator: Option<&str>| Outcome::Succeeded {
            status,
            locator: locator.map(str::to_owned),
        };
        let failed = |status, reason: &str| Outcome::Failed {
            status,
            reason: reason.to_owned(),
        };
        let unknown = |status, retry_in, reason: &str| Outcome::Unknown {
            status,
            retry_in,
            reason: reason.to_owned(),
        };
        #[rustfmt::skip]
        let rows = [
            // (what, status, headers, gave up, outcome unknown, Retry-After, outcome)
            ("created, with where", code(201), Some(&located), None, false, None, succeeded(201, Some("/payments/7"))),
            ("a redirection is final", code(303), None, None, false, None, succeeded(303, None)),
            ("a refusal is final", code(422), None, None, false, None, failed(Some(422), "final status 422 Unprocessable Entity")),
            ("no response at all", None, None, None, false, None, failed(None, "ended without a response")),
            ("in progress elsewhere", code(409), None, None, false, None, unknown(Some(409), s(1), "409 in progress")),
            ("in progress, come back later", code(409), None, None, false, Some(s(90)), unknown(Some(409), s(90), "409 in progress")),
            ("gave up, may have been done", None, None, Some("deadline"), true, None, unknown(None, s(1), "deadline")),
            ("gave up, come back later", code(503), None, Some("retry_after_beyond_deadline"), true, Some(s(5)), unknown(Some(503), s(5), "retry_after_beyond_deadline")),
            ("gave up on a 409", code(409), None, Some("attempts"), false, None, unknown(Some(409), s(1), "attempts")),
            ("gave up, provably not done", code(503), None, Some("attempts"), false, None, failed(Some(503), "attempts")),
        ];
        for (what, status, headers, gave_up, outcome_unknown, retry_after, want) in rows {
            let got = first_run_outcome_of(
                status,
                headers,
                gave_up,
                outcome_unknown,
                retry_after,
                s(30),
            );
            assert_eq!(got, want, "{what}");
        }
    }

    /// Credentials in the URL are never journaled; the rest of it is kept.
    #[test]
    fn a_journaled_url_has_no_credentials() {
        let url =
            reqwest::Url::parse("http://pay:s3cret@127.0.0.1:8080/payments?id=7").expect("url");
        assert_eq!(
            without_userinfo(&url),
            "http://127.0.0.1:8080/payments?id=7"
        );
    }
}
