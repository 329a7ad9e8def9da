//! How the client pauses between attempts, injectable so tests do not wait.
//!
//! Production uses [`TokioSleeper`]. Tests use [`RecordingSleeper`], which returns at
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
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Pauses for a duration.
pub trait Sleeper: Send + Sync + 'static {
    /// A future that completes after `duration`.
    fn sleep(&self, duration: Duration) -> Sleep;
}

/// Sleeps on the tokio timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(tokio::time::sleep(duration))
    }
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
