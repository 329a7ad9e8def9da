//! Applies the PostgreSQL migrations under an advisory lock.

use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

use super::driver::{driver, message};
use crate::error::JournalError;
use crate::migrations::{pending, POSTGRES};

/// Serialises migrations from several workers (an arbitrary constant).
const MIGRATION_LOCK: i64 = 0x7265_7177_6a6e_6c01;

const VERSIONS_EXIST: &str = "SELECT to_regclass('journal_schema_versions') IS NOT NULL";
const CREATE_VERSIONS: &str = "
    CREATE TABLE journal_schema_versions (
        version    INTEGER PRIMARY KEY,
        name       TEXT NOT NULL,
        applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )";
const CURRENT_VERSION: &str = "SELECT COALESCE(MAX(version), 0) FROM journal_schema_versions";
const RECORD_VERSION: &str = "INSERT INTO journal_schema_versions (version, name) VALUES ($1, $2)";

/// Brings the schema (in the connection's `search_path`) to the latest version in
/// one transaction under `pg_advisory_xact_lock`, so workers starting together
/// apply each step once. A journal already at the latest version needs no DDL
/// privilege: only `SELECT` on `journal_schema_versions`.
pub(super) async fn migrate(client: &mut Client) -> Result<u32, JournalError> {
    let tx = client.transaction().await.map_err(driver)?;
    let refused = |error: tokio_postgres::Error| {
        if error.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
            JournalError::Schema(format!(
                "the migration was refused (this role needs CREATE on the schema once, then \
                 SELECT on journal_schema_versions): {}",
                message(&error)
            ))
        } else {
            driver(error)
        }
    };
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(driver)?;
    let exists: bool = tx
        .query_one(VERSIONS_EXIST, &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(refused)?;
    if !exists {
        tx.batch_execute(CREATE_VERSIONS).await.map_err(refused)?;
    }
    let current: i32 = tx
        .query_one(CURRENT_VERSION, &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(refused)?;
    let steps = pending(POSTGRES, u32::try_from(current).unwrap_or(0))?;
    for step in steps {
        tx.batch_execute(step.sql)
            .await
            .map_err(|error| JournalError::Schema(format!("{}: {}", step.name, message(&error))))?;
        let version = i32::try_from(step.version).unwrap_or(i32::MAX);
        tx.execute(RECORD_VERSION, &[&version, &step.name])
            .await
            .map_err(refused)?;
    }
    tx.commit().await.map_err(driver)?;
    Ok(steps
        .last()
        .map_or(u32::try_from(current).unwrap_or(0), |step| step.version))
}
