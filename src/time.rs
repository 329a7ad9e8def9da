//! Time the policy reads and waits on, injectable for tests.
//!
//! A [`Clock`] says what time it is ([`SystemClock`] by default, [`VirtualClock`]
//! in tests); a [`Sleeper`] waits out each pause ([`TokioSleeper`] by default,
//! [`RecordingSleeper`] in tests: instant, and it records every pause). With a
//! seed ([`RetryPolicyBuilder::rng_seed`](crate::RetryPolicyBuilder::rng_seed)) the
//! retries of a test happen for real over HTTP, in no time, with repeatable delays.

pub use crate::clock::{Clock, SystemClock, VirtualClock};
pub use crate::sleeper::{RecordingSleeper, Sleep, Sleeper, TokioSleeper};
