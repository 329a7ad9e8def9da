//! PostgreSQL for the tests: `DATABASE_URL` if set, else a throwaway cluster
//! started from the PostgreSQL binaries on this machine (one per test process,
//! stopped by a watchdog when the process exits; the journal's
//! `throwaway_postgres`), else a loud skip — and under `CI=true` a failure
//! instead.

use std::sync::OnceLock;

use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};

static BASE: OnceLock<Option<String>> = OnceLock::new();

/// A connection string for a fresh schema of its own, or `None` when PostgreSQL
/// is not available here (after one loud line; a panic under `CI=true`).
pub async fn fresh_schema(test: &str) -> Option<String> {
    let base = tokio::task::spawn_blocking(|| BASE.get_or_init(find_or_start).clone())
        .await
        .expect("starting PostgreSQL panicked")?;
    let schema = format!(
        "t_{}_{}",
        test.chars()
            .filter(char::is_ascii_alphanumeric)
            .take(30)
            .collect::<String>(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let (client, connection) = tokio_postgres::connect(&base, tokio_postgres::NoTls)
        .await
        .expect("connect to the test PostgreSQL");
    let task = tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .expect("create a test schema");
    drop(client);
    let _ = task.await;
    Some(with_search_path(&base, &schema))
}

fn with_search_path(base: &str, schema: &str) -> String {
    if base.starts_with("postgres://") || base.starts_with("postgresql://") {
        let separator = if base.contains('?') { '&' } else { '?' };
        format!("{base}{separator}options=-csearch_path%3D{schema}")
    } else {
        format!("{base} options='-csearch_path={schema}'")
    }
}

fn find_or_start() -> Option<String> {
    if let Ok(url) = std::env::var("DATABASE_URL") {
        return Some(url);
    }
    // The shared cluster lives as long as this process (its watchdog stops it).
    Some(own_cluster()?.conninfo().to_owned())
}

/// A throwaway cluster of the caller's own (one that a test may stop and start
/// again), or `None` without the PostgreSQL binaries (after one loud line).
pub fn own_cluster() -> Option<ThrowawayPostgres> {
    match ThrowawayPostgres::start(Durability::Off) {
        Ok(Some(cluster)) => Some(cluster),
        Ok(None) => {
            super::skip_postgres("no DATABASE_URL and no initdb/pg_ctl found");
            None
        }
        Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
    }
}
