//! What a policy's hedging is set to: [`Hedging`], its defaults and its checks.

use std::time::Duration;

use http::Method;

/// Default number of copies in flight at once, the first included.
pub(crate) const DEFAULT_MAX_COPIES: u32 = 2;
/// Most copies in flight accepted (gRPC A6 caps `maxAttempts` at 5).
pub(crate) const MAX_COPIES_LIMIT: u32 = 5;
/// The lowest percentile the budget's mapping gives (a budget above one half
/// hedges at the median).
const LOWEST_DERIVED_PERCENTILE: f64 = 50.0;
/// Default least number of latency samples in the window before an estimate.
pub(crate) const DEFAULT_MIN_SAMPLES: u32 = 20;
/// Default period on which the adaptive delay is worked out again (and the length
/// of one of the window's buckets; see `estimator.rs`).
pub(crate) const DEFAULT_REFRESH: Duration = Duration::from_secs(1);
/// Default share of hedge-eligible intents that may be hedged.
pub(crate) const DEFAULT_CAP_RATIO: f64 = 0.05;
/// Default hedges per window always allowed.
pub(crate) const DEFAULT_CAP_BURST: u32 = 10;
/// Longest hedge delay or floor accepted.
const MAX_DELAY: Duration = Duration::from_secs(3600);

/// Hedged requests for a policy ([`RetryPolicyBuilder::hedging`](crate::RetryPolicyBuilder::hedging));
/// off unless set. See the [`hedging` section of the README] and the module
/// essay in `src/hedge/mod.rs` for when it pays.
///
/// Setters never fail; [`RetryPolicyBuilder::build`](crate::RetryPolicyBuilder::build)
/// checks the values and names the first wrong one (`hedging.max_copies`…).
///
/// # Defaults
///
/// | setting | default | why |
/// |---|---|---|
/// | delay | adaptive: the authority's latency at the percentile the cap implies, `100 × (1 − cap ratio)` (p95 for the default 5 %; [`Hedging::trigger_percentile`]) | a copy after the `q`-th percentile goes for `1 − q` of the intents: the extra load the cap allows, as Finagle's `BackupRequestFilter` derives it |
/// | estimate | worked out every 1 s from the last 5 s of samples; none before the first refresh with `min_samples` | steady between refreshes; no hedge on a guess |
/// | `min_samples` | 20 samples in the window before any hedge | a percentile of a handful of samples is noise |
/// | `floor` | none: the service's own latency is the floor | a constant floor gives up exactly the fast services where hedging pays most |
/// | `max_copies` | 2 in flight, the first included (each counts toward `max_attempts`) | one backup request, as tower's and Finagle's |
/// | `cap` | 5 % of the hedge-eligible intents over 10 s, plus 10 per 10 s, counted when a copy is sent | the extra load the percentile aims at, enforced; a quiet client still hedges |
/// | `methods` | GET, HEAD, OPTIONS | safe to send twice at once; PUT and DELETE only when listed |
///
/// What the adaptive delay samples, and when it holds back (see the README's
/// hedging section): answers, cancelled copies (a lower bound of their latency,
/// as Finagle counts superseded requests) and timeouts are samples; fast failures
/// (a `503` answered at once) are not, as they would pull the delay low. No copy
/// goes while the percentile falls on a timeout (the estimate is at its ceiling)
/// or while most requests of the current period are slower than the estimate
/// (the whole service is slow: a copy would only add load).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use reqwest_resilience::{Hedging, RetryPolicy};
///
/// // A backup request after 50 ms, at most 2 % of intents (plus 5 per window).
/// let policy = RetryPolicy::builder()
///     .hedging(Hedging::fixed(Duration::from_millis(50)).cap(0.02, 5))
///     .build()?;
/// # drop(policy);
/// # Ok::<(), reqwest_resilience::BuildError>(())
/// ```
///
/// [`hedging` section of the README]: https://docs.rs/crate/reqwest-resilience/latest/source/README.md
#[derive(Debug, Clone, PartialEq)]
pub struct Hedging {
    /// `Some`: a fixed delay; `None`: adaptive, at `trigger_percentile()`.
    pub(crate) fixed: Option<Duration>,
    /// `None`: the cap's ratio implies it.
    pub(crate) percentile: Option<f64>,
    pub(crate) min_samples: u32,
    pub(crate) floor: Duration,
    pub(crate) refresh: Duration,
    pub(crate) max_copies: u32,
    pub(crate) cap_ratio: f64,
    pub(crate) cap_burst: u32,
    pub(crate) methods: Vec<Method>,
}

impl Default for Hedging {
    /// Adaptive, at the percentile the cap implies (see the table above).
    fn default() -> Self {
        Self {
            fixed: None,
            percentile: None,
            min_samples: DEFAULT_MIN_SAMPLES,
            floor: Duration::ZERO,
            refresh: DEFAULT_REFRESH,
            max_copies: DEFAULT_MAX_COPIES,
            cap_ratio: DEFAULT_CAP_RATIO,
            cap_burst: DEFAULT_CAP_BURST,
            methods: vec![Method::GET, Method::HEAD, Method::OPTIONS],
        }
    }
}

impl Hedging {
    /// A hedge after `delay` without an answer, whatever the latency seen.
    pub fn fixed(delay: Duration) -> Self {
        Self {
            fixed: Some(delay),
            ..Self::default()
        }
    }

    /// A hedge after the `percentile` (in (0, 100)) of the latency of the
    /// request's authority (scheme, host, port), set out instead of implied by
    /// the cap ([`Hedging::default`] derives it: `100 × (1 − cap ratio)`). The
    /// estimate is worked out as the default's is (see the table above).
    pub fn adaptive(percentile: f64) -> Self {
        Self {
            percentile: Some(percentile),
            ..Self::default()
        }
    }

    /// Samples of an authority's latency in the window before the adaptive delay
    /// hedges it (at least 1; default 20). Until then its intents run unhedged.
    pub fn min_samples(mut self, samples: u32) -> Self {
        self.min_samples = samples;
        self
    }

    /// The shortest adaptive delay (default none: the service's own latency is
    /// the floor; at most 1 h).
    pub fn floor(mut self, floor: Duration) -> Self {
        self.floor = floor;
        self
    }

    /// How often the adaptive delay is worked out again from the window of the
    /// last five such periods (default 1 s, so a 5 s window; at least 1 ms, at
    /// most 1 h). Between refreshes the delay holds still; no hedge goes before
    /// the first refresh that saw [`min_samples`](Self::min_samples).
    pub fn refresh(mut self, every: Duration) -> Self {
        self.refresh = every;
        self
    }

    /// Copies in flight at once, the first included: 2 to 5 (default 2).
    pub fn max_copies(mut self, copies: u32) -> Self {
        self.max_copies = copies;
        self
    }

    /// Hedges may be at most `ratio` (in (0, 1]) of the hedge-eligible intents
    /// over a 10 s window, plus `burst` per window (defaults 0.05 and 10): the
    /// arithmetic of [`RetryBudget`](crate::RetryBudget), in a budget of its own.
    /// A hedge also passes the policy's gates, so it is charged to the retry
    /// budget too. A hedge refused by either never makes the intent wait.
    pub fn cap(mut self, ratio: f64, burst: u32) -> Self {
        self.cap_ratio = ratio;
        self.cap_burst = burst;
        self
    }

    /// The methods hedged: any of GET, HEAD, OPTIONS, PUT and DELETE (default
    /// the first three). Any other method is refused at build: POST and PATCH
    /// are not safe to send twice at once.
    pub fn methods(mut self, methods: impl IntoIterator<Item = Method>) -> Self {
        self.methods = methods.into_iter().collect();
        self
    }

    /// The fixed delay, if the delay is fixed.
    pub fn fixed_delay(&self) -> Option<Duration> {
        self.fixed
    }

    /// The percentile of the authority's latency after which an adaptive delay
    /// hedges: the one set by [`adaptive`](Self::adaptive), else the one the cap
    /// implies, `100 × (1 − ratio)` (at least 50): a 5 % cap hedges at p95, a 1 %
    /// cap at p99, so the copies the percentile sends are the extra load the cap
    /// allows.
    pub fn trigger_percentile(&self) -> f64 {
        self.percentile
            .unwrap_or_else(|| (100.0 * (1.0 - self.cap_ratio)).max(LOWEST_DERIVED_PERCENTILE))
    }

    /// Copies in flight at once, the first included.
    pub fn copies(&self) -> u32 {
        self.max_copies
    }

    /// The cap: the share of hedge-eligible intents that may be hedged, and the
    /// hedges allowed over it per window (see [`cap`](Self::cap)).
    pub fn cap_limits(&self) -> (f64, u32) {
        (self.cap_ratio, self.cap_burst)
    }

    /// The first setting that makes no sense, as `(setting, problem)`.
    pub(crate) fn check(&self) -> Result<(), (&'static str, String)> {
        if let Some(delay) = self.fixed {
            if delay.is_zero() || delay > MAX_DELAY {
                return Err((
                    "hedging.delay",
                    format!("must be above zero and at most one hour, got {delay:?}"),
                ));
            }
        }
        let p = self.percentile.unwrap_or(50.0);
        if !(p.is_finite() && p > 0.0 && p < 100.0) {
            return Err((
                "hedging.percentile",
                format!("must be a number in (0, 100), got {p}"),
            ));
        }
        if self.min_samples == 0 {
            return Err(("hedging.min_samples", "must be at least 1".to_owned()));
        }
        if self.floor > MAX_DELAY {
            return Err((
                "hedging.floor",
                format!("must be at most one hour, got {:?}", self.floor),
            ));
        }
        if self.refresh < Duration::from_millis(1) || self.refresh > MAX_DELAY {
            return Err((
                "hedging.refresh",
                format!(
                    "must be at least 1 ms and at most one hour, got {:?}",
                    self.refresh
                ),
            ));
        }
        if !(2..=MAX_COPIES_LIMIT).contains(&self.max_copies) {
            return Err((
                "hedging.max_copies",
                format!("must be between 2 and 5, got {}", self.max_copies),
            ));
        }
        let r = self.cap_ratio;
        if !(r.is_finite() && r > 0.0 && r <= 1.0) {
            return Err((
                "hedging.cap_ratio",
                format!("must be a number in (0, 1], got {r}"),
            ));
        }
        if self.methods.is_empty() {
            return Err((
                "hedging.methods",
                "must name at least one method".to_owned(),
            ));
        }
        let allowed = [
            Method::GET,
            Method::HEAD,
            Method::OPTIONS,
            Method::PUT,
            Method::DELETE,
        ];
        if let Some(method) = self.methods.iter().find(|m| !allowed.contains(m)) {
            return Err((
                "hedging.methods",
                format!(
                    "{method} is not safe to send twice at once (use GET, HEAD, OPTIONS, PUT, DELETE)"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bad_value_names_its_setting() {
        let ms = Duration::from_millis;
        let rows: [(&str, Hedging, &str); 11] = [
            (
                "refresh 0",
                Hedging::default().refresh(ms(0)),
                "hedging.refresh",
            ),
            ("zero delay", Hedging::fixed(ms(0)), "hedging.delay"),
            (
                "delay over an hour",
                Hedging::fixed(ms(3_600_001)),
                "hedging.delay",
            ),
            ("percentile 0", Hedging::adaptive(0.0), "hedging.percentile"),
            (
                "percentile 100",
                Hedging::adaptive(100.0),
                "hedging.percentile",
            ),
            (
                "percentile NaN",
                Hedging::adaptive(f64::NAN),
                "hedging.percentile",
            ),
            (
                "no samples",
                Hedging::default().min_samples(0),
                "hedging.min_samples",
            ),
            (
                "one copy",
                Hedging::default().max_copies(1),
                "hedging.max_copies",
            ),
            (
                "six copies",
                Hedging::default().max_copies(6),
                "hedging.max_copies",
            ),
            ("cap 0", Hedging::default().cap(0.0, 1), "hedging.cap_ratio"),
            (
                "POST",
                Hedging::default().methods([Method::POST]),
                "hedging.methods",
            ),
        ];
        for (name, hedging, setting) in rows {
            assert_eq!(hedging.check().unwrap_err().0, setting, "{name}");
        }
        assert_eq!(Hedging::default().check(), Ok(()));
        assert_eq!(Hedging::fixed(ms(50)).max_copies(5).check(), Ok(()));
    }
}
