//! The crate's pure rules, for the workspace's model checker (`model/`) only.
//!
//! Behind the `unstable-model-rules` feature and hidden from the docs: no part of the
//! crate's API, no promise of stability. Everything here calls the same function the
//! crate itself runs; the [`Guards`] argument is what the crate passes as
//! [`Guards::ALL`], and what a mutation test turns one guard off in.

use std::time::Duration;

use http::StatusCode;

pub use crate::commit_verdict::Verdict;
pub use crate::guards::{Guard, Guards};
use crate::record::Outcome;
use crate::resume::RunFacts;
use crate::run_outcome::{GaveUp, RunEnd};
use crate::state::IntentState;

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
pub fn join_step(
    same_request: bool,
    state: IntentState,
    retention_over: bool,
    guards: Guards,
) -> JoinStep {
    match crate::join::step_for(same_request, state, retention_over, guards) {
        crate::join::Step::TakeOverOrWait => JoinStep::TakeOverOrWait,
        crate::join::Step::SendUnjournaled => JoinStep::SendUnjournaled,
        crate::join::Step::Refuse(_) => JoinStep::Refuse,
    }
}

/// What a write-ahead whose `COMMIT` answer was lost makes of the database's
/// transaction status (`pg_xact_status`; `None`: NULL or no answer).
pub fn commit_verdict(status: Option<&str>, guards: Guards) -> Verdict {
    crate::commit_verdict::verdict(status, guards)
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
    crate::run_outcome::run_outcome(end, runs, retry_after)
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
    crate::durable::first_run_outcome_of(
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
    guards: Guards,
) -> Result<Duration, Outcome> {
    let facts = RunFacts {
        runs,
        deadline,
        retention_left,
        lease_left,
    };
    crate::resume::plan_run(&facts, max_runs, lease_margin, resume_lease, guards)
}

/// The lease a durable send writes ahead with (`Journal::lease_for`).
pub fn lease_for(deadline: Option<Duration>, resume_lease: Duration, margin: Duration) -> Duration {
    crate::journal::lease_for(deadline, resume_lease, margin)
}

/// What an acknowledgement returns (`delivery::settle`): `first` when its
/// update changed the row, `state` the row's state as it saw it (`None`: no row).
/// `Ok(true)`: apply the result; `Ok(false)`: applied already; `Err`: refused.
pub fn settle(first: bool, state: Option<IntentState>, guards: Guards) -> Result<bool, String> {
    crate::delivery::settle_guarded("key", first, state, guards).map_err(|e| e.to_string())
}
