//! The PostgreSQL store's side of delivery (see `crate::delivery`): the
//! unacknowledged page, and the acknowledgement on the store's own connection
//! (the statement the application runs in its transaction, prepared).

use super::{records, PostgresStore};
use crate::delivery::{settle_stored, TERMINAL};
use crate::error::JournalError;
use crate::postgres_error::driver;
use crate::record::IntentRecord;
use crate::row::sql_limit;

impl PostgresStore {
    pub(super) async fn unacknowledged_page(
        &self,
        limit: usize,
    ) -> Result<Vec<IntentRecord>, JournalError> {
        let live = self.pool.get().await?;
        let rows = self
            .bounded(
                live.client
                    .query(&live.statements.unacknowledged, &[&sql_limit(limit)]),
            )
            .await?;
        records(&rows)
    }

    pub(super) async fn acknowledge_now(&self, key: &str) -> Result<bool, JournalError> {
        let [succeeded, failed, abandoned] = TERMINAL.map(|state| state.as_str());
        let live = self.pool.get().await?;
        let row = self
            .bounded(live.client.query_one(
                &live.statements.acknowledge,
                &[&key, &succeeded, &failed, &abandoned],
            ))
            .await?;
        let state: Option<&str> = row.try_get("state").map_err(driver)?;
        let first: bool = row.try_get("first").map_err(driver)?;
        settle_stored(key, first, state)
    }
}
