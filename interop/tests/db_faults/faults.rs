//! The database and what is done to it: a throwaway PostgreSQL cluster tuned
//! `synchronous_commit = off` (the stores must commit durably all the same),
//! and the faults, each of which ends when the database accepts connections
//! again.

use std::sync::Arc;
use std::time::Duration;

use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};
use tokio::time::Instant;
use tokio_postgres::{Client, NoTls};

/// One fault of the suite.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Every client backend terminated every `every`, for `for_`.
    Terminate { every: Duration, for_: Duration },
    /// The database stopped (fast shutdown) for `for_`, then started.
    Stop { for_: Duration },
    /// `pg_ctl stop -m immediate`, then started at once (a crash restart).
    Crash,
    /// 64 concurrent intents on a pool of 8 whose `statement_timeout` is
    /// shorter than the lock another session holds on the journal's table.
    PoolExhaustion,
    /// A `REPEATABLE READ` transaction that read the journal's table holds
    /// the MVCC horizon for `for_` (vacuum can remove no dead row meanwhile).
    Horizon { for_: Duration },
}

/// The journal table's dead and live rows (as the statistics collector last
/// counted them) at the end of a pinned horizon.
#[derive(Debug, Clone, Copy)]
pub struct HorizonFigures {
    pub dead_tuples: i64,
    pub live_tuples: i64,
}

impl Fault {
    pub fn name(&self) -> &'static str {
        match self {
            Fault::Terminate { .. } => "terminate_backends",
            Fault::Stop { .. } => "stop_and_start",
            Fault::Crash => "crash_restart",
            Fault::PoolExhaustion => "pool_exhaustion_statement_timeout",
            Fault::Horizon { .. } => "horizon_pinned",
        }
    }

    /// Whether the database went away (recovery is then measured from its
    /// return).
    pub fn takes_the_database_away(&self) -> bool {
        matches!(self, Fault::Stop { .. } | Fault::Crash)
    }
}

/// How long the pool-exhaustion scenario's lock is held.
pub const LOCK_HELD: Duration = Duration::from_secs(2);

#[derive(Clone)]
pub struct Cluster {
    inner: Arc<ThrowawayPostgres>,
}

impl Cluster {
    /// A cluster with production durability except `synchronous_commit = off`,
    /// or `None` without PostgreSQL (loud; a failure under `CI=true`).
    pub fn start() -> Option<Cluster> {
        let settings = ["synchronous_commit=off", "max_connections=100"];
        match ThrowawayPostgres::start_with(Durability::Defaults, &settings) {
            Ok(Some(cluster)) => Some(Cluster {
                inner: Arc::new(cluster),
            }),
            Ok(None) => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "CI=true needs PostgreSQL: run journal/scripts/ensure-postgres.sh"
                );
                eprintln!("SKIPPED: no PostgreSQL binaries (journal/scripts/ensure-postgres.sh)");
                None
            }
            Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
        }
    }

    pub fn conninfo(&self) -> &str {
        self.inner.conninfo()
    }

    /// A connection of the test's own (not one of the pools').
    pub async fn admin(&self) -> Client {
        let (client, connection) = tokio_postgres::connect(self.conninfo(), NoTls)
            .await
            .expect("the test's own connection");
        tokio::spawn(connection);
        client
    }

    /// Applies `fault` and returns when the database accepts connections again.
    pub async fn apply(&self, fault: &Fault) -> Instant {
        match fault {
            Fault::Terminate { every, for_ } => {
                let admin = self.admin().await;
                let end = Instant::now() + *for_;
                while Instant::now() < end {
                    admin
                        .execute(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                             WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
                            &[],
                        )
                        .await
                        .expect("terminate the backends");
                    tokio::time::sleep(*every).await;
                }
                Instant::now()
            }
            Fault::Stop { for_ } => {
                self.blocking(|c| c.stop()).await;
                tokio::time::sleep(*for_).await;
                self.blocking(|c| c.restart()).await;
                self.accepting().await
            }
            Fault::Crash => {
                self.blocking(|c| c.stop_immediate()).await;
                self.blocking(|c| c.restart()).await;
                self.accepting().await
            }
            Fault::PoolExhaustion => {
                // The fleet is not what this fault is about: its own journal
                // (`fleet::pool_exhaustion`) is; the lock below is held while
                // that runs.
                Instant::now()
            }
            Fault::Horizon { for_ } => {
                let admin = self.admin().await;
                admin
                    .batch_execute(
                        "BEGIN ISOLATION LEVEL REPEATABLE READ; \
                         SELECT count(*) FROM journal_intents",
                    )
                    .await
                    .expect("pin the horizon");
                tokio::time::sleep(*for_).await;
                let figures = self.horizon_figures().await;
                println!(
                    "DB_FAULT_HORIZON dead_tuples={} live_tuples={} after {for_:?}",
                    figures.dead_tuples, figures.live_tuples
                );
                admin
                    .batch_execute("COMMIT")
                    .await
                    .expect("release the horizon");
                Instant::now()
            }
        }
    }

    /// Stops the database (fast shutdown).
    pub async fn stop(&self) {
        self.blocking(|c| c.stop()).await;
    }

    /// Starts the database again; returns when it accepts connections.
    pub async fn start_again(&self) -> Instant {
        self.blocking(|c| c.restart()).await;
        self.accepting().await
    }

    /// The journal table's dead and live rows as the statistics collector
    /// last counted them.
    pub async fn horizon_figures(&self) -> HorizonFigures {
        let admin = self.admin().await;
        let row = admin
            .query_one(
                "SELECT coalesce(n_dead_tup, 0), coalesce(n_live_tup, 0) \
                 FROM pg_stat_user_tables WHERE relname = 'journal_intents'",
                &[],
            )
            .await
            .expect("the journal table's statistics");
        HorizonFigures {
            dead_tuples: row.get(0),
            live_tuples: row.get(1),
        }
    }

    async fn blocking(
        &self,
        step: impl FnOnce(&ThrowawayPostgres) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
            + Send
            + 'static,
    ) {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || step(&inner))
            .await
            .expect("the cluster step panicked")
            .expect("the cluster step failed");
    }

    /// When a new connection first succeeds (bounded: 60 s).
    pub async fn accepting(&self) -> Instant {
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            if tokio_postgres::connect(self.conninfo(), NoTls)
                .await
                .is_ok()
            {
                return Instant::now();
            }
            assert!(Instant::now() < end, "the database did not come back");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
