//! PostgreSQL plumbing (feature `postgres`): driver errors that say what the
//! server said, a bounded pool whose connections come back after the server
//! restarts, durable commits whatever the server's tuning, versioned
//! migrations under an advisory lock, and a write kept trying while the
//! database is away.

mod driver;
mod durable;
pub mod keep_trying;
mod migrate;
mod pool;

pub use driver::{message, DriverError};
pub use durable::DURABLE_COMMITS;
pub use migrate::migrate;
pub use pool::{Connect, Pool, PoolError, Pooled};
