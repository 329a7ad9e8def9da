//! Shared helpers for the journal tests.

pub mod backend;
#[cfg(feature = "postgres")]
pub mod pg;
#[cfg(feature = "postgres")]
pub mod proxy;
pub mod schema;
pub mod server;
pub mod shop;

use reqwest_resilience_journal::SqliteStore;

/// A fresh SQLite journal file. Each test process keeps its files in one
/// directory; directories of processes that are gone are removed on first use.
pub fn sqlite_path(test: &str) -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let tmp = std::env::temp_dir();
        if let Ok(entries) = std::fs::read_dir(&tmp) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(pid) = name.strip_prefix("journal-tests-") else {
                    continue;
                };
                if !std::path::Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let dir = tmp.join(format!("journal-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the SQLite test directory");
        dir
    });
    dir.join(format!(
        "{test}-{}.sqlite",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    ))
}

pub fn sqlite_store(test: &str) -> SqliteStore {
    SqliteStore::open(sqlite_path(test)).expect("open a SQLite journal")
}

/// A PostgreSQL journal in a schema of its own, or `None` (skipped loudly).
#[cfg(feature = "postgres")]
pub async fn postgres_store(test: &str) -> Option<reqwest_resilience_journal::PostgresStore> {
    let conninfo = pg::fresh_schema(test).await?;
    Some(
        reqwest_resilience_journal::PostgresStore::connect(&conninfo)
            .await
            .expect("connect the PostgreSQL journal"),
    )
}

/// Runs each named async test function against both backends: `sqlite::NAME` and
/// `postgres::NAME`. Each function takes a fresh store (`impl JournalStore + Clone`).
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::support::sqlite_store(stringify!($name))).await
                }
            )*
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(store) = $crate::support::postgres_store(stringify!($name)).await
                    else {
                        return;
                    };
                    super::$name(store).await
                }
            )*
        }
    };
}

/// The one allowed skip: PostgreSQL is not available. Loud; a failure under `CI=true`.
pub fn skip_postgres(why: &str) {
    let message = format!(
        "PostgreSQL tests SKIPPED: {why}. Install PostgreSQL \
         (journal/scripts/ensure-postgres.sh) or set DATABASE_URL, and build with \
         --features postgres (or --all-features)."
    );
    if std::env::var("CI").is_ok_and(|ci| ci == "true") {
        panic!("{message} (CI=true: failing instead of skipping)");
    }
    eprintln!("\n!!!!! {message} !!!!!\n");
}

#[cfg(not(feature = "postgres"))]
#[test]
fn postgres_tests_need_the_postgres_feature() {
    skip_postgres("this build has no `postgres` feature");
}
