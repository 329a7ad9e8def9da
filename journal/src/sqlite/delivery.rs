//! The SQLite store's side of delivery (see `crate::delivery`): the
//! unacknowledged page, and the acknowledgement on the store's own connection.

use rusqlite::params;

use super::{raw_row, SqliteStore};
use crate::error::JournalError;
use crate::record::IntentRecord;
use crate::row::sql_limit;
use crate::store::StoreFuture;

impl SqliteStore {
    pub(super) fn unacknowledged_page(
        &self,
        limit: usize,
    ) -> StoreFuture<'static, Vec<IntentRecord>> {
        self.run(move |conn, _| {
            let mut statement = conn
                .prepare_cached(crate::delivery::rusqlite::UNACKNOWLEDGED)
                .map_err(JournalError::storage)?;
            let rows = statement
                .query_map(params![sql_limit(limit)], raw_row)
                .map_err(JournalError::storage)?;
            rows.map(|row| row.map_err(JournalError::storage)?.into_record())
                .collect()
        })
    }

    pub(super) fn acknowledge_now(&self, key: &str) -> StoreFuture<'static, bool> {
        let key = key.to_owned();
        self.run(move |conn, now| crate::delivery::rusqlite::acknowledge(conn, &key, now))
    }
}
