//! Ambiguity is unknown, never refused: a write-ahead whose commit outcome is
//! not known is reported as outcome unknown (with its key), and an intent the
//! caller was told was refused never reaches the server later.
//!
//! Faults: on PostgreSQL a commit waiting for a synchronous standby that never
//! answers (past the store's timeout), a connection cut between `COMMIT` and its
//! answer (or instead of the `COMMIT`), the server stopped mid-commit; on SQLite a
//! write lock held past the busy timeout (and one released before it), and a
//! `kill -9` of a process committing write-aheads. Each runs
//! `COMMIT_FAULT_ROUNDS` times (default 2; `journal/scripts/commit-faults.sh` runs
//! 100): every fault is followed by a resume pass, then every key is checked.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::{journal_error, DurableExt, Journal};

use crate::support::backend::client;
use crate::support::server::Server;

const BODY: &[u8] = br#"{"amount":700,"currency":"EUR"}"#;
/// Each durable send's deadline: its lease is this plus the margin.
const DEADLINE: Duration = Duration::from_secs(4);
const LEASE_MARGIN: Duration = Duration::from_millis(100);

pub fn rounds() -> usize {
    std::env::var("COMMIT_FAULT_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2)
}

/// What the caller was told about one intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Told {
    /// `Ok(response)`.
    Sent,
    /// `Err`, outcome unknown: retry only with the same key.
    Unknown,
    /// `Err`, refused before sending, outcome known: nothing was or will be sent.
    Refused,
}

#[derive(Debug, Default)]
struct Ledger {
    told: BTreeMap<String, Told>,
}

impl Ledger {
    fn note(&mut self, key: &str, result: &Result<reqwest::Response, reqwest_resilience::Error>) {
        let told = match result {
            Ok(_) => Told::Sent,
            Err(error) if error.is_outcome_unknown() => {
                assert_eq!(
                    error.idempotency_key().map(|k| k.as_str()),
                    Some(key),
                    "an unknown outcome names its key"
                );
                assert!(
                    !error.to_string().contains("nothing was sent"),
                    "an unknown outcome never says nothing was sent: {error}"
                );
                assert!(
                    !error.is_write_ahead_refused(),
                    "an unknown outcome is never also refused: {error}"
                );
                assert_ne!(error.reason().as_str(), "write_ahead_refused", "{error}");
                Told::Unknown
            }
            Err(error) if error.is_write_ahead_refused() => Told::Refused,
            Err(error) => panic!("{key}: unexpected error: {error}"),
        };
        self.told.insert(key.to_owned(), told);
    }

    fn count(&self, told: Told) -> usize {
        self.told.values().filter(|&&t| t == told).count()
    }

    /// After the faults are gone: resume what is due (once the senders' leases
    /// ended), then hold every key to what its caller was told, and retry every
    /// unknown one with its key.
    async fn settle(&self, name: &str, journal: &Journal, server: &Server) {
        tokio::time::sleep(DEADLINE + LEASE_MARGIN + Duration::from_millis(200)).await;
        let report = journal
            .resumer(&client(3))
            .drain()
            .await
            .expect("resume pass");
        let mut refused_then_sent = 0;
        let mut unknown_effects = BTreeMap::new();
        for (key, told) in &self.told {
            let seen = server.seen_with_key(key).len();
            match told {
                Told::Sent => assert_eq!(seen, 1, "{key}: sent once, resumed never"),
                Told::Refused => refused_then_sent += usize::from(seen > 0),
                Told::Unknown => {
                    // The caller does what the error says: retry with the same key.
                    let retried = durable_send(&client(3), journal, &server.url, key).await;
                    assert!(
                        retried.is_ok(),
                        "{key}: the retry with its key: {retried:?}"
                    );
                    let effects = server.effects_with_key(key);
                    *unknown_effects.entry(effects).or_insert(0usize) += 1;
                }
            }
        }
        println!(
            "COMMIT_FAULT {name}: rounds={} sent={} unknown={} refused={} refused_then_sent={} \
             unknown_effects_after_retry={unknown_effects:?} resumed={report:?}",
            self.told.len(),
            self.count(Told::Sent),
            self.count(Told::Unknown),
            self.count(Told::Refused),
            refused_then_sent,
        );
        assert_eq!(
            refused_then_sent, 0,
            "{name}: refused intents reached the server"
        );
        assert!(
            unknown_effects.keys().all(|&effects| effects == 1),
            "{name}: every unknown intent ends as one effect: {unknown_effects:?}"
        );
    }
}

async fn durable_send(
    client: &ResilientClient,
    journal: &Journal,
    url: &str,
    key: &str,
) -> Result<reqwest::Response, reqwest_resilience::Error> {
    client
        .post(url)
        .idempotency_key(key)
        .header("content-type", "application/json")
        .body(BODY)
        .deadline(DEADLINE)
        .durable(journal)
        .send()
        .await
}

/// Sends `key` durably and notes what the caller was told.
async fn send_and_note(ledger: &mut Ledger, journal: &Journal, server: &Server, key: &str) {
    let result = durable_send(&client(1), journal, &server.url, key).await;
    if let Err(error) = &result {
        if error.is_write_ahead_refused() && !error.is_outcome_unknown() {
            assert!(
                journal_error(error).is_some_and(|e| !e.is_commit_unknown()),
                "{error}"
            );
        }
    }
    ledger.note(key, &result);
}

mod sqlite {
    use super::*;
    use reqwest_resilience_journal::SqliteStore;

    use crate::support::sqlite_path;

    /// Odd rounds hold the write lock past the busy timeout (refused, nothing
    /// written); even rounds release it before (the write-ahead waits, then
    /// sends).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_lock_held_past_the_busy_timeout_is_refused_and_never_sent() {
        let path = sqlite_path("lock_held");
        let journal = Journal::builder(
            SqliteStore::builder(&path)
                .busy_timeout(Duration::from_millis(300))
                .open()
                .unwrap(),
        )
        .lease_margin(LEASE_MARGIN)
        .build()
        .unwrap();
        let server = Server::start().await;
        let mut ledger = Ledger::default();
        for round in 0..rounds() {
            let holder = rusqlite::Connection::open(&path).unwrap();
            holder.execute_batch("BEGIN IMMEDIATE").unwrap();
            let hold_for = if round % 2 == 0 {
                Duration::from_millis(100)
            } else {
                Duration::from_millis(600)
            };
            let release = std::thread::spawn(move || {
                std::thread::sleep(hold_for);
                holder.execute_batch("ROLLBACK").unwrap();
            });
            send_and_note(&mut ledger, &journal, &server, &format!("lock-{round}")).await;
            release.join().unwrap();
        }
        if rounds() >= 2 {
            assert!(ledger.count(Told::Refused) >= 1, "{ledger:?}");
            assert!(ledger.count(Told::Sent) >= 1, "{ledger:?}");
        }
        ledger.settle("sqlite_lock_held", &journal, &server).await;
    }

    /// A child process commits write-aheads in a loop and is killed with
    /// SIGKILL: every write-ahead it saw return is in the journal, the file
    /// passes SQLite's integrity check, and a resume sends each once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_kill_9_mid_commit_loses_no_acknowledged_write_ahead() {
        use tokio::io::{AsyncBufReadExt, BufReader};

        use crate::support::backend::Backend;
        let server = Server::start().await;
        let mut worst_lost = 0;
        for round in 0..rounds() {
            let backend = Backend::sqlite("kill9");
            let mut child = backend.spawn_child(
                "commit_loop",
                &[(crate::children::LOOP_PREFIX_ENV, &format!("kill{round}-"))],
            );
            let stdout = child.stdout.take().unwrap();
            let mut lines = BufReader::new(stdout).lines();
            // Seeded by the round: kill after 5..=40 acknowledged write-aheads.
            let kill_after = 5 + (round * 7919) % 36;
            let mut written = Vec::new();
            while written.len() < kill_after {
                let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
                    .await
                    .expect("the child writes")
                    .unwrap()
                    .expect("the child is alive");
                if let Some(key) = line.strip_prefix("written ") {
                    written.push(key.to_owned());
                }
            }
            child.start_kill().unwrap(); // SIGKILL
            child.wait().await.unwrap();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(key) = line.strip_prefix("written ") {
                    written.push(key.to_owned());
                }
            }
            let Backend::Sqlite(path) = &backend else {
                unreachable!()
            };
            let check = rusqlite::Connection::open(path).unwrap();
            let integrity: String = check
                .query_row("PRAGMA integrity_check", [], |row| row.get(0))
                .unwrap();
            assert_eq!(integrity, "ok", "round {round}");
            drop(check);
            let journal = backend.journal(|b| b.lease_margin(LEASE_MARGIN)).await;
            let mut lost = 0;
            for key in &written {
                lost += usize::from(journal.get(key).await.unwrap().is_none());
            }
            worst_lost = worst_lost.max(lost);
            assert_eq!(lost, 0, "round {round}: acknowledged write-aheads lost");
        }
        println!(
            "COMMIT_FAULT sqlite_kill_9: rounds={} worst_lost={worst_lost}",
            rounds()
        );
        drop(server);
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};
    use reqwest_resilience_journal::PostgresStore;

    use crate::support::proxy::{Cut, Proxy};

    /// A cluster with production durability whose every commit (with
    /// `synchronous_commit` on, the default) waits for a standby that does not
    /// exist; `None` without PostgreSQL (skipped loudly).
    fn cluster(ghost_standby: bool) -> Option<ThrowawayPostgres> {
        let settings: &[&str] = if ghost_standby {
            &["synchronous_standby_names=ghost"]
        } else {
            &[]
        };
        match ThrowawayPostgres::start_with(Durability::Defaults, settings) {
            Ok(Some(cluster)) => Some(cluster),
            Ok(None) => {
                crate::support::skip_postgres("no initdb/pg_ctl found");
                None
            }
            Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
        }
    }

    /// The test's own sessions commit without waiting for the ghost standby (the
    /// store under test keeps the server's setting).
    fn local_commit(conninfo: &str) -> String {
        format!("{conninfo} options='-csynchronous_commit=local'")
    }

    async fn admin(conninfo: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
            .await
            .expect("admin connection");
        tokio::spawn(connection);
        client
    }

    /// A journal on a store that migrates the schema first (through a session
    /// that does not wait for the ghost standby).
    async fn healthy_journal(conninfo: &str) -> Journal {
        Journal::builder(PostgresStore::connect(conninfo).await.expect("connect"))
            .lease_margin(LEASE_MARGIN)
            .build()
            .unwrap()
    }

    async fn sending_journal(conninfo: &str, statement_timeout: Duration) -> Journal {
        let store = PostgresStore::builder(conninfo)
            .statement_timeout(statement_timeout)
            .connect()
            .await
            .expect("connect the store under test");
        Journal::builder(store)
            .lease_margin(LEASE_MARGIN)
            .build()
            .unwrap()
    }

    async fn syncrep_waiters(admin: &tokio_postgres::Client) -> i64 {
        admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
                &[],
            )
            .await
            .map(|row| row.get(0))
            .unwrap_or(0)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_commit_waiting_for_a_standby_past_the_timeout_is_unknown_never_refused() {
        let Some(cluster) = cluster(true) else { return };
        let healthy = local_commit(cluster.conninfo());
        let resumer = healthy_journal(&healthy).await;
        let admin = admin(&healthy).await;
        let journal = sending_journal(cluster.conninfo(), Duration::from_millis(300)).await;
        let server = Server::start().await;
        let mut ledger = Ledger::default();
        for round in 0..rounds() {
            send_and_note(&mut ledger, &journal, &server, &format!("standby-{round}")).await;
            // Let the waiting commit go (it completes locally, as a cancel does).
            admin
                .execute(
                    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity \
                     WHERE wait_event = 'SyncRep'",
                    &[],
                )
                .await
                .unwrap();
        }
        assert_eq!(ledger.count(Told::Unknown), rounds(), "{ledger:?}");
        assert_eq!(server.seen().len(), 0, "nothing sent while unknown");
        ledger.settle("postgres_standby", &resumer, &server).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_cut_at_commit_is_resolved_or_unknown_never_wrongly_refused() {
        let Some(cluster) = cluster(false) else {
            return;
        };
        let resumer = healthy_journal(cluster.conninfo()).await;
        let proxy = Proxy::start(cluster.port()).await;
        let journal = sending_journal(&proxy.conninfo(), Duration::from_secs(2)).await;
        let server = Server::start().await;
        let mut ledger = Ledger::default();
        for round in 0..rounds() {
            let cut = if round % 2 == 0 {
                Cut::AfterCommit
            } else {
                Cut::BeforeCommit
            };
            proxy.arm(cut);
            send_and_note(&mut ledger, &journal, &server, &format!("cut-{round}")).await;
            assert!(proxy.fired(), "round {round}: the cut happened");
        }
        ledger.settle("postgres_cut", &resumer, &server).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_stopped_mid_commit_is_unknown_never_refused() {
        let Some(cluster) = cluster(true) else { return };
        let healthy = local_commit(cluster.conninfo());
        let resumer = healthy_journal(&healthy).await;
        let journal = sending_journal(cluster.conninfo(), Duration::from_secs(5)).await;
        let server = Server::start().await;
        let mut ledger = Ledger::default();
        for round in 0..rounds() {
            let admin = admin(&healthy).await;
            // The store is back (it reconnects with a bounded backoff).
            let back = tokio::time::timeout(Duration::from_secs(20), async {
                while journal.get("probe").await.is_err() {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            });
            back.await.expect("the store reconnects");
            let key = format!("stop-{round}");
            let sending = {
                let (journal, url, key) = (journal.clone(), server.url.clone(), key.clone());
                tokio::spawn(async move { durable_send(&client(1), &journal, &url, &key).await })
            };
            let waiting = tokio::time::timeout(Duration::from_secs(10), async {
                while syncrep_waiters(&admin).await == 0 {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
            waiting.await.expect("the commit waits for the standby");
            tokio::task::block_in_place(|| cluster.stop_immediate())
                .expect("pg_ctl stop -m immediate");
            let result = sending.await.unwrap();
            ledger.note(&key, &result);
            tokio::task::block_in_place(|| cluster.restart()).expect("pg_ctl start");
        }
        assert_eq!(ledger.count(Told::Unknown), rounds(), "{ledger:?}");
        ledger
            .settle("postgres_stop_immediate", &resumer, &server)
            .await;
    }
}
