//! The crate's pure rules, re-exported for the workspace's model checker (`model/`) only.
//!
//! Behind the `unstable-model-rules` feature and hidden from the docs: no part of the
//! crate's API, no promise of stability. These are the functions the crate itself
//! runs, unchanged; the model adapts its own state to their types.

pub use crate::commit_verdict::{verdict as commit_verdict, Verdict};
pub use crate::delivery::settle;
pub use crate::durable::first_run_outcome_of;
pub use crate::join::{step_for as join_step, Step as JoinStep};
pub use crate::journal::lease_for;
pub use crate::resume::{plan_run, RunFacts};
pub use crate::run_outcome::{run_outcome, GaveUp, RunEnd};
