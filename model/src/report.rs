//! What one model check found, printed as the `MODEL` line.

use std::fmt;
use std::time::Duration;

/// How far a check goes: CI's bounded form or the full form of `model/scripts/full.sh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The bounded form `.ci/run` runs: all three models together within a minute.
    Bounded,
    /// The target sizes (3 clients × 2 keys × 2 workers), or the largest
    /// exhaustive size plus a simulation at the target, as the model's docs say.
    Full,
}

/// The size and outcome of one model check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The model's name (`server`, `journal`, `client`), with its configuration if it
    /// runs more than one.
    pub name: String,
    /// Unique states visited.
    pub states: usize,
    /// The deepest path explored.
    pub depth: usize,
    /// Whether the whole bounded space was explored (false: a simulation or a cut-off).
    pub exhaustive: bool,
    /// How long the check took.
    pub elapsed: Duration,
    /// Properties that failed, each with its counterexample trace.
    pub failures: Vec<String>,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MODEL {} states={} depth={} exhaustive={} seconds={:.1}",
            self.name,
            self.states,
            self.depth,
            self.exhaustive,
            self.elapsed.as_secs_f64()
        )
    }
}
