//! Retry budgets: a cap on retries across a whole client, not per request.
//!
//! The explanation (why budgets, the arithmetic, the defaults) is on the public
//! [`RetryBudget`] page, where users read it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Instant;

use super::contract::{Gate, GateRefusal, GateScope, RetryCause};
use super::per_authority::PerAuthority;
use super::ratio::{whole, Millionths};
use super::settings::gate_settings;
use super::window::{counts, Counts, Epochs, Window};

const MIN_WINDOW: Duration = Duration::from_secs(1);
const MAX_WINDOW: Duration = Duration::from_secs(3600);

/// A retry budget: a cap on retries across a whole client, not per request. Shared by a
/// client, its clones and anyone holding a clone of the handle; cloning is cheap and
/// yields a handle to the *same* budget.
///
/// # Why a budget, and not only max attempts
///
/// A per-request attempt limit is not enough to protect a struggling server.
/// With 3 attempts per request, an outage where every attempt fails turns each
/// request into 3, so the server sees up to 3× its normal load at the moment
/// it is least able to take it. Layers multiply: a gateway, a service and this
/// client, each retrying 3 times, send up to 3 × 3 × 3 = 27× the load. A retry
/// *budget* caps the total instead: retries may be at most `ratio` × the
/// ordinary requests seen recently. With a 10% budget an outage costs at most
/// about 1.1× the normal load (plus the small reserve), however many attempts
/// each request is allowed. This is the design of Finagle's `RetryBudget`
/// (10 s TTL, a reserve, 20%), gRPC's `retryThrottling`, the AWS SDK retry
/// quota and tower's `TpsBudget`.
///
/// Every intent's first attempt is a [`RetryBudget::deposit`]; every retry must
/// first be granted by [`RetryBudget::try_withdraw`]. Counts live in a sliding
/// window of 10 slots of `window / 10` each, so memory is constant whatever the
/// traffic and old requests fall out one slot at a time. A retry is granted iff
/// `withdrawals + 1 <= ratio × deposits + reserve` over the window, evaluated in
/// exact integer arithmetic (ratio in millionths, `u128` products), so the
/// budget never over-grants, unlike float arithmetic that lets a 60% budget
/// allow 100% (tower issue 857). The `reserve` is a number of retries per
/// window granted even with no traffic, so a quiet client can still retry a
/// single failed request.
///
/// # In a policy
///
/// Every [`RetryPolicy`](crate::RetryPolicy) carries one budget (unless turned off), shared by all the
/// intents of every client built from it. Pass a handle to
/// [`RetryPolicyBuilder::budget`](crate::RetryPolicyBuilder::budget) to share one
/// between policies, or turn it off with
/// [`no_budget`](crate::RetryPolicyBuilder::no_budget) (tests, or a layer that is not
/// the one retrying: the policy then has no budget gate at all). When the budget
/// refuses a retry, the intent ends at once with
/// [`Error::is_budget_exhausted`](crate::Error::is_budget_exhausted), carrying the
/// last response or failure. A 409 "same key still in progress" is waited out
/// without charging the budget. The budget is a [`Gate`](crate::Gate): your own
/// gates (a circuit breaker) are asked before it, so it pays only for attempts that
/// happen; it deposits for every first attempt and never refuses one.
///
/// # Defaults
///
/// [`RetryBudget::new_default`]: ratio 0.1, window 10 s, reserve 10,
/// one budget for all hosts. 10% keeps the worst case near 1.1×; 10 s is long
/// enough to smooth bursts yet short enough to recover quickly once the
/// outage ends; 10 retries per window lets low-traffic clients ride out
/// transient errors. A budget is shared by a client and all its clones; clone
/// the handle to share it between clients on purpose. With `per_host(true)`
/// each host gets its own window (up to 1024 hosts; see
/// [`RetryBudgetBuilder::per_host`]).
///
/// # Examples
/// ```
/// use reqwest_resilience::RetryBudget;
/// use std::time::Duration;
///
/// let budget = RetryBudget::builder()
///     .ratio(0.2)
///     .window(Duration::from_secs(10))
///     .reserve(0)
///     .build()?;
/// for _ in 0..10 {
///     budget.deposit("api.example.com");
/// }
/// assert!(budget.try_withdraw("api.example.com"));
/// assert!(budget.try_withdraw("api.example.com"));
/// assert!(!budget.try_withdraw("api.example.com")); // 20% of 10 requests
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RetryBudget {
    inner: Arc<Inner>,
}

/// Builder for [`RetryBudget`]; setters never fail, [`build`](Self::build) validates.
#[derive(Clone, Debug)]
pub struct RetryBudgetBuilder {
    settings: Settings,
}

gate_settings! {
    /// A budget's settings, as the builder holds them and the built budget keeps them.
    struct Settings for RetryBudget, RetryBudgetBuilder {
        /// Fraction of ordinary requests that may be retried, in (0, 1] (default 0.1).
        ///
        /// Applied in millionths: the effective ratio is the ratio rounded down to
        /// 6 decimal places.
        ratio: f64 = 0.1
            => /// Fraction of ordinary requests that may be retried.
            ratio;
        /// Length of the sliding window, 1 s ..= 1 h (default 10 s).
        window: Duration = Duration::from_secs(10)
            => /// Length of the sliding window.
            window;
        /// Retries granted per window even with no traffic; any `u32`, including 0 (default 10).
        reserve: u32 = 10
            => /// Retries granted per window even without traffic.
            reserve;
        /// Give each scope its own window (default `false`: one window for the whole
        /// client, by design — a budget protects the caller's fleet as a whole). As a
        /// gate, the scope is the request's authority (scheme, host, port; see
        /// [`GateScope::authority`]), so one sick service cannot spend another's
        /// retries.
        ///
        /// At most 1024 scopes have their own window. Past that a new scope takes the
        /// place of the least recently used one whose window is empty; when none is,
        /// the new scope is not tracked and its retries are granted — never charged to
        /// another scope's window.
        per_host: bool = false
            => /// Whether each host (scope) has its own window.
            is_per_host;
    }
}

/// Why a [`RetryBudgetBuilder`] could not build a budget.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InvalidBudget {
    /// The ratio was not a finite number in (0, 1].
    Ratio(f64),
    /// The window was shorter than 1 s or longer than 1 h.
    Window(Duration),
}

impl fmt::Display for InvalidBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ratio(value) => write!(
                f,
                "retry budget ratio must be a finite number in (0, 1], got {value}"
            ),
            Self::Window(value) => write!(
                f,
                "retry budget window must be between 1 s and 1 h, got {value:?}"
            ),
        }
    }
}

impl std::error::Error for InvalidBudget {}

struct Inner {
    settings: Settings,
    ratio_scaled: Millionths,
    epochs: Epochs,
    windows: PerAuthority<Window<Traffic>>,
}

counts! {
    /// What one slot of a window counts.
    struct Traffic {
        deposits,
        withdrawals,
    }
}

const _: fn() = || {
    fn assert_traits<T: Send + Sync + Clone>() {}
    assert_traits::<RetryBudget>();
};

impl Inner {
    /// `ratio × deposits + reserve`, in millionths, exactly.
    fn allowance_scaled(&self, deposits: u64) -> u128 {
        self.ratio_scaled.of(deposits) + whole(u64::from(self.settings.reserve))
    }
}

impl RetryBudget {
    /// A builder starting from the default settings (see [`RetryBudget::new_default`]).
    pub fn builder() -> RetryBudgetBuilder {
        RetryBudgetBuilder {
            settings: Settings::default(),
        }
    }

    /// Default budget: ratio 0.1, window 10 s, reserve 10 retries per window, not per host.
    pub fn new_default() -> RetryBudget {
        Self::builder().build_at(Instant::now())
    }

    /// Record one ordinary request (an intent's first attempt) for `scope`
    /// (the host; ignored unless per-host).
    pub fn deposit(&self, scope: &str) {
        self.deposit_at(scope, Instant::now());
    }

    /// Ask for one retry for `scope`; `true` = granted and counted.
    pub fn try_withdraw(&self, scope: &str) -> bool {
        self.try_withdraw_at(scope, Instant::now())
    }

    /// [`deposit`](Self::deposit) at an explicit time.
    ///
    /// Times before the budget was built count as the moment it was built.
    pub fn deposit_at(&self, scope: &str, now: Instant) {
        self.with_window(scope, now, |window, epoch| {
            let slot = window.slot(epoch);
            slot.deposits = slot.deposits.saturating_add(1);
        });
    }

    /// Takes back a deposit (`deposit`) or returns a withdrawal made at `now` for
    /// an attempt that was not sent after all.
    pub(crate) fn take_back(&self, scope: &str, now: Instant, deposit: bool) {
        self.with_window(scope, now, |window, epoch| {
            let slot = window.slot(epoch);
            let count = if deposit {
                &mut slot.deposits
            } else {
                &mut slot.withdrawals
            };
            *count = count.saturating_sub(1);
        });
    }

    /// [`try_withdraw`](Self::try_withdraw) at an explicit time.
    ///
    /// A time earlier than one already seen by the same window counts as that
    /// later time, so reordered callers can never free extra retries.
    pub fn try_withdraw_at(&self, scope: &str, now: Instant) -> bool {
        let inner = &*self.inner;
        self.with_window(scope, now, |window, epoch| {
            let Traffic {
                deposits,
                withdrawals,
            } = window.sum(epoch);
            let wanted = whole(withdrawals.saturating_add(1));
            let granted = wanted <= inner.allowance_scaled(deposits);
            if granted {
                let slot = window.slot(epoch);
                slot.withdrawals = slot.withdrawals.saturating_add(1);
            }
            granted
        })
        // An untracked scope (see `per_host`) is not held back on another's record.
        .unwrap_or(true)
    }

    /// Run `f` on the window of `scope` at the (never decreasing) epoch of `now`.
    /// `None` when the scope cannot be tracked (per host, every window busy).
    fn with_window<R>(
        &self,
        scope: &str,
        now: Instant,
        f: impl FnOnce(&mut Window<Traffic>, u64) -> R,
    ) -> Option<R> {
        let epoch = self.inner.epochs.of(now);
        let mut windows = self.inner.windows.lock();
        let window = windows.entry(scope, |w| w.sum(epoch) == Traffic::default())?;
        let epoch = window.advance(epoch);
        Some(f(window, epoch))
    }

    /// Retries still grantable at `now` for `scope` (for logs/tests), saturating at 0.
    ///
    /// Does not create a per-host window.
    pub fn available_at(&self, scope: &str, now: Instant) -> u64 {
        let inner = &*self.inner;
        let epoch = inner.epochs.of(now);
        let Traffic {
            deposits,
            withdrawals,
        } = inner
            .windows
            .lock()
            .get(scope)
            .map_or_else(Traffic::default, |w| w.sum(epoch));
        let allowed = inner.allowance_scaled(deposits) / whole(1);
        let left = allowed.saturating_sub(u128::from(withdrawals));
        u64::try_from(left).unwrap_or(u64::MAX)
    }
}

/// The budget as a gate: every first attempt deposits, every retry after a
/// transient failure withdraws, and so does every hedge (extra load like a retry;
/// a cancelled copy keeps its withdrawal: it was sent). Waiting out a 409 "in progress" is not outage load
/// and is never refused; a first attempt never is either.
impl Gate for RetryBudget {
    fn name(&self) -> &str {
        "retry_budget"
    }

    fn admit(&self, scope: &GateScope<'_>) -> Result<(), GateRefusal> {
        match scope.retry_cause() {
            None => {
                self.deposit_at(scope.authority(), scope.now());
                Ok(())
            }
            Some(RetryCause::Conflict) => Ok(()),
            Some(_) if self.try_withdraw_at(scope.authority(), scope.now()) => Ok(()),
            Some(_) => {
                let refusal = GateRefusal::budget_exhausted();
                Err(if self.inner.settings.per_host {
                    refusal.with_authority(scope.authority())
                } else {
                    refusal
                })
            }
        }
    }

    fn not_sent(&self, scope: &GateScope<'_>) {
        match scope.retry_cause() {
            None => self.take_back(scope.authority(), scope.now(), true),
            Some(RetryCause::Conflict) => {}
            Some(_) => self.take_back(scope.authority(), scope.now(), false),
        }
    }
}

impl Default for RetryBudget {
    fn default() -> Self {
        Self::new_default()
    }
}

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.inner;
        // Copy the counts out; the lock is released before formatting.
        let epoch = inner.epochs.of(Instant::now());
        let windows = inner.windows.lock();
        let Traffic {
            deposits,
            withdrawals,
        } = windows.all().fold(Traffic::default(), |sum, w| {
            sum.saturating_add(w.sum(epoch))
        });
        let hosts = windows.tracked();
        drop(windows);
        f.debug_struct("RetryBudget")
            .field("settings", &inner.settings)
            .field("deposits_in_window", &deposits)
            .field("withdrawals_in_window", &withdrawals)
            .field("host_windows", &hosts)
            .finish()
    }
}

impl RetryBudgetBuilder {
    /// Validate the settings and build the budget.
    pub fn build(self) -> Result<RetryBudget, InvalidBudget> {
        self.validate()?;
        Ok(self.build_at(Instant::now()))
    }

    fn validate(&self) -> Result<(), InvalidBudget> {
        let s = &self.settings;
        if !(s.ratio.is_finite() && s.ratio > 0.0 && s.ratio <= 1.0) {
            return Err(InvalidBudget::Ratio(s.ratio));
        }
        if !(MIN_WINDOW..=MAX_WINDOW).contains(&s.window) {
            return Err(InvalidBudget::Window(s.window));
        }
        Ok(())
    }

    /// Build with a given origin; settings must already be valid.
    fn build_at(self, origin: Instant) -> RetryBudget {
        RetryBudget {
            inner: Arc::new(Inner {
                settings: self.settings,
                ratio_scaled: Millionths::floor(self.settings.ratio, 1),
                epochs: Epochs::new(origin, self.settings.window),
                windows: PerAuthority::new(self.settings.per_host, ()),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::authority::MAX_AUTHORITIES;
    use proptest::prelude::*;

    const H: &str = "example.com";

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    /// A valid budget whose origin is `base`, so `*_at` offsets are exact.
    fn make(ratio: f64, reserve: u32, per_host: bool) -> (RetryBudget, Instant) {
        let builder = RetryBudget::builder().ratio(ratio).reserve(reserve);
        let base = Instant::now();
        (builder.per_host(per_host).build_at(base), base)
    }

    fn grants(b: &RetryBudget, scope: &str, at: Instant, tries: u32) -> u32 {
        (0..tries)
            .map(|_| u32::from(b.try_withdraw_at(scope, at)))
            .sum()
    }

    #[test]
    fn default_settings() {
        for b in [RetryBudget::new_default(), RetryBudget::default()] {
            assert_eq!(b.ratio(), 0.1);
            assert_eq!(b.window(), Duration::from_secs(10));
            assert_eq!(b.reserve(), 10);
            assert!(!b.is_per_host());
        }
    }

    /// The name is what refusals, logs and metrics call the gate by: the same
    /// stable word its refusals carry.
    #[test]
    fn the_gate_is_named_as_its_refusals_name_it() {
        let (b, t) = make(0.1, 0, false);
        let retry = GateScope {
            host: H,
            authority: H,
            now: t,
            attempt: 2,
            retry_cause: Some(RetryCause::Transient),
            attempt_duration: Duration::ZERO,
        };
        let refusal = b.admit(&retry).unwrap_err();
        assert_eq!(b.name(), "retry_budget");
        assert_eq!(refusal.gate(), b.name());
    }

    /// The clock-reading forms count at the current instant, as the `_at` forms do.
    #[test]
    fn deposits_and_withdrawals_now_share_the_window() {
        let b = RetryBudget::builder()
            .ratio(0.5)
            .reserve(0)
            .build()
            .unwrap();
        assert!(!b.try_withdraw(H), "nothing deposited, no reserve");
        b.deposit(H);
        b.deposit(H);
        assert!(b.try_withdraw(H), "one retry for two requests at 50 %");
        assert!(!b.try_withdraw(H), "and only one");
    }

    #[test]
    fn fresh_budget_grants_exactly_reserve() {
        let (b, t) = make(0.1, 7, false);
        assert_eq!(b.available_at(H, t), 7);
        assert_eq!(grants(&b, H, t, 20), 7);
        assert_eq!(b.available_at(H, t), 0);
    }

    #[test]
    fn ratio_limits_grants_exactly() {
        // (ratio, deposits, expected): 0.6 is the tower#857 regression.
        for (ratio, deposits, expected) in [(0.1, 100, 10), (0.6, 10, 6), (1.0, 37, 37)] {
            let (b, t) = make(ratio, 0, false);
            (0..deposits).for_each(|_| b.deposit_at(H, t));
            assert_eq!(b.available_at(H, t), u64::from(expected));
            assert_eq!(grants(&b, H, t, 100), expected, "ratio {ratio}");
        }
    }

    #[test]
    fn deposits_and_withdrawals_expire_after_window() {
        let (b, t) = make(0.5, 3, false);
        (0..10).for_each(|_| b.deposit_at(H, t));
        assert_eq!(b.available_at(H, t + secs(9.999)), 8);
        assert_eq!(grants(&b, H, t + secs(10.0), 5), 3); // reserve only
        assert_eq!(grants(&b, H, t + secs(19.9), 5), 0);
        assert_eq!(grants(&b, H, t + secs(20.0), 5), 3); // reserve refilled
    }

    #[test]
    fn partial_expiry_across_slots() {
        let (b, t) = make(1.0, 0, false);
        (0..5).for_each(|_| b.deposit_at(H, t));
        assert_eq!(grants(&b, H, t + secs(3.0), 2), 2);
        (0..5).for_each(|_| b.deposit_at(H, t + secs(5.0)));
        assert_eq!(b.available_at(H, t + secs(9.9)), 8);
        assert_eq!(b.available_at(H, t + secs(10.0)), 3); // t=0 slot gone
        assert_eq!(b.available_at(H, t + secs(13.0)), 5); // t=3 s withdrawals gone
        assert_eq!(b.available_at(H, t + secs(15.0)), 0);
    }

    #[test]
    fn time_never_runs_backwards() {
        let (b, t) = make(0.1, 2, false);
        assert_eq!(grants(&b, H, t + secs(20.0), 5), 2);
        assert_eq!(grants(&b, H, t, 5), 0); // an old instant cannot reopen t=0
        let late = RetryBudget::builder().build_at(t + secs(5.0));
        late.deposit_at(H, t); // before origin: counts as origin
        assert_eq!(late.available_at(H, t + secs(5.0)), 10);
        assert_eq!(late.available_at(H, t + secs(14.9)), 10);
    }

    #[test]
    fn clones_share_state() {
        let (a, t) = make(0.1, 4, false);
        let b = a.clone();
        assert_eq!(grants(&a, H, t, 2), 2);
        assert_eq!(grants(&b, H, t, 5), 2);
        assert_eq!(a.available_at(H, t), 0);
    }

    #[test]
    fn threads_share_one_budget_and_survive_poisoning() {
        let (b, t) = make(0.1, 50, false);
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || grants(&b, H, t, 100))
            })
            .collect();
        let total: u32 = workers.into_iter().map(|w| w.join().unwrap_or(0)).sum();
        assert_eq!(total, 50);
        let poisoner = b.clone();
        let _ = std::thread::spawn(move || {
            let _guard = poisoner.inner.windows.lock();
            panic!("poison the budget lock");
        })
        .join();
        assert!(b.inner.windows.is_poisoned());
        assert_eq!(grants(&b, H, t + secs(10.0), 100), 50);
    }

    #[test]
    fn per_host_separates_and_shared_does_not() {
        let (per, t) = make(0.1, 2, true);
        assert_eq!(grants(&per, "a", t, 5), 2);
        assert_eq!(grants(&per, "b", t, 5), 2);
        let (shared, t) = make(0.1, 2, false);
        assert_eq!(grants(&shared, "a", t, 5), 2);
        assert_eq!(grants(&shared, "b", t, 5), 0);
    }

    #[test]
    fn past_the_bound_a_new_scope_never_shares_a_window() {
        let (b, t) = make(0.1, 1, true);
        for i in 0..MAX_AUTHORITIES {
            b.deposit_at(&format!("h{i}"), t);
        }
        // Every window busy: new scopes go untracked and are granted, each on
        // its own, never charged to a shared window.
        assert_eq!(grants(&b, "x", t, 3), 3);
        assert_eq!(grants(&b, "y", t, 3), 3);
        assert_eq!(grants(&b, "h0", t, 3), 1); // a tracked scope keeps its own
        assert_eq!(b.inner.windows.lock().tracked(), MAX_AUTHORITIES);
        // A window later every scope is idle: new ones take their places.
        let later = t + secs(10.0);
        assert_eq!(grants(&b, "x", later, 3), 1);
        assert_eq!(grants(&b, "y", later, 3), 1);
        assert_eq!(b.inner.windows.lock().tracked(), MAX_AUTHORITIES);
        assert!(b.inner.windows.lock().get("x").is_some());
    }

    /// As a gate: a first attempt deposits, a retry or a hedge withdraws, a 409's
    /// wait is free, and an admitted attempt that was not sent gives back what it
    /// counted.
    #[test]
    fn as_a_gate_first_attempts_pay_for_retries_and_unsent_ones_come_back() {
        let (b, t) = make(0.5, 0, false);
        let scope = |retry_cause| GateScope {
            host: H,
            authority: H,
            now: t,
            attempt: 1,
            retry_cause,
            attempt_duration: Duration::ZERO,
        };
        let first = scope(None);
        for _ in 0..4 {
            b.admit(&first).unwrap();
        }
        assert_eq!(b.available_at(H, t), 2, "half of 4 first attempts");
        b.not_sent(&first);
        assert_eq!(
            b.available_at(H, t),
            1,
            "a first attempt not sent is no traffic"
        );
        let retry = scope(Some(RetryCause::Transient));
        b.admit(&retry).unwrap();
        assert_eq!(b.available_at(H, t), 0, "a retry is charged");
        b.not_sent(&retry);
        assert_eq!(b.available_at(H, t), 1, "a retry not sent is not");
        let conflict = scope(Some(RetryCause::Conflict));
        for _ in 0..10 {
            b.admit(&conflict).unwrap();
        }
        b.not_sent(&conflict);
        assert_eq!(b.available_at(H, t), 1, "a 409's wait is never charged");
        let hedge = scope(Some(RetryCause::Hedge));
        b.admit(&hedge).unwrap();
        let refusal = b.admit(&retry).unwrap_err();
        assert_eq!(refusal.gate(), "retry_budget");
        assert_eq!(refusal.authority(), None, "one budget for every authority");
        b.not_sent(&hedge);
        b.admit(&retry).unwrap();
        let (per_host, t) = make(0.5, 0, true);
        let refusal = per_host.admit(&GateScope { now: t, ..retry }).unwrap_err();
        assert_eq!(refusal.authority(), Some(H));
    }

    #[test]
    fn builder_validates() {
        let build = |r, ms| {
            RetryBudget::builder()
                .ratio(r)
                .window(Duration::from_millis(ms))
                .build()
        };
        for r in [0.0, -0.1, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.01] {
            assert!(
                matches!(build(r, 10_000), Err(InvalidBudget::Ratio(_))),
                "{r}"
            );
        }
        for ms in [0, 999, 3_600_001, 7_200_000] {
            assert_eq!(
                build(0.5, ms).unwrap_err(),
                InvalidBudget::Window(Duration::from_millis(ms))
            );
        }
        let b = build(1.0, 1_000).unwrap();
        assert_eq!((b.ratio(), b.window(), b.reserve()), (1.0, secs(1.0), 10));
        assert!(build(1e-9, 3_600_000).is_ok());
        assert!(InvalidBudget::Ratio(2.0).to_string().contains("got 2"));
    }

    #[test]
    fn debug_does_not_panic() {
        let (b, t) = make(0.1, 1, true);
        b.deposit_at("a", t);
        let builder = RetryBudget::builder();
        let text = format!("{b:?} {builder:?}");
        assert!(text.contains("deposits_in_window: 1"), "{text}");
    }

    /// Naive model: (deposits, grants) among `events` (time in ms, is_deposit)
    /// whose slot of `slot_ms` is one of the last `slots` slots at `now_ms`.
    fn count(events: &[(u64, bool)], slot_ms: u64, now_ms: u64, slots: u64) -> (u128, u128) {
        let recent = events
            .iter()
            .filter(|(t, _)| t / slot_ms + slots > now_ms / slot_ms);
        recent.fold(
            (0, 0),
            |(d, w), &(_, dep)| if dep { (d + 1, w) } else { (d, w + 1) },
        )
    }

    fn any_ratio() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(1.0),
            (1u32..=1000).prop_map(|n| f64::from(n) / 1000.0),
            1e-7f64..1.0,
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn matches_naive_model(
            ratio in any_ratio(),
            window_s in 1u64..=60,
            reserve in 0u32..=50,
            ops in prop::collection::vec((prop_oneof![Just(0), any::<u64>()], any::<bool>()), 0..2000),
        ) {
            let builder = RetryBudget::builder().ratio(ratio).reserve(reserve);
            let base = Instant::now();
            let budget = builder.window(Duration::from_secs(window_s)).build_at(base);
            // Largest n with n/10^6 <= ratio, found by bisection (not scale_ratio).
            let (mut lo, mut hi) = (0u64, crate::gate::ratio::SCALE + 1);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if mid as f64 / 1e6 <= ratio { lo = mid } else { hi = mid }
            }
            let (scale, ratio_scaled, slot_ms) = (whole(1), u128::from(lo), window_s * 100);
            let reserve_scaled = u128::from(reserve) * scale;
            let (mut events, mut now_ms) = (Vec::new(), 0u64);
            for (advance, deposit) in ops {
                now_ms += advance % (window_s * 1000 / 3 + 1);
                let now = base + Duration::from_millis(now_ms);
                let (d, w) = count(&events, slot_ms, now_ms, 10);
                let allowance = ratio_scaled * d + reserve_scaled;
                // Grants made earlier may outlive the deposits that paid for
                // them, so at an arbitrary time the bound needs two windows.
                let (d2, _) = count(&events, slot_ms, now_ms, 19);
                prop_assert!(w * scale <= ratio_scaled * d2 + reserve_scaled);
                prop_assert_eq!(u128::from(budget.available_at(H, now)), (allowance / scale).saturating_sub(w));
                if deposit {
                    budget.deposit_at(H, now);
                    events.push((now_ms, true));
                } else {
                    let granted = budget.try_withdraw_at(H, now);
                    // Exact decision; a grant keeps W <= ratio * D + reserve.
                    prop_assert_eq!(granted, (w + 1) * scale <= allowance);
                    if granted {
                        events.push((now_ms, false));
                    }
                }
            }
        }
    }
}
