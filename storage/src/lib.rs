//! Storage plumbing for idempotency stores in SQLite and PostgreSQL, shared by
//! [reqwest-resilience-journal] (the client's durable intents) and
//! [tower-idempotency] (the server's keys), so that both open, lock, migrate
//! and reconnect the same way.
//!
//! * `sqlite` (feature `sqlite`): a database file created owner-only (0600,
//!   with its `-wal` and `-shm`, for plain paths and `file:` URIs), a warning
//!   naming each existing file open to others; WAL switched on while other
//!   processes open the same file; `sqlite::is_busy`; a structure check.
//! * `postgres` (feature `postgres`): the server's message on a driver
//!   error's top line; a bounded pool whose connections come back after a
//!   server restart, with a reconnect backoff.
//! * [`Schema`]: versioned migrations, one runner per backend — applied in one
//!   transaction under a lock (SQLite's write lock, a PostgreSQL advisory
//!   lock), each version recorded in the store's own table (or SQLite's
//!   `user_version`, for a file the store owns alone), and a database migrated
//!   by a newer build refused; `sqlite::migrate_adopting` moves a store off
//!   `user_version`, adopting the files its older builds made.
//! * [`headers`]: the one form both stores write headers in, and a reader of
//!   every form either ever wrote.
//! * [`millis`]: times and durations as `i64` milliseconds, saturating.
//! * [`limit`]: a store's waits for one caller end a little before that
//!   caller's deadline, so the store's own error (naming what it waited for)
//!   reaches the caller.
//! * `throwaway_postgres` (feature `test-util`): a PostgreSQL cluster on
//!   127.0.0.1 for tests and benchmarks.
//!
//! The crate depends on no HTTP client or server: a store brings its own
//! tables, queries and error type, which wraps this crate's [`FileError`] and
//! [`SchemaError`].
//!
//! [reqwest-resilience-journal]: https://docs.rs/reqwest-resilience-journal
//! [tower-idempotency]: https://docs.rs/tower-idempotency

#![deny(missing_docs)]
#![warn(missing_debug_implementations, rust_2018_idioms, unreachable_pub)]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
pub mod headers;
pub mod limit;
mod migrations;
pub mod millis;

#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub mod postgres;
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub mod sqlite;
#[cfg(feature = "test-util")]
#[cfg_attr(docsrs, doc(cfg(feature = "test-util")))]
pub mod throwaway_postgres;

pub use error::{BoxError, FileError, SchemaError};
pub use migrations::{Migration, Schema, VersionRecord};
