//! End-to-end proof: one effect per intent under faults, and robustness against bad
//! input. Real HTTP on 127.0.0.1 against a reference idempotent server (hyper 1)
//! that stores keys with results (the oracle), the same contract served by
//! `tower-idempotency`'s layer in front of an axum route, plus a raw TCP server for
//! malformed responses.
//!
//! * `dedup` — the server's deduplication, each scenario run against both servers:
//!   lost response after commit, 100 concurrent sends, a timed-out attempt's 409s
//!   waited out, payload mismatch (done and in progress), expired key (the
//!   documented limit of deduplication), key scope;
//! * `scenarios` — the seeds' other cases against the reference server, each with
//!   its expected server state written before sending: generated keys, a slow
//!   response, rollback, missing key, sf-string keys;
//! * `trials` — seeded random fault sequences (`E2E_TRIALS`, `E2E_SEED`);
//! * `cancel` — dropping `send()` during a pause ends the intent;
//! * `redaction` — secrets never reach the logs;
//! * `stress` — 2,000 intents at concurrency 200 with 30 % faults;
//! * `whole_body` — the response body read inside the intent, cut part-way by a
//!   proxy: resent under the key, a keyless POST unknown, too large, 410;
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
mod whole_body;
