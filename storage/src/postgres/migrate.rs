//! Applies a schema's pending steps to PostgreSQL under an advisory lock.

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Transaction};

use super::DriverError;
use crate::error::SchemaError;
use crate::migrations::{Schema, VersionRecord};

/// Brings the schema (in the connection's `search_path`) to `schema`'s latest
/// version in one transaction under `pg_advisory_xact_lock(lock)`, so a fleet
/// starting together applies each step once; `lock` is the store's own
/// constant. A database already at the latest version needs no DDL privilege:
/// only `SELECT` on the versions table. Returns the version the database is at.
///
/// The schema's version must be recorded in a table
/// ([`VersionRecord::Table`]).
///
/// # Errors
/// [`SchemaError::Newer`] for a database migrated by a newer build,
/// [`SchemaError::Step`] when a step fails, [`SchemaError::Refused`] when the
/// role lacks the privilege for the versions table, [`SchemaError::Driver`]
/// (a [`DriverError`]) otherwise. Nothing is committed on an error.
pub async fn migrate(client: &mut Client, schema: &Schema, lock: i64) -> Result<u32, SchemaError> {
    schema.check()?;
    let VersionRecord::Table { name: table, names } = schema.record() else {
        return Err(SchemaError::Driver(
            "a PostgreSQL schema records its version in a table, not user_version".into(),
        ));
    };
    let driver =
        |error: tokio_postgres::Error| SchemaError::Driver(Box::new(DriverError::new(error)));
    let refused = |error: tokio_postgres::Error| {
        if error.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
            SchemaError::Refused {
                table,
                source: Box::new(DriverError::new(error)),
            }
        } else {
            driver(error)
        }
    };
    let tx = client.transaction().await.map_err(driver)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock])
        .await
        .map_err(driver)?;
    let current = current_version(&tx, table, names).await.map_err(refused)?;
    let steps = schema.pending(current)?;
    let record = if names {
        format!("INSERT INTO {table} (version, name) VALUES ($1::INT8, $2)")
    } else {
        format!("INSERT INTO {table} (version) VALUES ($1::INT8)")
    };
    for step in steps {
        tx.batch_execute(step.sql())
            .await
            .map_err(|error| SchemaError::Step {
                name: step.name(),
                source: Box::new(DriverError::new(error)),
            })?;
        let version = i64::from(step.version());
        let outcome = if names {
            tx.execute(&record, &[&version, &step.name()]).await
        } else {
            tx.execute(&record, &[&version]).await
        };
        outcome.map_err(refused)?;
    }
    tx.commit().await.map_err(driver)?;
    Ok(steps.last().map_or(current, |step| step.version()))
}

/// The recorded version, creating the versions table if it is missing (only
/// then is CREATE needed).
async fn current_version(
    tx: &Transaction<'_>,
    table: &str,
    names: bool,
) -> Result<u32, tokio_postgres::Error> {
    let exists: bool = tx
        .query_one(&format!("SELECT to_regclass('{table}') IS NOT NULL"), &[])
        .await?
        .try_get(0)?;
    if !exists {
        let columns = if names {
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, \
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()"
        } else {
            "version BIGINT PRIMARY KEY"
        };
        tx.batch_execute(&format!("CREATE TABLE {table} ({columns})"))
            .await?;
    }
    let current: i64 = tx
        .query_one(
            &format!("SELECT COALESCE(MAX(version), 0)::INT8 FROM {table}"),
            &[],
        )
        .await?
        .try_get(0)?;
    // A version beyond u32 is newer than any build.
    Ok(u32::try_from(current).unwrap_or(u32::MAX))
}
