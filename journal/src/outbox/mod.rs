//! The transactional outbox: an intent written in the caller's own database
//! transaction, beside the business change, and sent by a relay after commit.
//!
//! A durable send writes its intent ahead on the journal's own connection just
//! before the first byte, which leaves the dual write open: the order commits
//! and the process dies before `send()`, or the request leaves and the order's
//! transaction rolls back. An outbox enqueue closes it: the intent's row
//! (`queued`) is one more `INSERT` in the business transaction, so it commits
//! or rolls back with the order. A rolled-back enqueue leaves no row, so no
//! relay can ever claim it.
//!
//! After commit, a relay — the journal's [`Resumer`](crate::Resumer), in this
//! process or another — claims the intent like every other due one (a lease,
//! the fencing counter, the client's retries, budget and gates), sends it with
//! its one key and exact body, re-signed by the resume hook, and records the
//! same terminal states. [`Journal::wake_relays`] after the commit makes that
//! prompt; the relay's poll interval bounds it when nobody calls it (a crash
//! between commit and wake-up).
//!
//! The journal's table must be in the database the transaction writes to:
//! SQLite, the journal's own file (open the [`SqliteStore`](crate::SqliteStore)
//! first: it creates the table); PostgreSQL, the database and `search_path`
//! of the [`PostgresStore`](https://docs.rs/reqwest-resilience-journal/latest/reqwest_resilience_journal/struct.PostgresStore.html).

mod statement;

#[cfg(feature = "sqlite")]
mod rusqlite;
#[cfg(feature = "sqlx")]
mod sqlx;
#[cfg(feature = "postgres")]
mod tokio_postgres;

pub use statement::{Dialect, OutboxStatement, OutboxValue};

use reqwest_resilience::RequestBuilder;

use crate::durable::{new_intent, DurableOptions};
use crate::error::JournalError;
use crate::journal::Journal;
use crate::record::NewIntent;

/// An intent decided for an outbox: its key (the caller's, or generated now),
/// method, URL, the headers that define it (never credentials), its exact body
/// bytes, deadline and key retention — the record a durable send writes ahead.
/// Made by [`Journal::outbox`]; enqueue it inside your transaction with the
/// function for your driver, or run its [`statement`](Self::statement).
#[derive(Debug, Clone)]
pub struct OutboxIntent {
    intent: NewIntent,
}

impl Journal {
    /// Decides `request` for an outbox, with the journal's key retention:
    /// nothing is written or sent. The key is decided as
    /// [`send`](RequestBuilder::send) would (a POST gets a generated one); keep
    /// [`key`](OutboxIntent::key) to follow the intent.
    ///
    /// # Errors
    /// [`JournalError::InvalidRequest`] when `send()` would refuse the request
    /// before sending it (an invalid URL, key or policy);
    /// [`JournalError::BodyNotInMemory`] for a streamed body;
    /// [`JournalError::KeyRequired`] for a POST or PATCH sent without a key.
    pub fn outbox(&self, request: RequestBuilder) -> Result<OutboxIntent, JournalError> {
        self.outbox_with(request, DurableOptions::default())
    }

    /// [`outbox`](Self::outbox) with per-intent settings.
    ///
    /// # Errors
    /// As [`outbox`](Self::outbox).
    pub fn outbox_with(
        &self,
        request: RequestBuilder,
        options: DurableOptions,
    ) -> Result<OutboxIntent, JournalError> {
        let prepared = request
            .prepare()
            .map_err(|error| JournalError::InvalidRequest(Box::new(error)))?;
        let retention = options.retention_or(self.settings().retention);
        let intent = new_intent(self, retention, &prepared.start())?;
        Ok(OutboxIntent { intent })
    }
}

impl OutboxIntent {
    /// The intent's id: its idempotency key (or, for an idempotent method sent
    /// without one, the journal's local id). Look it up with
    /// [`Journal::get`] to follow it.
    pub fn key(&self) -> &str {
        &self.intent.key
    }

    /// The record that will be enqueued.
    pub fn record(&self) -> &NewIntent {
        &self.intent
    }

    /// The enqueue as one statement and its parameters, for a driver without a
    /// function here.
    pub fn statement(&self, dialect: Dialect) -> OutboxStatement {
        statement::statement(&self.intent, dialect)
    }

    /// Turns the number of rows the enqueue inserted into its result.
    fn inserted(&self, rows: u64) -> Result<&str, JournalError> {
        match rows {
            0 => Err(JournalError::duplicate_key(&self.intent.key)),
            _ => Ok(self.key()),
        }
    }
}
