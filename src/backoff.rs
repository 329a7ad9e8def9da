//! How long to wait before the next attempt when the server gave no `Retry-After`.
//!
//! Retrying at once is the worst strategy: if a service fell over from load, every
//! client hitting it again immediately doubles that load. Plain exponential backoff
//! spreads retries out in time but keeps clients that failed together *in step*, so
//! they come back in waves. Jitter breaks the waves. Following Marc Brooker's
//! "Exponential Backoff and Jitter" (AWS Architecture Blog, 2015), two jittered
//! strategies are offered:
//!
//! * **full jitter** — `random(0, min(cap, base · 2ⁿ))` for the n-th retry (n from 0):
//!   the fewest total calls in Brooker's simulation;
//! * **decorrelated jitter** — `min(cap, random(base, previous · 3))`: grows from the
//!   previous delay rather than the retry number, never below `base`.
//!
//! plus a constant delay (and [`Backoff::none`]) for tests and special cases.
//!
//! The arithmetic is pure: a delay is a function of the retry number, the previous
//! delay and an injected random number generator, so it is tested without I/O.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A backoff strategy. Cheap to copy; holds no state (the previous delay and the
/// random source are passed in).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use reqwest_resilience::Backoff;
///
/// let backoff = Backoff::full_jitter(Duration::from_millis(100), Duration::from_secs(2));
/// let delays: Vec<Duration> = backoff.delays(7).take(5).collect();
/// assert!(delays.iter().all(|d| *d <= Duration::from_secs(2)));
/// assert_eq!(delays, backoff.delays(7).take(5).collect::<Vec<_>>()); // same seed, same delays
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backoff {
    /// `random(0, min(cap, base · 2ⁿ))`.
    FullJitter {
        /// Window of the first retry.
        base: Duration,
        /// Largest window.
        cap: Duration,
    },
    /// `min(cap, random(base, previous · 3))`, starting from `previous = base`.
    DecorrelatedJitter {
        /// Smallest delay, and the first `previous`.
        base: Duration,
        /// Largest delay.
        cap: Duration,
    },
    /// The same delay before every retry (zero for none).
    Constant(Duration),
}

impl Backoff {
    /// Full jitter with the given base and cap.
    pub const fn full_jitter(base: Duration, cap: Duration) -> Self {
        Self::FullJitter { base, cap }
    }

    /// Decorrelated jitter with the given base and cap.
    pub const fn decorrelated_jitter(base: Duration, cap: Duration) -> Self {
        Self::DecorrelatedJitter { base, cap }
    }

    /// The same delay before every retry.
    pub const fn constant(delay: Duration) -> Self {
        Self::Constant(delay)
    }

    /// No delay at all (tests; never against a real service).
    pub const fn none() -> Self {
        Self::Constant(Duration::ZERO)
    }

    /// The largest delay this strategy can produce.
    pub const fn max_delay(&self) -> Duration {
        match *self {
            Self::FullJitter { cap, .. } | Self::DecorrelatedJitter { cap, .. } => cap,
            Self::Constant(delay) => delay,
        }
    }

    /// The delay before retry number `retry` (0 for the first retry), given the
    /// delay chosen before the previous retry (for decorrelated jitter).
    pub(crate) fn delay<R: Rng + ?Sized>(
        &self,
        retry: u32,
        previous: Option<Duration>,
        rng: &mut R,
    ) -> Duration {
        match *self {
            Self::FullJitter { base, cap } => {
                let window = exponential_window(base, cap, retry);
                random_between(Duration::ZERO, window, rng)
            }
            Self::DecorrelatedJitter { base, cap } => {
                let previous = previous.unwrap_or(base).max(base);
                let upper = previous.saturating_mul(3).min(cap).max(base);
                random_between(base, upper, rng).min(cap)
            }
            Self::Constant(delay) => delay,
        }
    }

    /// The endless sequence of delays this strategy produces before retries 1, 2,
    /// 3, …, jittered from `seed`: the same seed gives the same sequence (take as
    /// many as you have retries). The retry loop draws its own from the policy's
    /// random source; this is for simulations, plots and tests.
    pub fn delays(&self, seed: u64) -> Delays {
        Delays {
            backoff: *self,
            rng: StdRng::seed_from_u64(seed),
            retry: 0,
            previous: None,
        }
    }
}

/// Iterator over a strategy's delays; see [`Backoff::delays`].
#[derive(Debug, Clone)]
pub struct Delays {
    backoff: Backoff,
    rng: StdRng,
    retry: u32,
    previous: Option<Duration>,
}

impl Iterator for Delays {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let delay = self.backoff.delay(self.retry, self.previous, &mut self.rng);
        self.retry = self.retry.saturating_add(1);
        self.previous = Some(delay);
        Some(delay)
    }
}

/// `min(cap, base · 2ⁿ)` without overflow for any `n`.
fn exponential_window(base: Duration, cap: Duration, retry: u32) -> Duration {
    let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
    base.saturating_mul(factor).min(cap)
}

/// Uniform in `[low, high]` at nanosecond resolution.
fn random_between<R: Rng + ?Sized>(low: Duration, high: Duration, rng: &mut R) -> Duration {
    if high <= low {
        return low;
    }
    let low_nanos = saturating_nanos(low);
    let high_nanos = saturating_nanos(high);
    Duration::from_nanos(rng.random_range(low_nanos..=high_nanos))
}

fn saturating_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn full_jitter_window_doubles_until_the_cap() {
        assert_eq!(exponential_window(100 * MS, 2000 * MS, 0), 100 * MS);
        assert_eq!(exponential_window(100 * MS, 2000 * MS, 1), 200 * MS);
        assert_eq!(exponential_window(100 * MS, 2000 * MS, 4), 1600 * MS);
        assert_eq!(exponential_window(100 * MS, 2000 * MS, 5), 2000 * MS);
        assert_eq!(exponential_window(100 * MS, 2000 * MS, u32::MAX), 2000 * MS);
    }

    #[test]
    fn same_seed_same_delays() {
        let backoff = Backoff::decorrelated_jitter(100 * MS, 2000 * MS);
        let a: Vec<_> = backoff.delays(1).take(8).collect();
        let b: Vec<_> = backoff.delays(1).take(8).collect();
        assert_eq!(a, b);
        assert_ne!(a, backoff.delays(2).take(8).collect::<Vec<_>>());
    }

    #[test]
    fn full_jitter_spreads_over_the_whole_window() {
        let backoff = Backoff::full_jitter(100 * MS, 2000 * MS);
        let mut rng = StdRng::seed_from_u64(3);
        let delays: Vec<_> = (0..2000)
            .map(|_| backoff.delay(0, None, &mut rng))
            .collect();
        assert!(delays.iter().any(|d| *d < 10 * MS));
        assert!(delays.iter().any(|d| *d > 90 * MS));
    }

    #[test]
    fn constant_and_none() {
        let mut rng = StdRng::seed_from_u64(0);
        assert_eq!(Backoff::constant(5 * MS).delay(9, None, &mut rng), 5 * MS);
        assert_eq!(Backoff::none().delay(0, None, &mut rng), Duration::ZERO);
        assert_eq!(Backoff::none().max_delay(), Duration::ZERO);
    }

    #[test]
    fn the_largest_delay_is_the_cap_or_the_constant() {
        let (base, cap) = (100 * MS, 2000 * MS);
        assert_eq!(Backoff::full_jitter(base, cap).max_delay(), cap);
        assert_eq!(Backoff::decorrelated_jitter(base, cap).max_delay(), cap);
        assert_eq!(Backoff::constant(5 * MS).max_delay(), 5 * MS);
    }

    proptest! {
        #[test]
        fn full_jitter_stays_within_zero_and_cap(
            base_ms in 1u64..5_000, extra_ms in 0u64..60_000, retry in 0u32..200, seed: u64
        ) {
            let (base, cap) = (Duration::from_millis(base_ms), Duration::from_millis(base_ms + extra_ms));
            let mut rng = StdRng::seed_from_u64(seed);
            let delay = Backoff::full_jitter(base, cap).delay(retry, None, &mut rng);
            prop_assert!(delay <= cap);
            prop_assert!(delay <= exponential_window(base, cap, retry));
        }

        #[test]
        fn decorrelated_jitter_stays_within_base_and_cap(
            base_ms in 1u64..5_000, extra_ms in 0u64..60_000, seed: u64, steps in 1usize..50
        ) {
            let (base, cap) = (Duration::from_millis(base_ms), Duration::from_millis(base_ms + extra_ms));
            let mut rng = StdRng::seed_from_u64(seed);
            let backoff = Backoff::decorrelated_jitter(base, cap);
            let mut previous = None;
            for _ in 0..steps {
                let delay = backoff.delay(0, previous, &mut rng);
                prop_assert!(delay >= base && delay <= cap);
                if let Some(previous) = previous {
                    prop_assert!(delay <= previous.saturating_mul(3).max(base));
                }
                previous = Some(delay);
            }
        }
    }
}
