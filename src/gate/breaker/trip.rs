//! When a closed circuit trips: the outcomes it counts over the sampling duration,
//! the first attempts it has out, and the rule that says the failures reached the
//! ratio. What a trip does to the circuit is the phases' (`phases.rs`); this file
//! only counts and compares.

use std::time::Duration;

use crate::clock::Instant;
use crate::gate::ratio::{whole, Millionths};
use crate::gate::window::{counts, Epochs, Window};

/// The settings a closed circuit trips by, and the clock of its window.
#[derive(Debug, Clone, Copy)]
pub(super) struct TripRule {
    pub(super) ratio: Millionths,
    pub(super) minimum_throughput: u64,
    pub(super) slow_call_duration: Option<Duration>,
    pub(super) epochs: Epochs,
}

counts! {
    /// What one bucket of a circuit's window counts.
    struct Outcomes {
        attempts,
        failures,
    }
}

/// What a circuit counts toward tripping; a change of phase starts an empty one.
#[derive(Default)]
pub(super) struct Tally {
    window: Window<Outcomes>,
    /// First attempts admitted and not ended yet, by the slot they were admitted
    /// in (kept only with a slow call duration).
    in_flight: Window<u64>,
}

impl TripRule {
    /// The failures reach the ratio, with at least the minimum throughput.
    fn is_tripped(&self, Outcomes { attempts, failures }: Outcomes) -> bool {
        attempts >= self.minimum_throughput && whole(failures) >= self.ratio.of(attempts)
    }
}

impl Tally {
    /// Nothing counted in the window, nothing out.
    pub(super) fn is_empty(&self, epoch: u64) -> bool {
        self.window.sum(epoch).attempts == 0 && self.in_flight.sum(epoch) == 0
    }

    /// Counts an attempt that ended; whether it was a failure that brings the
    /// failures to the ratio.
    pub(super) fn record(&mut self, failed: bool, epoch: u64, rule: &TripRule) -> bool {
        let bucket = self.window.slot(epoch);
        bucket.attempts = bucket.attempts.saturating_add(1);
        bucket.failures = bucket.failures.saturating_add(u64::from(failed));
        failed && rule.is_tripped(self.window.sum(epoch))
    }

    /// First attempts still outstanding past the slow call duration, counted as
    /// failed attempts, bring the failures to the ratio.
    pub(super) fn is_stalled(&self, now: Instant, epoch: u64, rule: &TripRule) -> bool {
        let Some(slow) = rule.slow_call_duration else {
            return false;
        };
        // Whole slots that began at least `slow` ago.
        let Some(cutoff) = now.checked_sub(slow).map(|then| rule.epochs.of(then)) else {
            return false;
        };
        let stalled = self.in_flight.sum_before(epoch, cutoff);
        let Outcomes { attempts, failures } = self.window.sum(epoch);
        stalled > 0
            && rule.is_tripped(Outcomes {
                attempts: attempts.saturating_add(stalled),
                failures: failures.saturating_add(stalled),
            })
    }

    /// A first attempt was admitted at `epoch`: it is out.
    pub(super) fn sent(&mut self, epoch: u64) {
        let out = self.in_flight.slot(epoch);
        *out = out.saturating_add(1);
    }

    /// A first attempt that started at `started` (`None`: before the clock's
    /// origin) ended, or was not sent: it is back, in the slot of its admission,
    /// which for a first attempt is its start.
    pub(super) fn returned(&mut self, started: Option<Instant>, rule: &TripRule) {
        let epoch = started.map_or(0, |at| rule.epochs.of(at));
        if let Some(out) = self.in_flight.live_slot(epoch) {
            *out = out.saturating_sub(1);
        }
    }
}
