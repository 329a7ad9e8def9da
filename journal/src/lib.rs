//! Durable intents for [`reqwest_resilience`]: the idempotency key outlives the
//! process until a terminal result.
//!
//! An intent sent durably is **written ahead** to a journal — key, method, URL, the
//! headers that define it (never credentials), the exact body bytes, its deadline
//! and when the server's key retention ends — before its first byte leaves. If the
//! process dies while the outcome is unknown, another process (or another worker
//! of a fleet) **resumes** it: same key, same body bytes, a fresh request id, a
//! fresh deadline of the stored length, never past the key's retention.
//!
//! # Example
//! ```no_run
//! use std::time::Duration;
//! use reqwest_resilience::ResilientClient;
//! use reqwest_resilience_journal::{DurableExt, Journal, SqliteStore};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // A stable worker name: a restart takes this worker's leases back at once.
//! let journal = Journal::builder(SqliteStore::open("intents.sqlite")?)
//!     .worker_name("payments-1")
//!     .build()?;
//! let client = ResilientClient::new();
//!
//! // At start-up: finish what the previous process left open, with the same key
//! // and body, signing each request again; until nothing is due.
//! let resumer = journal
//!     .resumer(&client)
//!     .resign(|request, _intent| request.bearer_auth("secret"));
//! let report = resumer.drain().await?;
//!
//! // Written ahead before the first byte leaves; the result is recorded at the end.
//! let response = client
//!     .post("http://127.0.0.1:8080/payments")
//!     .bearer_auth("secret") // never journaled
//!     .body(r#"{"amount": 500}"#)
//!     .durable(&journal)
//!     .send()
//!     .await;
//!
//! // In the background: a pass whenever something is due, at most every 30 s.
//! let background = resumer.spawn(Duration::from_secs(30));
//! // … at shutdown:
//! let totals = background.stop().await;
//! # let _ = (response, report, totals);
//! # Ok(()) }
//! ```
//!
//! # Outbox
//!
//! [`Journal::outbox`] decides an intent without sending it; its `enqueue_*`
//! function ([rusqlite](OutboxIntent::enqueue_rusqlite), tokio-postgres and
//! sqlx behind the features `postgres` and `sqlx`, or the driver-neutral
//! [`statement`](OutboxIntent::statement)) writes it `queued` inside *your*
//! transaction, beside the business change: it commits or rolls back with it.
//! A [`Resumer`] is the relay that sends it after commit; see the module docs of
//! [`OutboxIntent`] and the README.
//!
//! Every terminal result then stays [unacknowledged](Journal::unacknowledged)
//! until the application acknowledges it — best inside its own transaction on
//! the journal's database (`acknowledge_rusqlite`, `acknowledge_tokio_postgres`,
//! `acknowledge_sqlx`), applying the result only when that acknowledgement is
//! the first: [`Resumer::on_result`] is the fast path, a catch-up at start-up
//! finds what a crash lost, and the result is applied exactly once.
//!
//! # State machine
//!
//! ```text
//!   outbox enqueue, in the      write-ahead (lease: owner,
//!   caller's transaction        until, fence = 1)
//!           │                           │
//!           ▼                           │
//!        queued                         │
//!           │ relay claim (fence 1)     │
//!           └─────────────┐     ┌───────┘
//!                         ▼     ▼
//!   claim (fence + 1) ┌───────────┐  2xx/3xx ─────────────▶ succeeded
//!  ┌─────────────────▶│ in_flight │  4xx (422 …), known ──▶ failed
//!  │  lease expired ──┤           │  past retention,
//!  │  (worker died)   └───────────┘   too many runs ──────▶ abandoned
//!  │                        │
//!  │                        │ outcome unknown, 409 in progress
//!  │                        ▼
//!  └──── due_at passed ─ unknown ─── abandon by hand ─────▶ abandoned
//! ```
//!
//! * **`queued`** — enqueued by an outbox in the caller's committed transaction
//!   and never sent: due at once for a relay to claim (fence and runs 0 until
//!   then). A rolled-back enqueue leaves no row at all.
//! * **`in_flight`** — owned by one worker under a *lease* (owner and
//!   incarnation, `lease_until`, a fencing counter). A durable send takes the
//!   first lease when it writes the intent ahead; a resume takes one with each
//!   claim. A lease lasts the run's deadline plus a margin (a resume claim: the
//!   resume lease), so nobody else claims an intent that may still be on the
//!   wire; once it expires (the worker died or hangs) the intent is claimable —
//!   and at once by a new incarnation of the same worker name (see
//!   [`Journal`]'s "Restarts").
//! * **`unknown`** — the outcome is not known (a timeout after the request left, a
//!   lost response, a 409 "still in progress"): due again at `due_at`.
//! * **`succeeded`** (status, and the `Location` header as the result locator),
//!   **`failed`** (a definite answer such as 422, or provably not sent) and
//!   **`abandoned`** (the key's retention would have ended, too many runs, or by
//!   hand) are **terminal**: never resumed.
//!
//! Every claim raises the fencing counter, and every write after a claim names the
//! counter it holds: a worker whose lease was taken over gets
//! [`JournalError::LeaseLost`] and its late result is dropped, so it can never
//! overwrite a newer one.
//!
//! # Backends
//! * [`SqliteStore`] (feature `sqlite`, default): one file (owner-only on
//!   Unix), bundled SQLite, WAL, one writer per process, claims in one `BEGIN
//!   IMMEDIATE` transaction, a busy timeout.
//! * [`PostgresStore`](https://docs.rs/reqwest-resilience-journal/latest/reqwest_resilience_journal/struct.PostgresStore.html) (feature `postgres`): a fleet of workers on one table,
//!   claims with `FOR UPDATE SKIP LOCKED`, every timestamp from the database's
//!   clock, a pool of connections, connect and statement timeouts, reconnects
//!   when a connection ends; a write-ahead whose `COMMIT` answer is lost is
//!   resolved by its transaction's status, or reported as outcome unknown.
//! * Your own [`JournalStore`]: prove it with the `conformance` suite (feature
//!   `test-util`), the one both built-in backends pass.
//!
//! Both apply the versioned migrations under `migrations/` when they open, in
//! order, under a lock, recording the version in the `journal_schema_versions`
//! table. A SQLite file may hold your tables too: the journal leaves `PRAGMA
//! user_version` to your own migrations (`rusqlite_migration` uses it).
//!
//! # One rusqlite
//! With `sqlite`, the journal links SQLite through rusqlite `>=0.32, <0.41`
//! (bundled SQLite), and only one crate in a build may link `sqlite3`. Use
//! [`rusqlite`], re-exported here, for the connection you pass
//! to [`OutboxIntent::enqueue_rusqlite`] — or depend on a rusqlite in that same
//! range. `cargo add rusqlite` picks the newest minor (0.43 or later), which
//! cannot link beside it.
//!
//! # What the journal holds — protect it like the data
//! The journal stores request **bodies** and **idempotency keys** verbatim (they
//! must be resent byte for byte). `Authorization`, `Proxy-Authorization`, `Cookie`
//! and the headers you name are never written; the resume hook signs requests
//! again. Still, whoever can read the journal can read what you sent and replay it
//! within the server's key window: give the file or table the protection of the
//! data itself, and prune terminal rows.

#![deny(missing_docs)]
#![warn(missing_debug_implementations, rust_2018_idioms, unreachable_pub)]
#![forbid(unsafe_code)]
// docs.rs builds with `--cfg docsrs`: `doc_cfg` badges every `#[cfg(feature)]` item
// with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Without a backend only your own `JournalStore` is usable; the row helpers idle.
#![cfg_attr(
    not(any(feature = "sqlite", feature = "postgres")),
    allow(dead_code, unused_macros, unused_imports)
)]

/// The PostgreSQL journal's clock, in milliseconds since the Unix epoch: every
/// timestamp it writes, the store's statements and the outbox enqueue's alike.
macro_rules! pg_now_ms {
    () => {
        "(extract(epoch FROM now()) * 1000)::bigint"
    };
}

#[cfg(feature = "unstable-model-rules")]
#[doc(hidden)]
pub mod model_rules;

mod backlog;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod commit_verdict;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod delivery;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod durable;
mod error;
mod headers;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod join;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod journal;
mod listing;
mod migrations;
mod next_run;
mod outbox;
mod record;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod resume;
mod row;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod run_outcome;
mod state;
mod store;
mod unrecorded;
mod wake;
mod worker;

#[cfg(feature = "test-util")]
pub mod conformance;
/// A throwaway PostgreSQL cluster for tests and benchmarks: the storage crate's
/// (`idempotency_storage::throwaway_postgres`), kept at this path.
#[cfg(all(feature = "test-util", feature = "postgres"))]
pub use idempotency_storage::throwaway_postgres;

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_error;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use backlog::Backlog;
pub use durable::{journal_error, DurableExt, DurableOptions};
pub use error::{BoxError, JournalError};
pub use headers::ALWAYS_EXCLUDED;
pub use journal::{Journal, JournalBuilder};
pub use listing::{ListCursor, ListPage};
pub use outbox::{Dialect, OutboxIntent, OutboxStatement, OutboxValue};
pub use record::{Claimed, IntentRecord, Lease, NewIntent, Outcome, DEFAULT_RETENTION};
pub use resume::{ResumeHandle, ResumeReport, ResumeResult, Resumer};
pub use state::{IntentState, UnknownState};
pub use store::{JournalStore, Listening, StoreFuture};
pub use worker::Worker;

/// The README's examples, compiled as doc tests.
#[cfg(all(doctest, feature = "sqlite", feature = "postgres", feature = "sqlx"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(feature = "postgres")]
pub use postgres::{
    PostgresStore, PostgresStoreBuilder, DEFAULT_CONNECT_TIMEOUT, DEFAULT_POOL_SIZE,
    DEFAULT_STATEMENT_TIMEOUT,
};
/// The SQLite driver the journal links (rusqlite `>=0.32, <0.41`, bundled
/// SQLite): use it for your own connection, as one build can link only one
/// `sqlite3` (see [One rusqlite](crate#one-rusqlite)).
#[cfg(feature = "sqlite")]
pub use rusqlite;
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteStore, SqliteStoreBuilder, DEFAULT_BUSY_TIMEOUT};
