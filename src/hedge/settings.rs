//! What a policy's hedging is set to: [`Hedging`], its defaults and its checks.

use std::time::Duration;

use http::Method;

/// Default number of copies in flight at once, the first included.
pub(crate) const DEFAULT_MAX_COPIES: u32 = 2;
/// Most copies in flight accepted (gRPC A6 caps `maxAttempts` at 5).
pub(crate) const MAX_COPIES_LIMIT: u32 = 5;
/// Default percentile of the authority's latency after which a hedge goes.
pub(crate) const DEFAULT_PERCENTILE: f64 = 95.0;
/// Default least number of latency samples before the percentile is trusted.
pub(crate) const DEFAULT_MIN_SAMPLES: u32 = 20;
/// Default shortest adaptive delay.
pub(crate) const DEFAULT_FLOOR: Duration = Duration::from_millis(10);
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
/// | delay | adaptive: the authority's 95th-percentile latency ([`Hedging::adaptive`]) | "The Tail at Scale": a backup after p95 keeps the extra load near 5 % |
/// | `min_samples` | 20 answers from the authority before any hedge | a percentile of a handful of samples is noise |
/// | `floor` | 10 ms | never hedge a fast service on its jitter |
/// | `max_copies` | 2 in flight, the first included (each counts toward `max_attempts`) | one backup request, as tower's and Finagle's |
/// | `cap` | 5 % of the hedge-eligible intents over 10 s, plus 10 per 10 s | the extra load the percentile aims at, enforced; a quiet client still hedges |
/// | `methods` | GET, HEAD, OPTIONS | safe to send twice at once; PUT and DELETE only when listed |
///
/// The adaptive delay counts a cancelled copy's time as a sample too (a lower
/// bound of its latency, as Finagle counts superseded requests): leaving the slow
/// copies out would let the percentile fall below the latency it is meant to
/// measure, and hedge more and more.
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
    /// `Some`: a fixed delay; `None`: adaptive, from `percentile`.
    pub(crate) fixed: Option<Duration>,
    pub(crate) percentile: f64,
    pub(crate) min_samples: u32,
    pub(crate) floor: Duration,
    pub(crate) max_copies: u32,
    pub(crate) cap_ratio: f64,
    pub(crate) cap_burst: u32,
    pub(crate) methods: Vec<Method>,
}

impl Default for Hedging {
    fn default() -> Self {
        Self::adaptive(DEFAULT_PERCENTILE)
    }
}

impl Hedging {
    /// A hedge after `delay` without an answer, whatever the latency seen.
    pub fn fixed(delay: Duration) -> Self {
        Self {
            fixed: Some(delay),
            ..Self::adaptive(DEFAULT_PERCENTILE)
        }
    }

    /// A hedge after the `percentile` (in (0, 100)) of the latency of the
    /// request's authority (scheme, host, port), once
    /// [`min_samples`](Self::min_samples) answers were seen, never before
    /// [`floor`](Self::floor).
    pub fn adaptive(percentile: f64) -> Self {
        Self {
            fixed: None,
            percentile,
            min_samples: DEFAULT_MIN_SAMPLES,
            floor: DEFAULT_FLOOR,
            max_copies: DEFAULT_MAX_COPIES,
            cap_ratio: DEFAULT_CAP_RATIO,
            cap_burst: DEFAULT_CAP_BURST,
            methods: vec![Method::GET, Method::HEAD, Method::OPTIONS],
        }
    }

    /// Answers from an authority before the adaptive delay hedges it (at least 1;
    /// default 20). Until then its intents run unhedged.
    pub fn min_samples(mut self, samples: u32) -> Self {
        self.min_samples = samples;
        self
    }

    /// The shortest adaptive delay (default 10 ms; at most 1 h).
    pub fn floor(mut self, floor: Duration) -> Self {
        self.floor = floor;
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
        let p = self.percentile;
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
        let rows: [(&str, Hedging, &str); 10] = [
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
