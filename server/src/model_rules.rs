//! The crate's pure rules, re-exported for the workspace's model checker (`model/`) only.
//!
//! Behind the `unstable-model-rules` feature and hidden from the docs: no part of the
//! crate's API, no promise of stability. These are the functions the crate itself
//! runs, unchanged; the model adapts its own state to their types.

pub use crate::decision::{answer_existing, in_progress_retry_after, Answer, InProgressPace};
pub use crate::key::{parse_key, Key, KeyProblem};
pub use crate::store::rules::{claim_rule, token_holds, Found, Seen};
