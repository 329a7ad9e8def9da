//! What one resume run came to, as the outcome the journal records: a pure
//! rule over the facts of the run, with its table test.

use std::time::Duration;

use http::{HeaderMap, StatusCode};

use crate::durable::{final_response, unknown};
use crate::record::Outcome;

/// The facts of a run that gave up without a final response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GaveUp {
    /// The stored request could not even be built (nothing was sent).
    pub invalid_request: bool,
    /// An attempt may have reached the server without a final answer.
    pub outcome_unknown: bool,
    /// The last response's status, if one came.
    pub status: Option<StatusCode>,
    /// How long the server (`Retry-After`) or a gate asked to wait.
    pub wait_hint: Option<Duration>,
    /// Why it gave up.
    pub reason: String,
}

/// How a run ended.
#[derive(Debug)]
pub enum RunEnd<'a> {
    /// A final response.
    Response(StatusCode, &'a HeaderMap),
    /// No final response.
    GaveUp(GaveUp),
}

/// The outcome to record. `runs` is the intent's runs counting this one;
/// `retry_after` the journal's longest pause before an open intent is due again
/// (`unknown_retry_after`: the pause grows to it run by run, see `next_run`), and
/// its pause before an intent nothing happened to is due again.
pub fn run_outcome(end: RunEnd<'_>, runs: i64, retry_after: Duration) -> Outcome {
    match end {
        RunEnd::Response(StatusCode::CONFLICT, _) => unknown(
            Some(StatusCode::CONFLICT),
            runs,
            None,
            retry_after,
            "409 in progress",
        ),
        RunEnd::Response(status, headers) => final_response(Some(status), Some(headers)),
        RunEnd::GaveUp(gave_up) if gave_up.invalid_request => Outcome::Failed {
            status: None,
            reason: format!("stored request cannot be sent: {}", gave_up.reason),
        },
        // Nothing happened at the server: due again, the run given back.
        RunEnd::GaveUp(gave_up) if !gave_up.outcome_unknown => Outcome::NotPerformed {
            queued: runs <= 1,
            status: gave_up.status.map(|s| s.as_u16()),
            retry_in: retry_after.max(gave_up.wait_hint.unwrap_or_default()),
            reason: gave_up.reason,
        },
        RunEnd::GaveUp(gave_up) => unknown(
            gave_up.status,
            runs,
            gave_up.wait_hint,
            retry_after,
            &gave_up.reason,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gave_up(outcome_unknown: bool, status: Option<u16>, wait_s: Option<u64>) -> GaveUp {
        GaveUp {
            invalid_request: false,
            outcome_unknown,
            status: status.map(|s| StatusCode::from_u16(s).unwrap()),
            wait_hint: wait_s.map(Duration::from_secs),
            reason: "why".into(),
        }
    }

    #[test]
    fn each_way_a_run_ends_has_one_outcome() {
        let s = Duration::from_secs;
        let retry_after = s(30);
        let mut located = HeaderMap::new();
        located.insert(http::header::LOCATION, "/payments/7".parse().unwrap());
        let not_performed = |queued, status, retry_in| Outcome::NotPerformed {
            queued,
            status,
            retry_in,
            reason: "why".into(),
        };
        let open = |status, retry_in| Outcome::Unknown {
            status,
            retry_in,
            reason: "why".into(),
        };
        let invalid = GaveUp {
            invalid_request: true,
            ..gave_up(false, None, None)
        };
        let table: Vec<(RunEnd<'_>, i64, Outcome)> = vec![
            (
                RunEnd::Response(StatusCode::CREATED, &located),
                1,
                Outcome::Succeeded {
                    status: 201,
                    locator: Some("/payments/7".into()),
                },
            ),
            (
                RunEnd::Response(StatusCode::UNPROCESSABLE_ENTITY, &located),
                3,
                Outcome::Failed {
                    status: Some(422),
                    reason: "final status 422 Unprocessable Entity".into(),
                },
            ),
            (
                RunEnd::Response(StatusCode::CONFLICT, &located),
                2,
                Outcome::Unknown {
                    status: Some(409),
                    retry_in: s(2),
                    reason: "409 in progress".into(),
                },
            ),
            (
                RunEnd::GaveUp(invalid),
                1,
                Outcome::Failed {
                    status: None,
                    reason: "stored request cannot be sent: why".into(),
                },
            ),
            // Refused before anything happened: an outbox intent never performed
            // goes back to the queue, a resumed one stays unknown.
            (
                RunEnd::GaveUp(gave_up(false, None, None)),
                1,
                not_performed(true, None, retry_after),
            ),
            (
                RunEnd::GaveUp(gave_up(false, Some(429), Some(120))),
                4,
                not_performed(false, Some(429), s(120)),
            ),
            (
                RunEnd::GaveUp(gave_up(false, None, Some(5))),
                1,
                not_performed(true, None, retry_after),
            ),
            // May have reached the server: unknown, the run counted.
            (
                RunEnd::GaveUp(gave_up(true, Some(503), None)),
                1,
                open(Some(503), s(1)),
            ),
            (
                RunEnd::GaveUp(gave_up(true, Some(503), None)),
                7,
                open(Some(503), retry_after),
            ),
            (
                RunEnd::GaveUp(gave_up(true, None, Some(90))),
                2,
                open(None, s(90)),
            ),
        ];
        for (end, runs, expected) in table {
            let described = format!("{end:?} after {runs} runs");
            assert_eq!(run_outcome(end, runs, retry_after), expected, "{described}");
        }
    }
}
