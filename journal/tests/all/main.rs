//! The journal's integration tests, in one binary (one PostgreSQL cluster).

// Waiting for the core's observer API (merge of main):
// mod children;
// mod crash;
// mod durable;
// mod fleet;
// mod resume;
mod conformance;
#[allow(dead_code)]
mod support;
