//! A policy's hedging state, shared by its clones: the cap (a [`RetryBudget`] of
//! its own) and each authority's latency samples for the adaptive delay.
//!
//! What is charged where: every hedge-eligible intent deposits one into the cap;
//! every hedge withdraws one (and, through the gates, one retry from the retry
//! budget); a hedge the gates then refuse gets its cap withdrawal back; a hedge
//! that wins deposits nothing (it is extra load that happened to help, not
//! ordinary traffic).

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::estimator::{Estimator, EstimatorSettings, NoDelay, Observation};
use super::Hedging;
use crate::clock::Instant;
use crate::gate::authority::{AuthorityMap, MAX_AUTHORITIES};
use crate::gate::RetryBudget;

/// The cap counts in one window for the whole policy (scope ignored).
const CAP_SCOPE: &str = "";
/// The reservoirs' seed: any fixed value keeps a run's samples repeatable.
const RESERVOIR_SEED: u64 = 0x5EED;

/// A policy's hedging settings and shared state.
pub(crate) struct Hedger {
    pub(crate) settings: Hedging,
    cap: RetryBudget,
    latencies: Mutex<AuthorityMap<Slot>>,
}

/// An authority's estimator, made on its first observation.
#[derive(Default)]
struct Slot(Option<Estimator>);

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

    fn lock(&self) -> MutexGuard<'_, AuthorityMap<Slot>> {
        // Plain samples, always consistent: ignore poisoning.
        self.latencies.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn estimator_settings(&self) -> EstimatorSettings {
        let s = &self.settings;
        EstimatorSettings {
            quantile: s.trigger_percentile() / 100.0,
            period: s.refresh,
            min_samples: s.min_samples,
            floor: s.floor,
        }
    }

    /// How long the copies in flight wait for an answer at `now` before the next
    /// goes out, or why no hedge goes (adaptive: see `estimator.rs`).
    pub(crate) fn delay(&self, authority: &str, now: Instant) -> Result<Duration, NoDelay> {
        if let Some(fixed) = self.settings.fixed {
            return Ok(fixed);
        }
        let mut map = self.lock();
        match map.entry(authority, |_| true) {
            Some(Slot(Some(estimator))) => estimator.delay(now),
            _ => Err(NoDelay::Cold),
        }
    }

    /// What a copy to `authority` ending at `now` tells the adaptive delay.
    pub(crate) fn observe(&self, authority: &str, now: Instant, observation: Observation) {
        if self.settings.fixed.is_some() || observation == Observation::Failed {
            return;
        }
        let settings = self.estimator_settings();
        let mut map = self.lock();
        // Estimates are cheap to lose: any entry may make room for a new authority.
        if let Some(slot) = map.entry(authority, |_| true) {
            slot.0
                .get_or_insert_with(|| Estimator::new(settings, now, RESERVOIR_SEED))
                .observe(now, observation);
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
    fn the_adaptive_delay_is_per_authority_and_starts_cold() {
        let hedger = Hedger::new(Hedging::adaptive(50.0).min_samples(4));
        let start = Instant::now();
        for ms in [10, 20, 30, 40] {
            hedger.observe("http://a", start, Observation::Answered(ms * MS));
        }
        assert_eq!(hedger.delay("http://a", start), Err(NoDelay::Cold));
        let refreshed = start + hedger.settings.refresh;
        assert_eq!(hedger.delay("http://a", refreshed), Ok(20 * MS));
        assert_eq!(hedger.delay("http://b", refreshed), Err(NoDelay::Cold));
        let fixed = Hedger::new(Hedging::fixed(7 * MS));
        assert_eq!(fixed.delay("http://a", start), Ok(7 * MS));
    }
}
