//! The journal crate's pure rules (`reqwest_resilience_journal::model_rules`), as
//! the model calls them: its plain values turned into the crate's types, and the
//! answers turned back. Every function calls the crate's own rule, unchanged.

use std::time::Duration;

use http::StatusCode;

pub use reqwest_resilience_journal::model_rules::Verdict;
use reqwest_resilience_journal::model_rules::{self as crate_rules, GaveUp, RunEnd, RunFacts};
use reqwest_resilience_journal::{IntentState, Outcome};

/// What a durable send does with the intent already journaled under its key
/// (`join::Step`, without the refusal's wording).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JoinStep {
    /// Take it over if nobody may be sending it, else wait.
    TakeOverOrWait,
    /// Terminal with an answer: send again without a journal row.
    SendUnjournaled,
    /// Not the same intent, or no longer safe to send: refused, nothing sent.
    Refuse,
}

/// The join step (`join::step_for`).
pub fn join_step(same_request: bool, state: IntentState, retention_over: bool) -> JoinStep {
    match crate_rules::join_step(same_request, state, retention_over) {
        crate_rules::JoinStep::TakeOverOrWait => JoinStep::TakeOverOrWait,
        crate_rules::JoinStep::SendUnjournaled => JoinStep::SendUnjournaled,
        crate_rules::JoinStep::Refuse(_) => JoinStep::Refuse,
    }
}

/// What a write-ahead whose `COMMIT` answer was lost makes of the database's
/// transaction status (`pg_xact_status`; `None`: NULL or no answer).
pub fn commit_verdict(status: Option<&str>) -> Verdict {
    crate_rules::commit_verdict(status)
}

/// The outcome a resumed run records (`run_outcome`): `status` the final
/// response's, or `None` for a run that gave up without one, in which case
/// `outcome_unknown` says whether it may have reached the server.
pub fn run_outcome(
    status: Option<u16>,
    outcome_unknown: bool,
    runs: i64,
    retry_after: Duration,
) -> Outcome {
    let headers = http::HeaderMap::new();
    let end = match status.and_then(|s| StatusCode::from_u16(s).ok()) {
        Some(status) => RunEnd::Response(status, &headers),
        None => RunEnd::GaveUp(GaveUp {
            invalid_request: false,
            outcome_unknown,
            status: None,
            wait_hint: None,
            reason: "gave up".to_owned(),
        }),
    };
    crate_rules::run_outcome(end, runs, retry_after)
}

/// The outcome a durable send's first run records (`durable::first_run_outcome`):
/// `status` the final response's, or `None` for a give-up.
pub fn first_run_outcome(
    status: Option<u16>,
    outcome_unknown: bool,
    unknown_retry_after: Duration,
) -> Outcome {
    let status = status.and_then(|s| StatusCode::from_u16(s).ok());
    let gave_up = status.is_none().then_some("gave up");
    crate_rules::first_run_outcome_of(
        status,
        None,
        gave_up,
        outcome_unknown,
        None,
        unknown_retry_after,
    )
}

/// A resumed run's deadline, or the outcome it is abandoned with
/// (`resume::plan_run`).
#[allow(clippy::too_many_arguments)]
pub fn plan_run(
    runs: i64,
    deadline: Option<Duration>,
    retention_left: Duration,
    lease_left: Duration,
    max_runs: i64,
    lease_margin: Duration,
    resume_lease: Duration,
) -> Result<Duration, Outcome> {
    let facts = RunFacts {
        runs,
        deadline,
        retention_left,
        lease_left,
    };
    crate_rules::plan_run(&facts, max_runs, lease_margin, resume_lease)
}

/// The lease a durable send writes ahead with (`Journal::lease_for`).
pub fn lease_for(deadline: Option<Duration>, resume_lease: Duration, margin: Duration) -> Duration {
    crate_rules::lease_for(deadline, resume_lease, margin)
}

/// What an acknowledgement returns (`delivery::settle`): `first` when its
/// update changed the row, `state` the row's state as it saw it (`None`: no row).
/// `Ok(true)`: apply the result; `Ok(false)`: applied already; `Err`: refused.
pub fn settle(first: bool, state: Option<IntentState>) -> Result<bool, String> {
    crate_rules::settle("key", first, state).map_err(|e| e.to_string())
}
