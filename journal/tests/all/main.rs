//! The journal's integration tests, in one binary (one PostgreSQL cluster).

mod children;
mod conformance;
mod crash;
mod durable;
#[cfg(feature = "postgres")]
mod fleet;
mod refused;
mod resume;
mod support;
