//! The adaptive hedge delay: one authority's latency, estimated over a sliding
//! window and refreshed on a period, as Finagle's `BackupRequestFilter` does.
//!
//! The rules, each a row of this file's table tests:
//! - **the percentile follows the budget**: hedging after the `q`-th percentile
//!   sends a copy for `1 − q` of the intents, so a budget of `b` extra load hedges
//!   at the `100 × (1 − b)`-th percentile (5 % → p95, 1 % → p99; see
//!   [`Hedging::trigger_percentile`](crate::Hedging::trigger_percentile));
//! - **a window refreshed on a period**: samples go into the current period's
//!   bucket; at the end of each period the estimate is worked out again from the
//!   last [`WINDOW_PERIODS`] periods. Between refreshes it holds still, so one slow
//!   burst cannot drag it;
//! - **a cold start**: no estimate, so no hedge, before the first refresh that saw
//!   `min_samples` samples;
//! - **losers and timeouts are samples, fast failures are not**: a copy overtaken
//!   by a later one ran at least that long (a copy cancelled because an earlier one
//!   answered is no sample: it ran less than the answer took), and a copy that timed out at
//!   least its timeout; leaving them out would pull the estimate below the latency
//!   it measures, and hedge more and more (tower's histogram records winners
//!   only). A transient failure answered at once (a `503`, a refused connection)
//!   says nothing of how long an answer takes, and would pull the estimate low;
//! - **no hedge while every request is slow**: when the percentile falls on a
//!   timed-out sample (the estimate is at its ceiling: beyond it the latency is
//!   unknown), or when more than half of this period's samples are slower than
//!   the estimate (the service as a whole got slower: a copy would only double
//!   the load on it), no copy goes;
//! - **no constant floor**: the service's own latency is the floor. A user may
//!   still set one ([`Hedging::floor`](crate::Hedging::floor)).
//!
//! Each bucket keeps at most [`BUCKET_SAMPLES`] samples, a uniform reservoir of
//! what the period saw (seeded: the same samples in the same order keep the same
//! ones), so memory and the refresh's cost stay bounded at any request rate.

use std::collections::VecDeque;
use std::time::Duration;

use crate::clock::Instant;

/// Periods in the window the estimate is worked out from.
pub(crate) const WINDOW_PERIODS: usize = 5;
/// Samples kept per period, at most.
pub(crate) const BUCKET_SAMPLES: usize = 512;
/// Above this share of the current period's samples slower than the estimate,
/// every request is slow: no hedge.
const SLOW_SHARE: f64 = 0.5;

/// What a copy's end tells the estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Observation {
    /// A final answer (success or a final status) after this long.
    Answered(Duration),
    /// Cancelled after this long (another copy won): a lower bound.
    Lost(Duration),
    /// Timed out after this long: a lower bound, and the ceiling of what can be
    /// known.
    TimedOut(Duration),
    /// Failed fast (a transient status, a refused connection): not a sample.
    Failed,
}

/// The estimator's settings (from [`Hedging`](crate::Hedging)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct EstimatorSettings {
    /// The trigger quantile, in (0, 1).
    pub(crate) quantile: f64,
    /// How often the estimate is worked out again (and the length of a bucket).
    pub(crate) period: Duration,
    /// Samples in the window before any estimate.
    pub(crate) min_samples: u32,
    /// The shortest delay (zero: none).
    pub(crate) floor: Duration,
}

/// Why there is no hedge delay now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoDelay {
    /// No estimate yet (cold start, or too few samples in the window).
    Cold,
    /// The percentile fell on a timed-out sample.
    AtCeiling,
    /// Most of this period's samples are slower than the estimate.
    AllSlow,
}

/// A sample, packed: microseconds (saturating at about 35 minutes) shifted left
/// by one, the low bit set for a timeout. Ordered as (duration, timed out): a
/// timeout sorts after an answer of the same duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Sample(u32);

impl Sample {
    fn new(took: Duration, timed_out: bool) -> Self {
        let micros = u32::try_from(took.as_micros())
            .unwrap_or(u32::MAX)
            .min(u32::MAX >> 1);
        Sample(micros << 1 | u32::from(timed_out))
    }

    fn took(self) -> Duration {
        Duration::from_micros(u64::from(self.0 >> 1))
    }

    fn timed_out(self) -> bool {
        self.0 & 1 == 1
    }
}

#[derive(Debug, Default)]
struct Bucket {
    samples: Vec<Sample>,
    /// Samples offered this period (the reservoir keeps `BUCKET_SAMPLES`).
    seen: u64,
    /// Of them, slower than the estimate in force.
    slower: u64,
}

/// One authority's latency estimate.
#[derive(Debug)]
pub(crate) struct Estimator {
    settings: EstimatorSettings,
    /// Finished periods, oldest first, then the current one (last).
    buckets: VecDeque<Bucket>,
    /// When the current period started.
    period_started: Instant,
    estimate: Result<Duration, NoDelay>,
    /// The reservoir's random state (SplitMix64).
    rng: u64,
}

impl Estimator {
    /// A cold estimator whose first period starts at `now`.
    pub(crate) fn new(settings: EstimatorSettings, now: Instant, seed: u64) -> Self {
        let mut buckets = VecDeque::with_capacity(WINDOW_PERIODS + 1);
        buckets.push_back(Bucket::default());
        Self {
            settings,
            buckets,
            period_started: now,
            estimate: Err(NoDelay::Cold),
            rng: seed,
        }
    }

    /// Takes in what a copy's end at `now` tells.
    pub(crate) fn observe(&mut self, now: Instant, observation: Observation) {
        self.refresh(now);
        let sample = match observation {
            Observation::Answered(took) | Observation::Lost(took) => Sample::new(took, false),
            Observation::TimedOut(took) => Sample::new(took, true),
            Observation::Failed => return,
        };
        let slower = self.estimate.is_ok_and(|estimate| sample.took() > estimate);
        let draw = self.next_random();
        let Some(bucket) = self.buckets.back_mut() else {
            return;
        };
        bucket.seen += 1;
        bucket.slower += u64::from(slower);
        if bucket.samples.len() < BUCKET_SAMPLES {
            bucket.samples.push(sample);
        } else {
            // Reservoir sampling: the n-th sample replaces one kept with
            // probability BUCKET_SAMPLES / n.
            let slot = draw % bucket.seen;
            if let Some(kept) = usize::try_from(slot)
                .ok()
                .and_then(|slot| bucket.samples.get_mut(slot))
            {
                *kept = sample;
            }
        }
    }

    /// The hedge delay at `now`, or why there is none.
    pub(crate) fn delay(&mut self, now: Instant) -> Result<Duration, NoDelay> {
        self.refresh(now);
        let estimate = self.estimate?;
        let current = self.buckets.back();
        let all_slow = current.is_some_and(|bucket| {
            bucket.seen >= u64::from(self.settings.min_samples)
                && bucket.slower as f64 > SLOW_SHARE * bucket.seen as f64
        });
        if all_slow {
            return Err(NoDelay::AllSlow);
        }
        Ok(estimate)
    }

    /// Ends the periods that are over by `now`, and works the estimate out again
    /// when one ended.
    fn refresh(&mut self, now: Instant) {
        let period = self.settings.period;
        let elapsed = now.saturating_duration_since(self.period_started);
        if elapsed < period || period.is_zero() {
            return;
        }
        // Periods with no traffic at all are empty buckets.
        let ended = (elapsed.as_nanos() / period.as_nanos()).min(WINDOW_PERIODS as u128 + 1);
        for _ in 0..ended {
            self.buckets.push_back(Bucket::default());
            while self.buckets.len() > WINDOW_PERIODS + 1 {
                self.buckets.pop_front();
            }
        }
        let whole = u32::try_from(elapsed.as_nanos() / period.as_nanos()).unwrap_or(u32::MAX);
        self.period_started += period.saturating_mul(whole);
        self.estimate = self.work_out();
    }

    /// The estimate from the finished periods in the window.
    fn work_out(&self) -> Result<Duration, NoDelay> {
        let finished = self.buckets.len().saturating_sub(1);
        let mut samples: Vec<Sample> = self
            .buckets
            .iter()
            .take(finished)
            .flat_map(|bucket| bucket.samples.iter().copied())
            .collect();
        estimate(&mut samples, self.settings)
    }

    fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The `quantile` of `samples` (nearest rank), at least `floor`: what a refresh
/// works out. Too few samples: `Cold`; the rank on a timed-out sample:
/// `AtCeiling`.
fn estimate(samples: &mut [Sample], settings: EstimatorSettings) -> Result<Duration, NoDelay> {
    if samples.is_empty() || samples.len() < settings.min_samples as usize {
        return Err(NoDelay::Cold);
    }
    // Nearest rank: the smallest sample with at least `quantile` of them at or
    // below it. A timed-out sample sorts after an answer of the same duration.
    let rank = (settings.quantile * samples.len() as f64).ceil() as usize;
    let index = rank.clamp(1, samples.len()) - 1;
    let (_, at, _) = samples.select_nth_unstable(index);
    if at.timed_out() {
        return Err(NoDelay::AtCeiling);
    }
    Ok(at.took().max(settings.floor))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const PERIOD: Duration = Duration::from_secs(1);

    fn settings(quantile: f64) -> EstimatorSettings {
        EstimatorSettings {
            quantile,
            period: PERIOD,
            min_samples: 10,
            floor: Duration::ZERO,
        }
    }

    /// An estimator fed `observations` in its first period, then refreshed.
    fn after_one_period(
        quantile: f64,
        observations: &[Observation],
    ) -> (Estimator, Instant, Result<Duration, NoDelay>) {
        let start = Instant::now();
        let mut estimator = Estimator::new(settings(quantile), start, 7);
        for &observation in observations {
            estimator.observe(start, observation);
        }
        let refreshed = start + PERIOD;
        let delay = estimator.delay(refreshed);
        (estimator, refreshed, delay)
    }

    fn answered(ms: impl IntoIterator<Item = u64>) -> Vec<Observation> {
        ms.into_iter()
            .map(|ms| Observation::Answered(Duration::from_millis(ms)))
            .collect()
    }

    /// name, quantile, what the first period saw -> the delay after it
    type Row = (
        &'static str,
        f64,
        Vec<Observation>,
        Result<Duration, NoDelay>,
    );

    #[test]
    fn the_rules_of_the_estimate() {
        use Observation::{Failed, Lost, TimedOut};
        let hundred = |slow: Observation| {
            let mut v = answered(1..=99);
            v.push(slow);
            v
        };
        let rows: Vec<Row> = vec![
            ("p95 of 1..=100 ms", 0.95, answered(1..=100), Ok(95 * MS)),
            ("p99 of 1..=100 ms", 0.99, answered(1..=100), Ok(99 * MS)),
            (
                "too few samples: cold",
                0.95,
                answered(1..=9),
                Err(NoDelay::Cold),
            ),
            (
                "fast failures are not samples",
                0.95,
                [answered(1..=9), vec![Failed; 100]].concat(),
                Err(NoDelay::Cold),
            ),
            (
                "fast failures do not pull the estimate low",
                0.5,
                [answered([40; 20]), vec![Failed; 100]].concat(),
                Ok(40 * MS),
            ),
            (
                "a loser counts as long as it ran",
                0.99,
                hundred(Lost(500 * MS)),
                Ok(99 * MS),
            ),
            (
                "losers are samples: they lift the estimate",
                0.95,
                [answered([2; 90]), vec![Lost(30 * MS); 10]].concat(),
                Ok(30 * MS),
            ),
            (
                "a timeout past the rank does not stop hedging",
                0.95,
                hundred(TimedOut(1000 * MS)),
                Ok(95 * MS),
            ),
            (
                "the rank on a timeout: at the ceiling, no hedge",
                0.95,
                [answered([2; 90]), vec![TimedOut(1000 * MS); 10]].concat(),
                Err(NoDelay::AtCeiling),
            ),
        ];
        for (name, quantile, observations, expected) in rows {
            let (_, _, delay) = after_one_period(quantile, &observations);
            assert_eq!(delay, expected, "{name}");
        }
    }

    #[test]
    fn no_hedge_before_the_first_refresh() {
        let start = Instant::now();
        let mut estimator = Estimator::new(settings(0.95), start, 7);
        for observation in answered(1..=100) {
            estimator.observe(start, observation);
        }
        assert_eq!(estimator.delay(start + PERIOD / 2), Err(NoDelay::Cold));
        assert_eq!(estimator.delay(start + PERIOD), Ok(95 * MS));
    }

    #[test]
    fn the_estimate_holds_still_between_refreshes() {
        let (mut estimator, at, delay) = after_one_period(0.95, &answered(1..=100));
        assert_eq!(delay, Ok(95 * MS));
        for observation in answered([1; 30]) {
            estimator.observe(at, observation);
        }
        assert_eq!(estimator.delay(at + PERIOD / 2), Ok(95 * MS));
        // The next refresh sees both periods.
        assert_eq!(estimator.delay(at + PERIOD), Ok(94 * MS));
    }

    #[test]
    fn old_periods_leave_the_window() {
        let (mut estimator, mut at, _) = after_one_period(0.95, &answered([100; 20]));
        for _ in 0..WINDOW_PERIODS {
            for observation in answered([5; 20]) {
                estimator.observe(at, observation);
            }
            at += PERIOD;
        }
        assert_eq!(estimator.delay(at), Ok(5 * MS));
    }

    #[test]
    fn a_quiet_window_goes_cold_again() {
        let (mut estimator, at, delay) = after_one_period(0.95, &answered(1..=100));
        assert!(delay.is_ok());
        let later = at + PERIOD * (WINDOW_PERIODS as u32 + 1);
        assert_eq!(estimator.delay(later), Err(NoDelay::Cold));
    }

    #[test]
    fn no_hedge_while_every_request_is_slow() {
        let (mut estimator, at, delay) = after_one_period(0.95, &answered([2; 100]));
        assert_eq!(delay, Ok(2 * MS));
        // Half slower than the estimate: still hedging.
        for observation in [answered([50; 10]), answered([2; 10])].concat() {
            estimator.observe(at, observation);
        }
        assert_eq!(estimator.delay(at), Ok(2 * MS));
        // Most of the period slower: no hedge until the estimate catches up.
        estimator.observe(at, Observation::Answered(50 * MS));
        assert_eq!(estimator.delay(at), Err(NoDelay::AllSlow));
        assert_eq!(estimator.delay(at + PERIOD), Ok(50 * MS));
    }

    #[test]
    fn a_floor_set_by_the_user_holds() {
        let mut with_floor = settings(0.5);
        with_floor.floor = 10 * MS;
        let start = Instant::now();
        let mut estimator = Estimator::new(with_floor, start, 7);
        for observation in answered([2; 20]) {
            estimator.observe(start, observation);
        }
        assert_eq!(estimator.delay(start + PERIOD), Ok(10 * MS));
    }

    #[test]
    fn the_reservoir_is_bounded_and_seeded() {
        let run = |seed| {
            let start = Instant::now();
            let mut estimator = Estimator::new(settings(0.9), start, seed);
            for i in 0..10_000u64 {
                estimator.observe(
                    start,
                    Observation::Answered(Duration::from_millis(i % 100 + 1)),
                );
            }
            let kept = estimator.buckets.back().map_or(0, |b| b.samples.len());
            (kept, estimator.delay(start + PERIOD))
        };
        let (kept, delay) = run(1);
        assert_eq!(kept, BUCKET_SAMPLES);
        assert_eq!(run(1).1, delay, "the same seed keeps the same samples");
        // A uniform reservoir of 1..=100 ms: its p90 is near 90 ms.
        let delay = delay.unwrap();
        assert!(delay >= 80 * MS && delay <= 98 * MS, "{delay:?}");
    }
}
