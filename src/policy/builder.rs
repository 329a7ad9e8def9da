//! [`RetryPolicyBuilder`]: setters that never fail, and `build`, which checks
//! them all once and freezes the policy.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;

use super::build_error::{header_name, validate_backoff, BuildError};
use super::settings::{Settings, MAX_ATTEMPTS_LIMIT, MAX_BACKOFF_DELAY, MAX_RETRY_AFTER_CEILING};
use super::{PolicyInner, RetryPolicy};
use crate::attempt_timeout::AttemptTimeout;
use crate::backoff::Backoff;
use crate::classify::{Classifier, StatusSet};
use crate::clock::{Clock, SystemClock};
use crate::gate::{Gate, Gates, RetryBudget};
use crate::hedge::{Hedger, Hedging};
use crate::idempotency::{KeyAttachment, KeyFormat};
use crate::observer::IntentObserver;
use crate::sleeper::{default_sleeper, Sleeper};
use crate::write_ahead::WriteAhead;

/// Builds a [`RetryPolicy`]. Setters never fail; [`build`](Self::build) validates.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use reqwest_resilience::{Backoff, RetryPolicy};
///
/// let policy = RetryPolicy::builder()
///     .max_attempts(4)
///     .backoff(Backoff::decorrelated_jitter(Duration::from_millis(50), Duration::from_secs(1)))
///     .deadline(Duration::from_secs(5))
///     .attempt_timeout(Duration::from_secs(2))
///     .build()?;
/// assert_eq!(policy.max_attempts(), 4);
/// # Ok::<(), reqwest_resilience::BuildError>(())
/// ```
#[derive(Clone)]
pub struct RetryPolicyBuilder {
    settings: Settings,
    classifier: Option<Arc<dyn Classifier>>,
    budget: BudgetChoice,
    gates: Vec<Arc<dyn Gate>>,
    observers: Vec<Arc<dyn IntentObserver>>,
    write_ahead: Option<Arc<dyn WriteAhead>>,
    sleeper: Arc<dyn Sleeper>,
    clock: Arc<dyn Clock>,
}

impl RetryPolicyBuilder {
    /// Every setting at its default (see [`RetryPolicy`]'s Defaults).
    pub fn new() -> Self {
        Self {
            settings: Settings::default(),
            classifier: None,
            budget: BudgetChoice::Own,
            gates: Vec::new(),
            observers: Vec::new(),
            write_ahead: None,
            sleeper: default_sleeper(),
            clock: Arc::new(SystemClock),
        }
    }

    /// A builder with `policy`'s settings and plug-ins (see
    /// [`RetryPolicy::to_builder`]).
    pub(super) fn of(policy: &PolicyInner) -> Self {
        RetryPolicyBuilder {
            settings: policy.settings.clone(),
            classifier: policy.classifier.clone(),
            budget: match policy.gates.budget() {
                Some(budget) => BudgetChoice::Shared(budget.clone()),
                None => BudgetChoice::Off,
            },
            gates: policy.gates.user().to_vec(),
            observers: policy.observers.clone(),
            write_ahead: policy.write_ahead.clone(),
            sleeper: policy.sleeper.clone(),
            clock: policy.clock.clone(),
        }
    }

    /// Most attempts per intent, the first included (1 disables retries; 1–50). A
    /// keyed 409 "in progress" waited out under a deadline is not counted: the server
    /// is executing the intent, and the deadline bounds that wait.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.settings.max_attempts = attempts;
        self
    }

    /// The backoff strategy used when the server sends no `Retry-After`.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.settings.backoff = backoff;
        self
    }

    /// Total time for the intent, attempts and pauses included.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.settings.deadline = Some(deadline);
        self
    }

    /// No overall deadline (max attempts and the attempt timeout still bound the intent).
    pub fn no_deadline(mut self) -> Self {
        self.settings.deadline = None;
        self
    }

    /// Timeout of one attempt (cut to the time left before the deadline), instead
    /// of the implied one (see [`RetryPolicy::attempt_timeout`]). Longer than the
    /// policy's deadline is a build error.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.settings.attempt_timeout = AttemptTimeout::Fixed(timeout);
        self
    }

    /// No per-attempt timeout (the deadline still applies).
    pub fn no_attempt_timeout(mut self) -> Self {
        self.settings.attempt_timeout = AttemptTimeout::Off;
        self
    }

    /// The longest `Retry-After` the client waits for; a longer one ends the intent
    /// at once with [`crate::Error::retry_after`] set.
    pub fn retry_after_ceiling(mut self, ceiling: Duration) -> Self {
        self.settings.retry_after_ceiling = ceiling;
        self
    }

    /// Statuses treated as transient (replaces the default set).
    pub fn transient_statuses(mut self, statuses: StatusSet) -> Self {
        self.settings.transient_statuses = statuses;
        self
    }

    /// Whether a 409 on a keyed request ("same key still in progress") is retried.
    pub fn retry_conflict_when_keyed(mut self, retry: bool) -> Self {
        self.settings.retry_conflict_when_keyed = retry;
        self
    }

    /// A classifier consulted before the default classification.
    pub fn classifier(mut self, classifier: impl Classifier) -> Self {
        self.classifier = Some(Arc::new(classifier));
        self
    }

    /// Which requests get a generated idempotency key.
    pub fn key_attachment(mut self, attachment: KeyAttachment) -> Self {
        self.settings.key_attachment = attachment;
        self
    }

    /// How the key is written on the wire.
    pub fn key_format(mut self, format: KeyFormat) -> Self {
        self.settings.key_format = format;
        self
    }

    /// The idempotency key header name.
    pub fn key_header(mut self, name: impl Into<String>) -> Self {
        self.settings.key_header = name.into();
        self
    }

    /// The request id header name.
    pub fn request_id_header(mut self, name: impl Into<String>) -> Self {
        self.settings.request_id_header = name.into();
        self
    }

    /// The retry budget: share one between several policies by passing clones of
    /// the same [`RetryBudget`], or tune it with [`RetryBudget::builder`]. Without
    /// this call each built policy gets a budget of its own with the defaults.
    pub fn budget(mut self, budget: RetryBudget) -> Self {
        self.budget = BudgetChoice::Shared(budget);
        self
    }

    /// No budget: only max attempts and the deadline limit retries (the policy
    /// has no budget gate, and [`RetryPolicy::budget`] is `None`).
    pub fn no_budget(mut self) -> Self {
        self.budget = BudgetChoice::Off;
        self
    }

    /// Adds a [`Gate`] (a circuit breaker, a throttle), asked before every attempt
    /// (the first one too) after the gates added before it and before the budget.
    /// Several may be added; an attempt needs every one's consent.
    pub fn gate(mut self, gate: impl Gate) -> Self {
        self.gates.push(Arc::new(gate));
        self
    }

    /// Adds an [`IntentObserver`] told about every intent of this policy (each
    /// attempt, each scheduled retry, the end), after those added before it.
    pub fn observer(mut self, observer: impl IntentObserver) -> Self {
        self.observers.push(Arc::new(observer));
        self
    }

    /// The [`WriteAhead`] of every intent of this policy that does not bring its
    /// own (an intent has at most one; a second call replaces the first).
    pub fn write_ahead(mut self, write_ahead: impl WriteAhead) -> Self {
        self.write_ahead = Some(Arc::new(write_ahead));
        self
    }

    /// The shortest pause after a 409 "same key still in progress" on a keyed
    /// request (see [`retry_conflict_when_keyed`](Self::retry_conflict_when_keyed)).
    /// The server is still executing the first request: polling it at the backoff's
    /// 100 ms would only add load, so the pause is at least this long (or the
    /// server's `Retry-After`, when longer). These waits are not charged to the
    /// retry budget.
    pub fn conflict_delay(mut self, delay: Duration) -> Self {
        self.settings.conflict_delay = delay;
        self
    }

    /// How the client pauses (inject [`crate::RecordingSleeper`] in tests).
    pub fn sleeper(mut self, sleeper: impl Sleeper) -> Self {
        self.sleeper = Arc::new(sleeper);
        self
    }

    /// A response header through which the server says whether to retry, e.g.
    /// Stripe's `Stripe-Should-Retry`: `true` retries and `false` stops, whatever
    /// the status (a user [`classifier`](Self::classifier) still decides first, and
    /// method safety still applies). Off by default.
    pub fn server_hint_header(mut self, name: impl Into<String>) -> Self {
        self.settings.server_hint_header = Some(name.into());
        self
    }

    /// Where the loop reads the time (deadline, budget, attempt log). Pair a
    /// [`crate::VirtualClock`] with [`crate::RecordingSleeper::advancing`] in tests.
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// More query parameters whose values tracing spans show as `REDACTED` in
    /// `url.full` (API keys in query strings are common). Always redacted, as
    /// OpenTelemetry asks: `AWSAccessKeyId`, `Signature`, `sig`, `X-Goog-Signature`.
    /// Names match ignoring ASCII case; calls add up.
    pub fn redact_query_params<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.settings
            .redact_query_params
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Seed the jitter for repeatable delays.
    pub fn rng_seed(mut self, seed: u64) -> Self {
        self.settings.rng_seed = Some(seed);
        self
    }

    /// Hedged requests (see [`Hedging`]): off by default. Only for GET, HEAD and
    /// OPTIONS (PUT and DELETE when listed), never for an intent with a key or a
    /// write-ahead.
    pub fn hedging(mut self, hedging: Hedging) -> Self {
        self.settings.hedging = Some(hedging);
        self
    }

    /// No hedged requests (the default).
    pub fn no_hedging(mut self) -> Self {
        self.settings.hedging = None;
        self
    }

    /// Validates and freezes the policy.
    ///
    /// # Errors
    /// A [`BuildError`] naming the first setting that makes no sense: zero or more
    /// than 50 attempts; a zero backoff base, a base above the cap, or a delay above
    /// one hour; a zero deadline or attempt timeout; an attempt timeout longer than
    /// the deadline; an empty or invalid header name, or the same name for the key
    /// and the request id; a Retry-After ceiling or conflict delay above one hour.
    pub fn build(self) -> Result<RetryPolicy, BuildError> {
        let settings = self.settings;
        if settings.max_attempts == 0 || settings.max_attempts > MAX_ATTEMPTS_LIMIT {
            return Err(BuildError::MaxAttempts(settings.max_attempts));
        }
        validate_backoff(settings.backoff)?;
        if settings.retry_after_ceiling > MAX_RETRY_AFTER_CEILING {
            return Err(BuildError::RetryAfterCeilingTooLong(
                settings.retry_after_ceiling,
            ));
        }
        if settings.conflict_delay > MAX_BACKOFF_DELAY {
            return Err(BuildError::ConflictDelayTooLong(settings.conflict_delay));
        }
        if settings.deadline == Some(Duration::ZERO) {
            return Err(BuildError::ZeroDeadline);
        }
        // The implied attempt timeout fits any deadline by construction; an explicit
        // one longer than the deadline set beside it is a mistake worth reporting.
        if let AttemptTimeout::Fixed(each) = settings.attempt_timeout {
            if each.is_zero() {
                return Err(BuildError::ZeroAttemptTimeout);
            }
            if let Some(total) = settings.deadline.filter(|total| each > *total) {
                return Err(BuildError::AttemptTimeoutExceedsDeadline {
                    attempt_timeout: each,
                    deadline: total,
                });
            }
        }
        let key_header = header_name("key_header", &settings.key_header)?;
        let request_id_header = header_name("request_id_header", &settings.request_id_header)?;
        let server_hint_header = settings
            .server_hint_header
            .as_deref()
            .map(|name| header_name("server_hint_header", name))
            .transpose()?;
        if key_header == request_id_header {
            return Err(BuildError::SameHeaderNames(key_header.to_string()));
        }
        if let Some(hedging) = &settings.hedging {
            hedging
                .check()
                .map_err(|(setting, problem)| BuildError::Hedging { setting, problem })?;
            if settings.max_attempts < 2 {
                return Err(BuildError::Hedging {
                    setting: "hedging",
                    problem: "needs max_attempts of 2 or more: every copy is an attempt".to_owned(),
                });
            }
        }
        let hedger = settings.hedging.clone().map(Hedger::new);
        let budget = match self.budget {
            BudgetChoice::Own => Some(RetryBudget::new_default()),
            BudgetChoice::Shared(budget) => Some(budget),
            BudgetChoice::Off => None,
        };
        Ok(RetryPolicy {
            inner: Arc::new(PolicyInner {
                classifier: self.classifier,
                server_hint_header,
                key_header,
                request_id_header,
                gates: Gates::new(self.gates, budget),
                observers: self.observers,
                write_ahead: self.write_ahead,
                sleeper: self.sleeper,
                clock: self.clock,
                seeded_rng: settings
                    .rng_seed
                    .map(|seed| Mutex::new(StdRng::seed_from_u64(seed))),
                hedger,
                settings,
            }),
        })
    }
}

/// Which budget a built policy gets.
#[derive(Clone)]
enum BudgetChoice {
    /// One of its own, with the defaults: every build makes a new one.
    Own,
    /// This one, shared with whoever else holds it.
    Shared(RetryBudget),
    /// None: no budget gate.
    Off,
}

impl Default for RetryPolicyBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for RetryPolicyBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicyBuilder")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}
