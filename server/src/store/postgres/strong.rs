//! The strong mode on PostgreSQL: the claim, the effect's writes and the stored
//! response in one transaction on a pooled connection.
//!
//! A duplicate of a key in flight meets the holder's uncommitted row: its upsert
//! would wait for the holder's commit, holding one of the pool's few connections the
//! whole time, so a burst of retries of one slow key could starve every other key. The
//! claim therefore waits for a row lock only briefly; past that the key is reported in
//! progress (409) and the connection goes back to the pool.

use std::time::Duration;

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Transaction};

use super::generation;
use super::queries::{claim_in, complete_in};
use super::{EffectFuture, PostgresStore};
use crate::clock::Clock;
use crate::record::{Completion, Existing, ExistingState};
use crate::store::{Claim, ClaimRequest, Transacted};

impl PostgresStore {
    /// How long a strong-mode claim waits for another transaction's lock on its key
    /// (a duplicate of a key in flight) before answering "in progress". Short: an
    /// uncontended claim takes no row lock wait at all, and a duplicate only learns
    /// to retry later.
    pub const CLAIM_LOCK_TIMEOUT: Duration = Duration::from_millis(200);
}

pub(super) async fn transact_on<E, F>(
    client: &mut Client,
    request: &ClaimRequest,
    retention: Duration,
    clock: &dyn Clock,
    effect: F,
) -> Result<Transacted<E>, tokio_postgres::Error>
where
    F: for<'t> FnOnce(&'t Transaction<'t>) -> EffectFuture<'t, E>,
{
    let tx = client.transaction().await?;
    // For the claim only: SET LOCAL ends with the transaction.
    tx.batch_execute(&format!(
        "SET LOCAL lock_timeout = '{}ms'",
        PostgresStore::CLAIM_LOCK_TIMEOUT.as_millis()
    ))
    .await?;
    // Inside the transaction a lost answer leaves nothing behind: no need to
    // know the generation beforehand, but one rule for both modes.
    let token = match claim_in(&tx, request, generation::fresh()).await {
        Ok(Claim::Acquired { token, .. }) => token,
        Ok(Claim::Existing(existing)) => {
            tx.rollback().await?;
            return Ok(Transacted::Existing(existing));
        }
        Err(error) if error.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
            tx.rollback().await?;
            return Ok(Transacted::Existing(in_flight(request)));
        }
        Err(error) => return Err(error),
    };
    // The effect keeps the session's own lock behaviour.
    tx.batch_execute("SET LOCAL lock_timeout TO DEFAULT")
        .await?;
    let response = match effect(&tx).await {
        Ok(response) => response,
        Err(rollback) => {
            tx.rollback().await?;
            return Ok(Transacted::RolledBack(rollback));
        }
    };
    let done = Completion::Stored(response.clone());
    // Counted from the finish: a slow effect keeps its response the full retention.
    complete_in(&tx, &token, &done, clock.now() + retention).await?;
    tx.commit().await?;
    Ok(Transacted::Executed(response))
}

/// A key whose holder has not committed: in progress, since when unknown.
fn in_flight(request: &ClaimRequest) -> Existing {
    Existing {
        // The request's own: the holder's row is not readable until it commits, so a
        // reused key with another payload is caught (422) on the retry, not here.
        fingerprint: request.fingerprint.clone(),
        state: ExistingState::Uncommitted,
    }
}
