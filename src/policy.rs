//! The retry policy: every knob, set through a builder and validated once.
//!
//! Settings never fail on their own; [`RetryPolicyBuilder::build`] checks them all
//! and names the first one that makes no sense. The frozen [`RetryPolicy`] is an
//! `Arc` inside: cloning is cheap, and clones share the retry budget and the seeded
//! random source.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::header::HeaderName;
use http::Method;
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};

use crate::backoff::Backoff;
use crate::classify::{is_idempotent_method, Classifier, Rules, StatusSet};
use crate::clock::{Clock, SystemClock};
use crate::deadline::AttemptTimeout;
use crate::gate::RetryBudget;
use crate::gate::{Gate, Gates};
use crate::hedge::{Hedger, Hedging};
use crate::idempotency::{KeyAttachment, KeyFormat};
use crate::observer::IntentObserver;
use crate::sleeper::{Sleeper, TokioSleeper};
use crate::write_ahead::WriteAhead;

/// Default number of attempts (1 + 2 retries), as the AWS SDK's standard mode.
pub(crate) const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// Largest `max_attempts` accepted: more turns an outage into a storm.
pub(crate) const MAX_ATTEMPTS_LIMIT: u32 = 50;
/// Default backoff: full jitter, base 100 ms, cap 2 s.
pub(crate) const DEFAULT_BACKOFF: Backoff =
    Backoff::full_jitter(Duration::from_millis(100), Duration::from_secs(2));
/// Default deadline for a whole intent.
pub(crate) const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);
/// Default longest `Retry-After` the client will wait for.
pub(crate) const DEFAULT_RETRY_AFTER_CEILING: Duration = Duration::from_secs(30);
/// Default idempotency key header.
pub(crate) const DEFAULT_KEY_HEADER: &str = "idempotency-key";
/// Default request id header.
pub(crate) const DEFAULT_REQUEST_ID_HEADER: &str = "x-request-id";
/// Longest Retry-After ceiling accepted: no intent sleeps longer than this.
pub(crate) const MAX_RETRY_AFTER_CEILING: Duration = Duration::from_secs(3600);
/// Default shortest pause after a 409 "same key still in progress".
pub(crate) const DEFAULT_CONFLICT_DELAY: Duration = Duration::from_secs(1);
/// Longest backoff delay accepted.
pub(crate) const MAX_BACKOFF_DELAY: Duration = Duration::from_secs(3600);

/// Every plain setting of a policy, declared once: the builder holds one, a built
/// policy keeps it (for [`RetryPolicy::to_builder`]), and the defaults live in its
/// `Default`. The plug-ins (classifier, budget, gates, observers, sleeper, clock)
/// are shared objects and travel beside it.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) deadline: Option<Duration>,
    pub(crate) attempt_timeout: AttemptTimeout,
    pub(crate) retry_after_ceiling: Duration,
    pub(crate) conflict_delay: Duration,
    pub(crate) transient_statuses: StatusSet,
    pub(crate) retry_conflict_when_keyed: bool,
    pub(crate) key_attachment: KeyAttachment,
    pub(crate) key_format: KeyFormat,
    pub(crate) key_header: String,
    pub(crate) request_id_header: String,
    pub(crate) server_hint_header: Option<String>,
    pub(crate) redact_query_params: Vec<String>,
    pub(crate) rng_seed: Option<u64>,
    pub(crate) hedging: Option<Hedging>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            backoff: DEFAULT_BACKOFF,
            deadline: Some(DEFAULT_DEADLINE),
            attempt_timeout: AttemptTimeout::Implied,
            retry_after_ceiling: DEFAULT_RETRY_AFTER_CEILING,
            conflict_delay: DEFAULT_CONFLICT_DELAY,
            transient_statuses: StatusSet::transient_default(),
            retry_conflict_when_keyed: true,
            key_attachment: KeyAttachment::UnsafeMethods,
            key_format: KeyFormat::Token,
            key_header: DEFAULT_KEY_HEADER.to_owned(),
            request_id_header: DEFAULT_REQUEST_ID_HEADER.to_owned(),
            server_hint_header: None,
            redact_query_params: Vec::new(),
            rng_seed: None,
            hedging: None,
        }
    }
}

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
        let inner = &self.inner;
        RetryPolicyBuilder {
            settings: inner.settings.clone(),
            classifier: inner.classifier.clone(),
            budget: match inner.gates.budget() {
                Some(budget) => BudgetChoice::Shared(budget.clone()),
                None => BudgetChoice::Off,
            },
            gates: inner.gates.user().to_vec(),
            observers: inner.observers.clone(),
            write_ahead: inner.write_ahead.clone(),
            sleeper: inner.sleeper.clone(),
            clock: inner.clock.clone(),
        }
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
            sleeper: Arc::new(TokioSleeper),
            clock: Arc::new(SystemClock),
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

fn validate_backoff(backoff: Backoff) -> Result<(), BuildError> {
    match backoff {
        Backoff::FullJitter { base, cap } | Backoff::DecorrelatedJitter { base, cap } => {
            if base.is_zero() {
                return Err(BuildError::ZeroBackoffBase);
            }
            if base > cap {
                return Err(BuildError::BackoffBaseAboveCap { base, cap });
            }
            if cap > MAX_BACKOFF_DELAY {
                return Err(BuildError::BackoffTooLong(cap));
            }
        }
        Backoff::Constant(delay) if delay > MAX_BACKOFF_DELAY => {
            return Err(BuildError::BackoffTooLong(delay));
        }
        Backoff::Constant(_) => {}
    }
    Ok(())
}

fn header_name(setting: &'static str, name: &str) -> Result<HeaderName, BuildError> {
    if name.trim().is_empty() {
        return Err(BuildError::EmptyHeaderName(setting));
    }
    HeaderName::from_bytes(name.as_bytes()).map_err(|_| BuildError::InvalidHeaderName {
        setting,
        name: name.to_owned(),
    })
}

/// A setting that makes no sense, found by [`RetryPolicyBuilder::build`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// `max_attempts` must be 1–50.
    #[error("max_attempts must be between 1 and 50, got {0}")]
    MaxAttempts(u32),
    /// A jittered backoff needs a base above zero.
    #[error("backoff base must be greater than zero")]
    ZeroBackoffBase,
    /// The backoff base is larger than its cap.
    #[error("backoff base {base:?} is larger than its cap {cap:?}")]
    BackoffBaseAboveCap {
        /// The base.
        base: Duration,
        /// The cap.
        cap: Duration,
    },
    /// A backoff delay above one hour.
    #[error("backoff delay {0:?} is longer than one hour")]
    BackoffTooLong(Duration),
    /// `retry_after_ceiling` above one hour (an intent must never sleep for ages).
    #[error("retry_after_ceiling {0:?} is longer than one hour")]
    RetryAfterCeilingTooLong(Duration),
    /// `conflict_delay` above one hour.
    #[error("conflict_delay {0:?} is longer than one hour")]
    ConflictDelayTooLong(Duration),
    /// `deadline` is zero.
    #[error("deadline must be greater than zero (use no_deadline() for none)")]
    ZeroDeadline,
    /// `attempt_timeout` is zero.
    #[error("attempt_timeout must be greater than zero (use no_attempt_timeout() for none)")]
    ZeroAttemptTimeout,
    /// One attempt may not take longer than the whole intent.
    #[error("attempt_timeout {attempt_timeout:?} is longer than the deadline {deadline:?}")]
    AttemptTimeoutExceedsDeadline {
        /// The attempt timeout.
        attempt_timeout: Duration,
        /// The deadline.
        deadline: Duration,
    },
    /// A header name setting is empty.
    #[error("{0} must not be empty")]
    EmptyHeaderName(&'static str),
    /// A header name setting is not a valid header name.
    #[error("{setting} {name:?} is not a valid header name")]
    InvalidHeaderName {
        /// Which setting.
        setting: &'static str,
        /// The rejected name.
        name: String,
    },
    /// The key and the request id would overwrite each other.
    #[error("key_header and request_id_header are both {0:?}")]
    SameHeaderNames(String),
    /// A [`Hedging`] setting makes no sense.
    #[error("{setting} {problem}")]
    Hedging {
        /// Which setting (`hedging.max_copies`, `hedging.percentile`…).
        setting: &'static str,
        /// What is wrong with it.
        problem: String,
    },
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
