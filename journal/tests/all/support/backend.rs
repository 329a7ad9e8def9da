//! A journal backend a test (or a child process it starts) can open by name.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use reqwest_resilience::{RecordingSleeper, ResilientClient, RetryPolicy};
use reqwest_resilience_journal::{Journal, JournalBuilder, SqliteStore};

/// Which environment variable tells a child process its role.
pub const CHILD_ROLE: &str = "JOURNAL_TEST_CHILD_ROLE";
const CHILD_BACKEND: &str = "JOURNAL_TEST_BACKEND";

#[derive(Debug, Clone)]
pub enum Backend {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Backend {
    pub fn sqlite(test: &str) -> Backend {
        Backend::Sqlite(super::sqlite_path(test))
    }

    #[cfg(feature = "postgres")]
    pub async fn postgres(test: &str) -> Option<Backend> {
        Some(Backend::Postgres(super::pg::fresh_schema(test).await?))
    }

    fn spec(&self) -> String {
        match self {
            Backend::Sqlite(path) => format!("sqlite:{}", path.display()),
            Backend::Postgres(conninfo) => format!("postgres:{conninfo}"),
        }
    }

    /// The backend a parent test handed to this child process.
    pub fn from_env() -> Backend {
        let spec = std::env::var(CHILD_BACKEND).expect("backend for the child");
        if let Some(path) = spec.strip_prefix("sqlite:") {
            Backend::Sqlite(path.into())
        } else {
            Backend::Postgres(
                spec.strip_prefix("postgres:")
                    .expect("a backend")
                    .to_owned(),
            )
        }
    }

    /// Opens the journal, with test settings applied by `configure`.
    pub async fn journal(
        &self,
        configure: impl FnOnce(JournalBuilder) -> JournalBuilder,
    ) -> Journal {
        let builder = match self {
            Backend::Sqlite(path) => {
                Journal::builder(SqliteStore::open(path).expect("open SQLite"))
            }
            #[cfg(not(feature = "postgres"))]
            Backend::Postgres(_) => unreachable!("built without the postgres feature"),
            #[cfg(feature = "postgres")]
            Backend::Postgres(conninfo) => Journal::builder(
                reqwest_resilience_journal::PostgresStore::connect(conninfo)
                    .await
                    .expect("connect PostgreSQL"),
            ),
        };
        configure(builder).build().expect("journal settings")
    }

    /// Starts this test binary again as a child process in `role`.
    pub fn spawn_child(&self, role: &str, env: &[(&str, &str)]) -> tokio::process::Child {
        let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "children::child_entry",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ROLE, role)
            .env(CHILD_BACKEND, self.spec())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        for (name, value) in env {
            command.env(name, value);
        }
        command.spawn().expect("start a child process")
    }
}

/// A client that retries quickly (no real pauses) with its own generous budget.
pub fn client(max_attempts: u32) -> ResilientClient {
    ResilientClient::with_policy(
        RetryPolicy::builder()
            .max_attempts(max_attempts)
            .sleeper(RecordingSleeper::new())
            .rng_seed(7)
            .deadline(Duration::from_secs(10))
            .no_budget()
            .build()
            .expect("policy"),
    )
}

/// Runs each named async test function against both backends, passing a fresh
/// [`Backend`]: `sqlite::NAME` and `postgres::NAME`.
#[macro_export]
macro_rules! e2e_on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::support::backend::Backend::sqlite(stringify!($name))).await
                }
            )*
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let Some(backend) =
                        $crate::support::backend::Backend::postgres(stringify!($name)).await
                    else {
                        return;
                    };
                    super::$name(backend).await
                }
            )*
        }
    };
}
