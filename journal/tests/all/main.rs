//! The journal's integration tests, in one binary (one PostgreSQL cluster).

mod adoption;
mod children;
mod commit_faults;
mod conformance;
mod crash;
#[cfg(feature = "postgres")]
mod crash_restart;
mod delivery;
mod delivery_crash;
mod durable;
mod files;
#[cfg(feature = "postgres")]
mod fleet;
#[cfg(feature = "postgres")]
mod kept_result;
mod migrations;
mod one_file;
mod outbox;
mod outbox_outage;
#[cfg(feature = "postgres")]
mod outbox_postgres;
mod outbox_processes;
mod refused;
mod released_schema;
mod restart;
mod resume;
mod same_key;
mod shared_file;
mod stored_headers;
mod support;
mod timeouts;
#[cfg(feature = "postgres")]
mod unsent_lease;
