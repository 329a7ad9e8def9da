//! A policy's hedging state, shared by its clones: the cap (a [`RetryBudget`] of
//! its own) and each authority's latency samples for the adaptive delay.
//!
//! What is charged where: every hedge-eligible intent deposits one into the cap;
//! every hedge withdraws one (and, through the gates, one retry from the retry
//! budget); a hedge the gates then refuse gets its cap withdrawal back; a hedge
//! that wins deposits nothing (it is extra load that happened to help, not
//! ordinary traffic).

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::rules::adaptive_delay;
use super::Hedging;
use crate::clock::Instant;
use crate::gate::authority::{AuthorityMap, MAX_AUTHORITIES};
use crate::gate::RetryBudget;

/// Latency samples kept per authority: enough for a p99 to mean something, small
/// enough to copy and select in on every hedge-eligible intent.
const SAMPLES: usize = 256;
/// The cap counts in one window for the whole policy (scope ignored).
const CAP_SCOPE: &str = "";

/// A policy's hedging settings and shared state.
pub(crate) struct Hedger {
    pub(crate) settings: Hedging,
    cap: RetryBudget,
    latencies: Mutex<AuthorityMap<Samples>>,
}

/// An authority's most recent latencies, oldest first.
#[derive(Default)]
struct Samples(VecDeque<Duration>);

impl Hedger {
    /// The state for checked settings (`Hedging::check` passed).
    pub(crate) fn new(settings: Hedging) -> Self {
        let cap = RetryBudget::builder()
            .ratio(settings.cap_ratio)
            .reserve(settings.cap_burst)
            .build()
            // `Hedging::check` accepted the ratio; the window is the default.
            .unwrap_or_else(|_| RetryBudget::new_default());
        Self {
            settings,
            cap,
            latencies: Mutex::new(AuthorityMap::new(MAX_AUTHORITIES)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, AuthorityMap<Samples>> {
        // Plain samples, always consistent: ignore poisoning.
        self.latencies.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long the copies in flight wait for an answer before the next goes out;
    /// `None`: no hedge (adaptive, too few samples yet).
    pub(crate) fn delay(&self, authority: &str) -> Option<Duration> {
        let s = &self.settings;
        if let Some(fixed) = s.fixed {
            return Some(fixed);
        }
        let mut samples: Vec<Duration> = {
            let map = self.lock();
            let samples = map.get(authority)?;
            if samples.0.len() < s.min_samples as usize {
                return None;
            }
            samples.0.iter().copied().collect()
        };
        adaptive_delay(&mut samples, s.percentile, s.min_samples, s.floor)
    }

    /// A copy to `authority` took `elapsed` (to its answer, or until it was
    /// cancelled: a lower bound of its latency, counted all the same).
    pub(crate) fn record_latency(&self, authority: &str, elapsed: Duration) {
        if self.settings.fixed.is_some() {
            return;
        }
        let mut map = self.lock();
        // Samples are cheap to lose: any entry may make room for a new authority.
        if let Some(samples) = map.entry(authority, |_| true) {
            if samples.0.len() == SAMPLES {
                samples.0.pop_front();
            }
            samples.0.push_back(elapsed);
        }
    }

    /// A hedge-eligible intent starts: one more intent the cap's share counts.
    pub(crate) fn deposit(&self, now: Instant) {
        self.cap.deposit_at(CAP_SCOPE, now);
    }

    /// May a hedge go, by the cap? `true`: granted and counted.
    pub(crate) fn try_withdraw(&self, now: Instant) -> bool {
        self.cap.try_withdraw_at(CAP_SCOPE, now)
    }

    /// A hedge the cap granted was not sent (a gate refused it).
    pub(crate) fn give_back(&self, now: Instant) {
        self.cap.take_back(CAP_SCOPE, now, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_cap_grants_its_share_and_burst() {
        let hedger = Hedger::new(Hedging::fixed(50 * MS).cap(0.1, 2));
        let now = Instant::now();
        for _ in 0..20 {
            hedger.deposit(now);
        }
        // 10 % of 20 intents, plus the burst of 2.
        let granted = (0..10).filter(|_| hedger.try_withdraw(now)).count();
        assert_eq!(granted, 4);
        hedger.give_back(now);
        assert!(
            hedger.try_withdraw(now),
            "a refused hedge's grant came back"
        );
        assert!(!hedger.try_withdraw(now));
    }

    #[test]
    fn the_adaptive_delay_is_per_authority_and_waits_for_samples() {
        let hedger = Hedger::new(Hedging::adaptive(50.0).min_samples(4).floor(MS));
        for ms in [10, 20, 30] {
            hedger.record_latency("http://a", ms * MS);
        }
        assert_eq!(hedger.delay("http://a"), None, "3 samples of 4");
        hedger.record_latency("http://a", 40 * MS);
        assert_eq!(hedger.delay("http://a"), Some(20 * MS));
        assert_eq!(hedger.delay("http://b"), None, "another authority");
        for _ in 0..SAMPLES {
            hedger.record_latency("http://a", 100 * MS);
        }
        assert_eq!(
            hedger.delay("http://a"),
            Some(100 * MS),
            "old samples age out"
        );
    }
}
