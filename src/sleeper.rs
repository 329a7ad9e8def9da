//! How the client pauses between attempts, injectable so tests do not wait.
//!
//! Production uses [`TokioSleeper`] (in the browser and node, `JsTimerSleeper`, on
//! the JavaScript host's `setTimeout`). Tests use [`RecordingSleeper`], which returns at
//! once and remembers every delay it was asked for, so a test can assert "waited at
//! least the Retry-After" against a real HTTP server without sleeping and without
//! `tokio::time::pause()` (which makes reqwest's own timeouts fire at once).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::VirtualClock;

/// A boxed sleep future.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A boxed sleep future. Not `Send` in the browser and node: a JavaScript timer
/// belongs to the one thread that set it, as `fetch`'s futures do.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub type Sleep = Pin<Box<dyn Future<Output = ()>>>;

/// Pauses for a duration.
pub trait Sleeper: Send + Sync + 'static {
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Sleep;
}

/// Sleeps on the tokio timer. Not on wasm32-unknown-unknown, where no tokio timer
/// runs: there the default is `JsTimerSleeper`.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// Sleeps on the JavaScript host's timer (`setTimeout`, through gloo-timers): the
/// default in the browser, in node and in workers (wasm32-unknown-unknown).
///
/// A pause is rounded up to the next millisecond, so it never ends earlier than it
/// was asked to (a `Retry-After` is a lower bound); a pause longer than `setTimeout`
/// can arm at once (2^31 − 1 ms, about 24.8 days) is waited out in turns.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
#[derive(Debug, Clone, Copy, Default)]
pub struct JsTimerSleeper;

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
impl Sleeper for JsTimerSleeper {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(host_timer(duration))
    }
}

/// The longest delay `setTimeout` arms as asked: a longer one fires at once.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
const MAX_TIMER_MILLIS: u128 = i32::MAX as u128;

/// Waits `duration` on the host's timer, in turns of at most [`MAX_TIMER_MILLIS`],
/// until the host's monotonic clock says it is over.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
async fn host_timer(duration: Duration) {
    let until = crate::clock::Instant::now().checked_add(duration);
    let mut left = duration;
    while !left.is_zero() {
        let turn = left.as_nanos().div_ceil(1_000_000).min(MAX_TIMER_MILLIS);
        let millis = u32::try_from(turn).unwrap_or(i32::MAX.unsigned_abs());
        gloo_timers::future::TimeoutFuture::new(millis).await;
        left = match until {
            // A host's timers may keep their loop time in whole milliseconds
            // (node's) and fire a fraction of one early: what is left is read from
            // the monotonic clock (`performance.now()`), and waited out too.
            Some(until) => until.saturating_duration_since(crate::clock::Instant::now()),
            // Beyond what the clock can count: turn by turn.
            None => left.saturating_sub(Duration::from_millis(u64::from(millis))),
        };
    }
}

/// Awaits `work` for at most `limit` on the runtime's own timer (tokio's, or the
/// JavaScript host's): `None` when the time ran out and `work` was dropped.
pub(crate) async fn within<F: Future>(limit: Duration, work: F) -> Option<F::Output> {
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    {
        tokio::time::timeout(limit, work).await.ok()
    }
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    {
        use futures_util::future::{select, Either};
        let work = std::pin::pin!(work);
        let timer = std::pin::pin!(host_timer(limit));
        match select(work, timer).await {
            Either::Left((output, _)) => Some(output),
            Either::Right(((), _)) => None,
        }
    }
}

/// The sleeper a policy uses unless told otherwise: the runtime's own timer.
pub(crate) fn default_sleeper() -> Arc<dyn Sleeper> {
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    let sleeper = Arc::new(TokioSleeper);
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    let sleeper = Arc::new(JsTimerSleeper);
    sleeper
}

/// Returns at once and records every requested delay. Clones share the record.
#[derive(Clone, Default)]
pub struct RecordingSleeper {
    delays: Arc<Mutex<Vec<Duration>>>,
    clock: Option<VirtualClock>,
}

impl RecordingSleeper {
    /// A sleeper with an empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// A sleeper that also moves `clock` forward by every pause, so that (with the
    /// same clock in the policy, [`crate::RetryPolicyBuilder::clock`]) pauses use up
    /// the deadline and the budget window as real ones would, without waiting.
    pub fn advancing(clock: &VirtualClock) -> Self {
        Self {
            delays: Arc::default(),
            clock: Some(clock.clone()),
        }
    }

    /// Every delay requested so far, in order.
    pub fn delays(&self) -> Vec<Duration> {
        self.lock().clone()
    }

    /// The sum of the requested delays.
    pub fn total(&self) -> Duration {
        self.lock().iter().sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Duration>> {
        // A panic elsewhere while holding this lock cannot leave the Vec invalid.
        self.delays
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, duration: Duration) -> Sleep {
        self.lock().push(duration);
        if let Some(clock) = &self.clock {
            clock.advance(duration);
        }
        Box::pin(std::future::ready(()))
    }
}

impl fmt::Debug for RecordingSleeper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordingSleeper")
            .field("delays", &*self.lock())
            .field("advances_a_clock", &self.clock.is_some())
            .finish()
    }
}
