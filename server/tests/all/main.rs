//! Integration tests: real HTTP on 127.0.0.1, assertions on what the handlers did.

mod concurrency;
mod conformance;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod crash;
mod in_progress;
#[cfg(feature = "postgres")]
mod lost_claim;
#[cfg(feature = "sqlite")]
mod misuse;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod old_schema;
mod policies;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_locks;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod processes;
mod readme;
mod refusal_status;
#[cfg(feature = "sqlite")]
mod replay_load;
mod retention;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_writer;
#[cfg(feature = "sqlite")]
mod stored_headers;
mod support;
#[cfg(feature = "postgres")]
mod throwaway_pg;
