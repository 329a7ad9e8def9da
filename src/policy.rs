//! The retry policy: every knob, set through a builder and validated once.
//!
//! Settings never fail on their own; [`RetryPolicyBuilder::build`] checks them all
//! and names the first one that makes no sense. The frozen [`RetryPolicy`] is an
//! `Arc` inside: cloning is cheap, and clones share the retry budget and the seeded
//! random source. The plain settings are in `settings.rs`, the builder in
//! `builder.rs`, what `build` rejects in `build_error.rs`.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::header::HeaderName;
use http::Method;
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

use crate::backoff::Backoff;
use crate::classify::{is_idempotent_method, Classifier, Rules, StatusSet};
use crate::clock::Clock;
use crate::gate::{Gates, RetryBudget};
use crate::hedge::{Hedger, Hedging};
use crate::idempotency::{KeyAttachment, KeyFormat};
use crate::observer::IntentObserver;
use crate::sleeper::Sleeper;
use crate::write_ahead::WriteAhead;

mod build_error;
mod builder;
mod settings;

pub use build_error::BuildError;
pub use builder::RetryPolicyBuilder;
pub(crate) use settings::Settings;
#[cfg(feature = "testing")]
pub(crate) use settings::{DEFAULT_KEY_HEADER, DEFAULT_REQUEST_ID_HEADER};

/// A frozen, validated retry policy. Cheap to clone; clones share the budget.
///
/// # Defaults
///
/// Every setting of [`RetryPolicyBuilder`], under its setter's name:
///
/// | setting | default | why |
/// |---|---|---|
/// | `max_attempts` | 3; a keyed 409 "in progress" waited out under the deadline does not count | 1 + 2 retries, the AWS SDK standard mode; the server is executing the intent, and only waiting it out learns the result |
/// | `backoff` | full jitter, base 100 ms, cap 2 s | fewest calls in Brooker's simulation; seed values |
/// | `deadline` | 30 s for the whole intent, from `send()`: the write-ahead, attempts and pauses | a user rarely waits longer |
/// | `attempt_timeout` | 10 s, or half the intent's deadline if that is shorter (the whole deadline with `max_attempts(1)`); a per-request `timeout()` replaces it; always cut to the time left; also bounds reading the body, as reqwest's timeout does | one stuck attempt must not eat the deadline: against a server that hangs, a retry still fits (see [`RetryPolicy::attempt_timeout`]) |
/// | `retry_after_ceiling` | 30 s | longer asks end the intent with the asked time |
/// | `conflict_delay` | 1 s, the least pause after a 409 "same key in progress" | the server is still executing: polling at the backoff's 100 ms only adds load |
/// | `transient_statuses` | 408, 429, 502, 503, 504 | 500 is opt-in |
/// | `retry_conflict_when_keyed` | on: a 409 on a keyed request is waited out | the seed contract: parallel duplicate → 409 |
/// | `key_attachment` | POST, PATCH and other non-idempotent methods | they are the ones a key makes retryable |
/// | `key_format` | bare token | what Stripe and most APIs accept |
/// | `key_header` | `Idempotency-Key` | the IETF draft's name |
/// | `request_id_header` | `X-Request-Id` | a fresh UUID v4 per attempt |
/// | `server_hint_header` | none | servers name it differently (Stripe: `Stripe-Should-Retry`) |
/// | `redact_query_params` | none besides OpenTelemetry's four | `url.full` in spans never shows them |
/// | `rng_seed` | none: thread-local CSPRNG | seed it for repeatable tests |
/// | `hedging` | off; [`Hedging`]'s own defaults when on (a copy after the authority's p95 latency, 2 in flight, at most 5 % of intents + 10 per 10 s, GET/HEAD/OPTIONS only, never keyed or durable intents) | extra copies are extra load: a service opts in where its tail is worth it |
/// | `budget` | retries ≤ 10 % of requests over 10 s + 10 in reserve, one per policy (shared by its clones and every client built from them) | see [`RetryBudget`] |
/// | `gate` | none besides the budget; [`CircuitBreaker`](crate::CircuitBreaker) and [`AdaptiveThrottle`](crate::AdaptiveThrottle) are opt-in | a breaker keys circuits by authority (scheme, host, port): one failing route that dominates a service's traffic would refuse intents to that service's healthy routes, which only the application can scope (add `.gate(CircuitBreaker::new_default())` where one authority is one service); the throttle refuses at random while a service struggles, which a caller must be ready to handle. What each does in an outage is P9 in `docs/bench/` |
/// | `observer` | none | with none the intent pays nothing |
/// | `write_ahead` | none | with none the intent awaits nothing before its first byte |
/// | `classifier` | none: the rules above | |
/// | `sleeper` | tokio timer | inject [`crate::RecordingSleeper`] in tests |
/// | `clock` | `Instant::now` | inject [`crate::VirtualClock`] so recorded pauses use up the deadline |
/// | the write-ahead's `before_first_byte` / `after_end` | bounded by the time left before the deadline | a slow write-ahead (a journal write) must not make `send()` outlive its deadline (see [`WriteAhead`](crate::WriteAhead)) |
#[derive(Clone)]
pub struct RetryPolicy {
    pub(crate) inner: Arc<PolicyInner>,
}

pub(crate) struct PolicyInner {
    /// The settings as given (validated).
    pub(crate) settings: Settings,
    /// The user's classifier, asked first.
    classifier: Option<Arc<dyn Classifier>>,
    /// `settings.server_hint_header`, parsed.
    server_hint_header: Option<HeaderName>,
    /// `settings.key_header`, `settings.request_id_header`, parsed.
    pub(crate) key_header: HeaderName,
    pub(crate) request_id_header: HeaderName,
    /// The user's gates, then the budget when there is one.
    pub(crate) gates: Gates,
    pub(crate) observers: Vec<Arc<dyn IntentObserver>>,
    pub(crate) write_ahead: Option<Arc<dyn WriteAhead>>,
    pub(crate) sleeper: Arc<dyn Sleeper>,
    pub(crate) clock: Arc<dyn Clock>,
    seeded_rng: Option<Mutex<StdRng>>,
    /// `settings.hedging`'s shared state (the cap, the latency samples).
    pub(crate) hedger: Option<Hedger>,
}

impl RetryPolicy {
    /// A builder with every default.
    pub fn builder() -> RetryPolicyBuilder {
        RetryPolicyBuilder::new()
    }

    /// The most attempts one intent makes.
    pub fn max_attempts(&self) -> u32 {
        self.inner.settings.max_attempts
    }

    /// The backoff strategy.
    pub fn backoff(&self) -> Backoff {
        self.inner.settings.backoff
    }

    /// The deadline of one intent, if any.
    pub fn deadline(&self) -> Option<Duration> {
        self.inner.settings.deadline
    }

    /// The timeout of each attempt of an intent with the policy's deadline, if any
    /// (before it is cut to the time left).
    ///
    /// Set with [`RetryPolicyBuilder::attempt_timeout`], or implied: 10 s, or half
    /// the deadline if that is shorter, so that against a server that hangs a retry
    /// still fits in the deadline (with `max_attempts(1)`, the whole deadline). An
    /// intent with a deadline of its own ([`crate::RequestBuilder::deadline`]) gets
    /// the implied timeout of that deadline.
    pub fn attempt_timeout(&self) -> Option<Duration> {
        self.inner.attempt_timeout_for(self.inner.settings.deadline)
    }

    /// The longest Retry-After the client waits for.
    pub fn retry_after_ceiling(&self) -> Duration {
        self.inner.settings.retry_after_ceiling
    }

    /// Statuses treated as transient.
    pub fn transient_statuses(&self) -> StatusSet {
        self.inner.settings.transient_statuses
    }

    /// The shortest pause after a 409 "same key still in progress".
    pub fn conflict_delay(&self) -> Duration {
        self.inner.settings.conflict_delay
    }

    /// The shared retry budget; `None` after
    /// [`no_budget`](RetryPolicyBuilder::no_budget).
    pub fn budget(&self) -> Option<&RetryBudget> {
        self.inner.gates.budget()
    }

    /// The idempotency key header name.
    pub fn key_header(&self) -> &HeaderName {
        &self.inner.key_header
    }

    /// The request id header name.
    pub fn request_id_header(&self) -> &HeaderName {
        &self.inner.request_id_header
    }

    /// The key wire format.
    pub fn key_format(&self) -> KeyFormat {
        self.inner.settings.key_format
    }

    /// Whether a 409 on a keyed request is retried.
    pub fn retry_conflict_when_keyed(&self) -> bool {
        self.inner.settings.retry_conflict_when_keyed
    }

    /// Which requests get a generated key.
    pub fn key_attachment(&self) -> KeyAttachment {
        self.inner.settings.key_attachment
    }

    /// Query parameters `url.full` shows as `REDACTED` besides OpenTelemetry's four.
    pub fn redacted_query_params(&self) -> &[String] {
        &self.inner.settings.redact_query_params
    }

    /// The server retry-hint header, if one is configured.
    pub fn server_hint_header(&self) -> Option<&HeaderName> {
        self.inner.server_hint_header.as_ref()
    }

    /// The hedging settings, when hedged requests are on.
    pub fn hedging(&self) -> Option<&Hedging> {
        self.inner.settings.hedging.as_ref()
    }

    /// Whether the jitter is seeded (repeatable).
    pub fn is_seeded(&self) -> bool {
        self.inner.seeded_rng.is_some()
    }

    /// Whether a key is generated for this method when the caller gave none.
    pub fn generates_key_for(&self, method: &Method) -> bool {
        self.inner.generates_key_for(method)
    }

    /// A builder with this policy's settings and plug-ins: change what you need
    /// and build a new policy. The new policy shares this one's budget (unless you
    /// set another), gates, observers and classifier — e.g. a test can put a
    /// [`crate::RecordingSleeper`] into a production policy, or one call can
    /// allow more attempts without a second budget.
    ///
    /// # Examples
    /// ```
    /// use reqwest_resilience::RetryPolicy;
    ///
    /// let production = RetryPolicy::builder().max_attempts(4).build()?;
    /// let patient = production.to_builder().max_attempts(6).build()?;
    /// assert_eq!(patient.max_attempts(), 6);
    /// assert_eq!(patient.deadline(), production.deadline());
    /// # Ok::<(), reqwest_resilience::BuildError>(())
    /// ```
    pub fn to_builder(&self) -> RetryPolicyBuilder {
        RetryPolicyBuilder::of(&self.inner)
    }
}

impl PolicyInner {
    /// What classification reads, borrowed from the settings' one owner.
    pub(crate) fn rules(&self) -> Rules<'_> {
        Rules {
            classifier: self.classifier.as_deref(),
            server_hint_header: self.server_hint_header.as_ref(),
            transient_statuses: &self.settings.transient_statuses,
            retry_conflict_when_keyed: self.settings.retry_conflict_when_keyed,
        }
    }

    /// The timeout of each attempt of an intent with this deadline (see
    /// [`RetryPolicy::attempt_timeout`]).
    pub(crate) fn attempt_timeout_for(&self, deadline: Option<Duration>) -> Option<Duration> {
        self.settings
            .attempt_timeout
            .for_intent(deadline, self.settings.max_attempts)
    }

    pub(crate) fn generates_key_for(&self, method: &Method) -> bool {
        match self.settings.key_attachment {
            KeyAttachment::Always => true,
            KeyAttachment::UnsafeMethods => !is_idempotent_method(method),
            KeyAttachment::Never => false,
        }
    }

    /// A random source for one intent: derived from the seed when there is one (so a
    /// test's sequence of intents is repeatable), else from the thread-local CSPRNG.
    pub(crate) fn intent_rng(&self) -> StdRng {
        match &self.seeded_rng {
            Some(shared) => {
                let seed = shared
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .next_u64();
                StdRng::seed_from_u64(seed)
            }
            None => StdRng::from_rng(&mut rand::rng()),
        }
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicyBuilder::new()
            .build()
            .expect("the default settings are valid (checked by a unit test)")
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.inner;
        f.debug_struct("RetryPolicy")
            .field("settings", &p.settings)
            .field("attempt_timeout", &self.attempt_timeout())
            .field("classifier", &p.classifier.is_some())
            .field("budget", &p.gates.budget())
            .field("gates", &p.gates.len())
            .field("observers", &p.observers.len())
            .field("write_ahead", &p.write_ahead.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn defaults_are_valid_and_documented_values() {
        let policy = RetryPolicy::builder().build().unwrap();
        assert_eq!(policy.max_attempts(), 3);
        assert_eq!(policy.backoff(), Backoff::full_jitter(100 * MS, 2000 * MS));
        assert_eq!(policy.deadline(), Some(Duration::from_secs(30)));
        assert_eq!(policy.attempt_timeout(), Some(Duration::from_secs(10)));
        assert_eq!(policy.key_header().as_str(), "idempotency-key");
        assert_eq!(policy.request_id_header().as_str(), "x-request-id");
        assert!(policy.generates_key_for(&Method::POST));
        assert!(policy.generates_key_for(&Method::PATCH));
        assert!(!policy.generates_key_for(&Method::GET));
        assert!(!policy.generates_key_for(&Method::PUT));
        assert_eq!(policy.budget().unwrap().ratio(), 0.1);
        let _ = RetryPolicy::default();
    }

    #[test]
    fn nonsense_is_rejected_with_the_setting_named() {
        let b = RetryPolicy::builder;
        assert_eq!(
            b().max_attempts(0).build().unwrap_err(),
            BuildError::MaxAttempts(0)
        );
        assert_eq!(
            b().max_attempts(51).build().unwrap_err(),
            BuildError::MaxAttempts(51)
        );
        assert_eq!(
            b().backoff(Backoff::full_jitter(3 * MS, 2 * MS))
                .build()
                .unwrap_err(),
            BuildError::BackoffBaseAboveCap {
                base: 3 * MS,
                cap: 2 * MS
            }
        );
        assert_eq!(
            b().backoff(Backoff::decorrelated_jitter(Duration::ZERO, MS))
                .build()
                .unwrap_err(),
            BuildError::ZeroBackoffBase
        );
        assert!(matches!(
            b().backoff(Backoff::constant(Duration::from_secs(7200)))
                .build(),
            Err(BuildError::BackoffTooLong(_))
        ));
        assert_eq!(
            b().deadline(Duration::ZERO).build().unwrap_err(),
            BuildError::ZeroDeadline
        );
        assert_eq!(
            b().attempt_timeout(Duration::ZERO).build().unwrap_err(),
            BuildError::ZeroAttemptTimeout
        );
        assert!(matches!(
            b().deadline(Duration::from_secs(1))
                .attempt_timeout(Duration::from_secs(2))
                .build(),
            Err(BuildError::AttemptTimeoutExceedsDeadline { .. })
        ));
        assert_eq!(
            b().key_header(" ").build().unwrap_err(),
            BuildError::EmptyHeaderName("key_header")
        );
        assert!(matches!(
            b().request_id_header("bad header").build(),
            Err(BuildError::InvalidHeaderName {
                setting: "request_id_header",
                ..
            })
        ));
        assert!(matches!(
            b().request_id_header("Idempotency-Key").build(),
            Err(BuildError::SameHeaderNames(_))
        ));
        // Budget settings are validated where they are set: one way to configure it.
        assert!(RetryBudget::builder().ratio(0.0).build().is_err());
        assert!(RetryBudget::builder()
            .window(Duration::ZERO)
            .build()
            .is_err());
        assert!(matches!(
            b().conflict_delay(Duration::from_secs(3601)).build(),
            Err(BuildError::ConflictDelayTooLong(_))
        ));
        assert!(matches!(
            b().retry_after_ceiling(Duration::MAX).build(),
            Err(BuildError::RetryAfterCeilingTooLong(_))
        ));
        assert!(b()
            .retry_after_ceiling(Duration::from_secs(3600))
            .build()
            .is_ok());
    }

    #[test]
    fn the_implied_attempt_timeout_leaves_room_for_a_retry() {
        let s = Duration::from_secs(1);
        let implied = |deadline: Option<Duration>, attempts: u32| {
            let builder = RetryPolicy::builder().max_attempts(attempts);
            let builder = match deadline {
                Some(deadline) => builder.deadline(deadline),
                None => builder.no_deadline(),
            };
            builder.build().unwrap().attempt_timeout()
        };
        assert_eq!(implied(Some(30 * s), 3), Some(10 * s));
        assert_eq!(implied(Some(5 * s), 3), Some(2500 * MS));
        assert_eq!(implied(Some(2 * s), 4), Some(s));
        assert_eq!(implied(Some(2 * s), 1), Some(2 * s));
        assert_eq!(implied(Some(30 * s), 1), Some(10 * s));
        assert_eq!(implied(None, 3), Some(10 * s));
        // An explicit one is kept as set; none is none.
        let fixed = RetryPolicy::builder()
            .deadline(2 * s)
            .attempt_timeout(1500 * MS)
            .build()
            .unwrap();
        assert_eq!(fixed.attempt_timeout(), Some(1500 * MS));
        let off = RetryPolicy::builder().no_attempt_timeout().build().unwrap();
        assert_eq!(off.attempt_timeout(), None);
    }

    #[test]
    fn errors_read_well() {
        let message = RetryPolicy::builder()
            .deadline(Duration::from_secs(1))
            .attempt_timeout(Duration::from_secs(2))
            .build()
            .unwrap_err()
            .to_string();
        assert_eq!(message, "attempt_timeout 2s is longer than the deadline 1s");
    }

    /// Destructured without `..`: a setting added to `Settings` does not compile
    /// here until it is named — and then it must be in the Defaults table.
    #[test]
    fn every_setting_is_in_the_defaults_table() {
        let Settings {
            max_attempts: _,
            backoff: _,
            deadline: _,
            attempt_timeout: _,
            retry_after_ceiling: _,
            conflict_delay: _,
            transient_statuses: _,
            retry_conflict_when_keyed: _,
            key_attachment: _,
            key_format: _,
            key_header: _,
            request_id_header: _,
            server_hint_header: _,
            redact_query_params: _,
            rng_seed: _,
            hedging: _,
        } = Settings::default();
        let settings = [
            "max_attempts",
            "backoff",
            "deadline",
            "attempt_timeout",
            "retry_after_ceiling",
            "conflict_delay",
            "transient_statuses",
            "retry_conflict_when_keyed",
            "key_attachment",
            "key_format",
            "key_header",
            "request_id_header",
            "server_hint_header",
            "redact_query_params",
            "rng_seed",
            "hedging",
        ];
        let plug_ins = [
            "budget",
            "gate",
            "observer",
            "write_ahead",
            "classifier",
            "sleeper",
            "clock",
        ];
        let source = include_str!("policy.rs");
        let rows: Vec<&str> = source
            .lines()
            .filter(|line| line.starts_with("/// | `"))
            .collect();
        for name in settings.iter().chain(&plug_ins) {
            let cell = format!("/// | `{name}` |");
            assert!(
                rows.iter().any(|row| row.starts_with(&cell)),
                "`{name}` is missing from the Defaults table"
            );
        }
    }

    #[test]
    fn to_builder_keeps_everything_and_shares_the_budget() {
        let policy = RetryPolicy::builder()
            .max_attempts(4)
            .deadline(Duration::from_secs(5))
            .key_header("x-key")
            .rng_seed(3)
            .build()
            .unwrap();
        let copy = policy.to_builder().build().unwrap();
        assert_eq!(format!("{policy:?}"), format!("{copy:?}"));
        let changed = policy.to_builder().max_attempts(6).build().unwrap();
        assert_eq!(changed.max_attempts(), 6);
        assert_eq!(changed.key_header().as_str(), "x-key");
        // One budget: what one spends, the other sees.
        let now = std::time::Instant::now();
        let before = changed.budget().unwrap().available_at("h", now);
        assert!(policy.budget().unwrap().try_withdraw_at("h", now));
        assert_eq!(changed.budget().unwrap().available_at("h", now), before - 1);
    }

    #[test]
    fn seeded_policies_give_repeatable_intent_rngs() {
        let a = RetryPolicy::builder().rng_seed(9).build().unwrap();
        let b = RetryPolicy::builder().rng_seed(9).build().unwrap();
        assert_eq!(
            a.inner.intent_rng().next_u64(),
            b.inner.intent_rng().next_u64()
        );
    }
}
