//! The strong mode on SQLite: the claim, the effect's writes and the stored response in
//! one transaction on the writer.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Transaction, TransactionBehavior};

use super::{queries, SqliteStore};
use crate::clock::Clock;
use crate::record::{Completion, StoredResponse};
use crate::store::{Claim, ClaimRequest, StoreError, Transacted};

impl SqliteStore {
    /// The strong mode: claims `request.scope` and, if it was free, runs `effect`
    /// inside the same transaction, storing the response it returns with its writes.
    ///
    /// Either the claim, the effect's writes and the response commit together, or
    /// (the process dies, `effect` returns `Err`) none of them do and the next request
    /// with the key executes. A key with an unexpired record is answered from the
    /// reader without waiting for the writer; a free key waits for the writer at most
    /// [`SqliteStore::writer_wait`]. Once `effect` started it runs to its end and
    /// commits even if this future is dropped (it runs on a blocking thread), so a
    /// retry then replays. The response is kept until `retention` after the effect
    /// finished, read from `clock` just before the commit (as the layer counts it).
    ///
    /// # Errors
    ///
    /// The writer stayed busy past [`SqliteStore::writer_wait`] (nothing ran), or the
    /// database could not be written (the transaction rolled back).
    pub async fn transact<E, F>(
        &self,
        request: ClaimRequest,
        retention: Duration,
        clock: Arc<dyn Clock>,
        effect: F,
    ) -> Result<Transacted<E>, StoreError>
    where
        E: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> Result<StoredResponse, E> + Send + 'static,
    {
        if let Some(existing) = self.reader.existing(&request).await {
            return Ok(Transacted::Existing(existing));
        }
        let work = move |conn: &mut rusqlite::Connection| -> rusqlite::Result<Transacted<E>> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let token = match queries::claim(&tx, &request)? {
                Claim::Acquired { token, .. } => token,
                Claim::Existing(existing) => return Ok(Transacted::Existing(existing)),
            };
            let response = match effect(&tx) {
                Ok(response) => response,
                // Dropping the transaction rolls back the claim and the effect's writes.
                Err(rollback) => return Ok(Transacted::RolledBack(rollback)),
            };
            let done = Completion::Stored(response.clone());
            // Counted from the finish: a slow effect keeps its response the full retention.
            queries::complete(&tx, &token, &done, clock.now() + retention)?;
            tx.commit()?;
            Ok(Transacted::Executed(response))
        };
        self.writer
            .run("run the transaction", self.bounded(), work)
            .await
    }

    /// Runs `effect` in one transaction without a key (a route whose key is optional
    /// and absent): committed when it returns `Ok`.
    pub(crate) async fn transact_unkeyed<E, F>(
        &self,
        effect: F,
    ) -> Result<Result<StoredResponse, E>, StoreError>
    where
        E: Send + 'static,
        F: FnOnce(&Transaction<'_>) -> Result<StoredResponse, E> + Send + 'static,
    {
        let work = move |conn: &mut rusqlite::Connection| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = effect(&tx);
            if out.is_ok() {
                tx.commit()?;
            }
            Ok(out)
        };
        self.writer
            .run("run the transaction", self.bounded(), work)
            .await
    }
}
