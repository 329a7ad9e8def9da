//! Applies the PostgreSQL migrations under an advisory lock (the storage
//! crate's runner, with the journal's schema).

use tokio_postgres::Client;

use crate::error::JournalError;
use crate::migrations::{POSTGRES, POSTGRES_LOCK};

/// Brings the schema (in the connection's `search_path`) to the latest version
/// in one transaction, so workers starting together apply each step once. A
/// journal already at the latest version needs no DDL privilege: only `SELECT`
/// on `journal_schema_versions`.
pub(super) async fn migrate(client: &mut Client) -> Result<u32, JournalError> {
    idempotency_storage::postgres::migrate(client, &POSTGRES, POSTGRES_LOCK)
        .await
        .map_err(JournalError::schema)
}
