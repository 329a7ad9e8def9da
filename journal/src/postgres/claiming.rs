//! A claiming statement (a resume claim, a join's take-over) in a transaction of
//! its own, its rows read before `COMMIT`.
//!
//! Autocommitted, a claim whose answer is lost leaves its caller not knowing
//! which leases it took: the rows stay leased to this worker, unsent, until the
//! leases lapse (a resume claim's: five minutes; a take-over's: the deadline plus
//! the lease margin). Read before `COMMIT`, the rows name the leases: when the
//! answer to `COMMIT` is lost, the caller sends none of them and they are ended
//! once the database answers (`unsent.rs`), so the intents are taken at once.

use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::types::ToSql;
use tokio_postgres::Statement;

use super::pool::Pooled;
use super::{claimed, unsent, PostgresStore};
use crate::error::JournalError;
use crate::record::Claimed;
use crate::worker::Worker;

impl PostgresStore {
    /// Runs `statement` (a claim that returns its rows) on `live` with `params`
    /// in a transaction of its own; the leases it took, or the error. A lost
    /// answer to `COMMIT` hands the leases the rows name to `unsent`.
    pub(super) async fn claim_in_transaction(
        &self,
        live: Pooled<'_>,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
        worker: &Worker,
        lease: Duration,
    ) -> Result<Vec<Claimed>, JournalError> {
        let claimed = {
            let begin = live.client.batch_execute("BEGIN");
            let claim = live.client.query(statement, params);
            // Pipelined (the statement is prepared): one round trip for both.
            self.bounded(async { tokio::try_join!(begin, claim) })
                .await
                .and_then(|(_, rows)| {
                    rows.iter()
                        .map(|row| claimed(row, worker))
                        .collect::<Result<Vec<_>, _>>()
                })
        };
        let claimed = match claimed {
            Ok(claimed) => claimed,
            Err(error) => {
                // Mid-transaction: closed, so the server rolls it back.
                live.discard();
                return Err(error);
            }
        };
        match self.bounded(live.client.batch_execute("COMMIT")).await {
            Ok(()) => Ok(claimed),
            Err(error) => {
                live.discard();
                let leases = claimed
                    .iter()
                    .map(|c| (c.lease.key.clone(), c.lease.fence))
                    .collect();
                unsent::end_leases_once_back(Arc::clone(&self.pool), leases, worker, lease);
                Err(error)
            }
        }
    }
}
