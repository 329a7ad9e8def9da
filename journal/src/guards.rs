//! Switches for the guards the journal's rules depend on, so that the
//! workspace's model checker can break one guard in the crate's own function
//! and show that a property then fails.
//!
//! The crate always passes [`Guards::ALL`]. Without the `unstable-model-rules`
//! feature, `Guards` is a unit type whose `holds` is always true: the switch
//! costs nothing and cannot be turned.

/// A guard a rule of the journal depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    not(feature = "unstable-model-rules"),
    allow(unreachable_pub, dead_code)
)]
pub enum Guard {
    /// Only `committed` and `aborted` answer a write-ahead whose `COMMIT`
    /// answer was lost; anything else leaves its outcome unknown.
    CommitStatusUnknownIsNoAnswer,
    /// A resumed run ends before its lease does.
    RunEndsBeforeLease,
    /// An intent taken up more than the maximum runs is abandoned.
    AbandonAfterMaxRuns,
    /// A send joining an open intent waits for its live sender.
    JoinWaitsForLiveSender,
    /// Only the acknowledgement whose update changed the row applies a result.
    OnlyTheFirstAcknowledgementApplies,
}

#[cfg(feature = "unstable-model-rules")]
mod switch {
    use super::Guard;

    /// Which guards hold: all of them, or all but one (a mutation).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct Guards {
        broken: Option<Guard>,
    }

    impl Guards {
        /// Every guard holds: what the crate always passes.
        pub const ALL: Self = Self { broken: None };

        /// Every guard but `guard` holds.
        pub fn without(guard: Guard) -> Self {
            Self {
                broken: Some(guard),
            }
        }

        /// Whether `guard` holds.
        pub fn holds(self, guard: Guard) -> bool {
            self.broken != Some(guard)
        }
    }
}

#[cfg(not(feature = "unstable-model-rules"))]
mod switch {
    use super::Guard;

    /// Every guard holds, always.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Guards;

    impl Guards {
        /// Every guard holds.
        pub(crate) const ALL: Self = Self;

        /// Always true.
        #[inline(always)]
        pub(crate) fn holds(self, _guard: Guard) -> bool {
            true
        }
    }
}

#[cfg(feature = "unstable-model-rules")]
pub use switch::Guards;
#[cfg(not(feature = "unstable-model-rules"))]
pub(crate) use switch::Guards;
