//! The states an intent goes through in the journal.

use std::fmt;
use std::str::FromStr;

/// Where a journaled intent stands. See the crate docs for the state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IntentState {
    /// Written by an outbox enqueue in the caller's own transaction and never
    /// sent yet: due for a relay (a resumer) to claim and send.
    Queued,
    /// Owned by one worker under a lease: being sent now (or its worker died, and
    /// the lease will expire).
    InFlight,
    /// A final answer that is a success (2xx/3xx). Terminal.
    Succeeded,
    /// A definite answer that is not a success (a 4xx such as 422 payload mismatch,
    /// a non-retried 5xx), or the intent provably never reached the server. Terminal.
    Failed,
    /// The outcome is unknown (timeout after the request left, lost response, 409
    /// still in progress): due to be resumed with the same key and body at `due_at`.
    Unknown,
    /// Given up without an answer: the server's key retention would have ended, the
    /// intent ran too often, or a person abandoned it. Terminal; reconcile by hand
    /// or through the server's status route.
    Abandoned,
}

impl IntentState {
    /// Every state, in the order of the state machine.
    pub const ALL: [IntentState; 6] = [
        Self::Queued,
        Self::InFlight,
        Self::Succeeded,
        Self::Failed,
        Self::Unknown,
        Self::Abandoned,
    ];

    /// The name stored in the journal (`in_flight`, `succeeded`, …).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::InFlight => "in_flight",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Unknown => "unknown",
            Self::Abandoned => "abandoned",
        }
    }

    /// True for `succeeded`, `failed` and `abandoned`: never resumed again.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Abandoned)
    }
}

impl fmt::Display for IntentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stored state name that is not one of [`IntentState`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown intent state {0:?}")]
pub struct UnknownState(pub String);

impl FromStr for IntentState {
    type Err = UnknownState;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| UnknownState(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for state in IntentState::ALL {
            assert_eq!(state.as_str().parse::<IntentState>(), Ok(state));
        }
        assert!("done".parse::<IntentState>().is_err());
    }

    #[test]
    fn only_queued_in_flight_and_unknown_are_open() {
        let open: Vec<_> = IntentState::ALL
            .into_iter()
            .filter(|s| !s.is_terminal())
            .collect();
        assert_eq!(
            open,
            [
                IntentState::Queued,
                IntentState::InFlight,
                IntentState::Unknown
            ]
        );
    }
}
