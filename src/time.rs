//! Time the policy reads and waits on, injectable for tests.
//!
//! [`Instant`] and [`SystemTime`] are std's own, except on wasm32-unknown-unknown
//! (the browser, node), where std's clock panics and they are web-time's, read from
//! `performance.now()` and `Date.now()`: write a [`Clock`] against these names and
//! it builds on every target.
//!
//! A [`Clock`] says what time it is ([`SystemClock`] by default, [`VirtualClock`]
//! in tests); a [`Sleeper`] waits out each pause ([`TokioSleeper`] by default,
//! [`RecordingSleeper`] in tests: instant, and it records every pause). With a
//! seed ([`RetryPolicyBuilder::rng_seed`](crate::RetryPolicyBuilder::rng_seed)) the
//! retries of a test happen for real over HTTP, in no time, with repeatable delays.

pub use crate::clock::{Clock, Instant, SystemClock, SystemTime, VirtualClock};
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub use crate::sleeper::JsTimerSleeper;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use crate::sleeper::TokioSleeper;
pub use crate::sleeper::{RecordingSleeper, Sleep, Sleeper};
