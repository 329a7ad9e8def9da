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

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Half the attempts failing trips, from four attempts on; a window of 10 s in
    /// slots of 1 s; a first attempt out longer than 1 s is slow.
    fn rule(origin: Instant) -> TripRule {
        TripRule {
            ratio: Millionths::floor(0.5, 1),
            minimum_throughput: 4,
            slow_call_duration: Some(1_000 * MS),
            epochs: Epochs::new(origin, 10_000 * MS),
        }
    }

    #[test]
    fn the_failures_trip_at_the_ratio_from_the_minimum_throughput() {
        let rule = rule(Instant::now());
        #[rustfmt::skip]
        let rows = [
            ("every attempt failed, below the minimum throughput", 3, 3, false),
            ("the minimum throughput, exactly the ratio",          4, 2, true),
            ("just under the ratio",                               5, 2, false),
            ("past the ratio",                                     5, 3, true),
            ("no failure",                                         4, 0, false),
        ];
        for (name, attempts, failures, tripped) in rows {
            let outcomes = Outcomes { attempts, failures };
            assert_eq!(rule.is_tripped(outcomes), tripped, "{name}");
        }
    }

    #[test]
    fn only_the_failure_that_brings_the_failures_to_the_ratio_trips() {
        let rule = rule(Instant::now());
        let mut tally = Tally::default();
        #[rustfmt::skip]
        let outcomes = [
            ("1 of 1 failed: below the minimum throughput", true,  false),
            ("2 of 2",                                      true,  false),
            ("3 of 3",                                      true,  false),
            ("3 of 4 is past the ratio, but a success",     false, false),
            ("4 of 5 failed",                               true,  true),
        ];
        for (name, failed, tripped) in outcomes {
            assert_eq!(tally.record(failed, 0, &rule), tripped, "{name}");
        }
    }

    #[test]
    fn empty_is_nothing_counted_and_nothing_out() {
        let origin = Instant::now();
        let rule = rule(origin);
        let mut tally = Tally::default();
        assert!(tally.is_empty(0), "new");
        tally.sent(0);
        assert!(!tally.is_empty(0), "a first attempt out");
        tally.returned(Some(origin), &rule);
        assert!(tally.is_empty(0), "the attempt came back");
        let _ = tally.record(false, 0, &rule);
        assert!(!tally.is_empty(0), "an outcome counted");
        assert!(tally.is_empty(10), "the window moved past it");
    }

    #[test]
    fn first_attempts_out_past_the_slow_call_duration_count_as_failures() {
        let origin = Instant::now();
        let rule = rule(origin);
        let at = |ms: u64| origin + Duration::from_millis(ms);
        let stalled =
            |tally: &Tally, now: Instant| tally.is_stalled(now, rule.epochs.of(now), &rule);
        // Two successes, and two first attempts out since the slot of 0 s.
        let mut tally = Tally::default();
        for _ in 0..2 {
            let _ = tally.record(false, 0, &rule);
            tally.sent(0);
        }
        assert!(
            !stalled(&tally, at(1_999)),
            "their slot is not a whole second old"
        );
        assert!(stalled(&tally, at(2_000)), "2 slow of 4: the ratio");
        let slow_off = TripRule {
            slow_call_duration: None,
            ..rule
        };
        assert!(
            !tally.is_stalled(at(60_000), 6, &slow_off),
            "no slow call duration"
        );
        // One attempt out against four successes: slow, but far from the ratio.
        let mut tally = Tally::default();
        for _ in 0..4 {
            let _ = tally.record(false, 0, &rule);
        }
        tally.sent(0);
        assert!(!stalled(&tally, at(2_000)), "1 slow of 5");
        // At the ratio through ended attempts alone (a success was the last), with
        // nothing out: not a stall, whatever the window says.
        let mut tally = Tally::default();
        for failed in [true, true, true, false] {
            let _ = tally.record(failed, 0, &rule);
        }
        assert!(!stalled(&tally, at(2_000)), "nothing out");
    }
}
