//! Where the retry loop reads the time, injectable so tests can make pauses cost
//! time without waiting for it.
//!
//! The deadline and the retry budget are about time spent, including the pauses.
//! A test that records pauses instead of sleeping them ([`RecordingSleeper`]) would
//! otherwise see every pause take no time at all, and could not check that pauses
//! use up the deadline. [`VirtualClock`] is the real clock plus the pauses a
//! [`RecordingSleeper::advancing`] sleeper was asked for: the HTTP exchanges still
//! take real time, the pauses take virtual time, nothing waits.
//!
//! [`RecordingSleeper`]: crate::RecordingSleeper
//! [`RecordingSleeper::advancing`]: crate::RecordingSleeper::advancing

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

// `std::time::Instant::now()` and `SystemTime::now()` panic on wasm32-unknown-unknown:
// there the clock is the JavaScript host's (`performance.now()`, `Date.now()`), through
// web-time's types of the same shape. Elsewhere these are std's own.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use std::time::{Instant, SystemTime};
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use web_time::{Instant, SystemTime};
/// The wall clock's epoch, in [`SystemTime`]'s type.
pub(crate) const UNIX_EPOCH: SystemTime = SystemTime::UNIX_EPOCH;

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// Now, on the monotonic clock (deadlines, pauses, the budget window).
    fn now(&self) -> Instant;

    /// Now, on the wall clock: what an HTTP-date in `Retry-After` is measured
    /// against. Advances with [`now`](Self::now) on a [`VirtualClock`], so a test's
    /// recorded pauses move dates closer too.
    fn wall_now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// The real monotonic clock (`Instant::now`), the default; in the browser and node,
/// `performance.now()`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// The real clock plus an offset that only moves forward when told to. Clones share
/// the offset.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock {
    offset_nanos: Arc<AtomicU64>,
}

impl VirtualClock {
    /// A clock that starts level with the real one.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves this clock (and its clones) forward by `by`.
    pub fn advance(&self, by: Duration) {
        let nanos = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .offset_nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |offset| {
                Some(offset.saturating_add(nanos))
            });
    }

    /// How far ahead of the real clock this one is.
    pub fn offset(&self) -> Duration {
        Duration::from_nanos(self.offset_nanos.load(Ordering::Relaxed))
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Instant {
        let now = Instant::now();
        now.checked_add(self.offset()).unwrap_or(now)
    }

    fn wall_now(&self) -> SystemTime {
        let now = SystemTime::now();
        now.checked_add(self.offset()).unwrap_or(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_clock_runs_ahead_by_what_it_was_advanced() {
        let clock = VirtualClock::new();
        let shared = clock.clone();
        let before = Instant::now();
        shared.advance(Duration::from_secs(5));
        assert_eq!(clock.offset(), Duration::from_secs(5));
        assert!(clock.now() >= before + Duration::from_secs(5));
        let wall = clock
            .wall_now()
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        assert!(
            wall >= Duration::from_secs(4),
            "wall clock advanced: {wall:?}"
        );
        shared.advance(Duration::MAX);
        assert_eq!(clock.offset(), Duration::from_nanos(u64::MAX));
        let _ = clock.now(); // saturates instead of panicking
    }
}
