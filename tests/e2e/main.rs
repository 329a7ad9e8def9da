//! End-to-end proof: one effect per intent under faults, and robustness against bad
//! input. Real HTTP on 127.0.0.1 against a reference idempotent server (hyper 1)
//! that stores keys with results, plus a raw TCP server for malformed responses.
//!
//! * `scenarios` — the seeds' cases, each with its expected server state written
//!   before sending: lost response, concurrent duplicates, payload mismatch,
//!   rollback, expired key (the documented limit of deduplication);
//! * `dedup` — the scenarios about deduplication itself (lost response, concurrent
//!   duplicates, payload mismatch, expired key) run against the reference server
//!   and against `tower-idempotency`'s layer, each asserting on the server's state;
//! * `trials` — seeded random fault sequences (`E2E_TRIALS`, `E2E_SEED`);
//! * `cancel` — dropping `send()` during a pause ends the intent;
//! * `redaction` — secrets never reach the logs;
//! * `stress` — 2,000 intents at concurrency 200 with 30 % faults;
//! * `fuzz`, `bad_input` — property tests of the public parsers and keys, and
//!   absurd `Retry-After` values and keys over real HTTP.

#[path = "../shared/log_capture.rs"]
mod log_capture;
#[path = "../shared/raw_http.rs"]
mod raw_http;
mod support;

mod bad_input;
mod cancel;
mod dedup;
mod fuzz;
mod redaction;
mod scenarios;
mod stress;
mod trials;
