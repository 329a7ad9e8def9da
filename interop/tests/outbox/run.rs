//! One outbox run: the database, the server behind the fault proxy, the relay
//! fleet, the producers and the killer; then the drain and the evidence.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};
use reqwest_resilience_journal::{IntentState, Journal, PostgresStore, SqliteStore};

use crate::fault_proxy::FaultProxy;
use crate::fleet::Fleet;
use crate::kills;
use crate::producer::{Database, Producer};
use crate::server::PaymentsServer;
use crate::verdict::{self, Evidence, Figures, Journaled, Problems};

/// Relay processes in the fleet.
const RELAYS: usize = 2;
/// Concurrent business transactions.
const PRODUCERS: usize = 4;
/// The bound on waiting for the producers (the killer's wait for its moments).
const PRODUCE_TIME: Duration = Duration::from_secs(600);
/// The drain after the kills: bounded in time.
const DRAIN_TIME: Duration = Duration::from_secs(300);
const DRAIN_POLL: Duration = Duration::from_millis(100);
/// The credential the intents are built with and the relays add back.
const TOKEN: &str = "outbox-interop-token";
/// Above any run's intent count: `list` reads them all.
const LIST_ALL: usize = 1_000_000;

/// Where the journal's table and the business table are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A throwaway cluster; relays woken by `NOTIFY` and their poll.
    Postgres,
    /// One file, shared by the relays' processes; relays woken by their poll.
    Sqlite,
}

/// How much of an outbox run there is.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub backend: Backend,
    /// Business transactions (a fifth roll back).
    pub transactions: u64,
    /// SIGKILLs of relays.
    pub kills: u64,
    /// Seeds the rollbacks, the kill moments and victims, the proxy's faults
    /// and the relays' jitter.
    pub seed: u64,
}

/// A run's evidence, its verdict and its times.
#[derive(Debug)]
pub struct Outcome {
    pub plan: Plan,
    pub evidence: Evidence,
    pub problems: Problems,
    pub figures: Figures,
    /// Intents still open when the drain's time ran out (0: drained).
    pub open_after_drain: usize,
    pub faults: String,
    pub produced_in: Duration,
    pub drained_in: Duration,
    pub took: Duration,
}

pub async fn outbox_run(plan: Plan) -> Outcome {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Store::open(plan.backend, &dir).await;
    store.database.create_orders().await;
    let server = PaymentsServer::start(&dir.path().join("payments.db"), TOKEN).await;
    let proxy = FaultProxy::start(server.addr, plan.seed).await;

    let producer = Producer::new(
        store.journal.clone(),
        store.database.clone(),
        format!("http://{}/payments", proxy.addr),
        TOKEN,
        plan.seed,
        plan.transactions,
    );
    let fleet = produce_amid_kills(&producer, &store.relay_arg, plan).await;
    let produced_in = started.elapsed();

    let open_after_drain = drain(&store.journal).await;
    let drained_in = started.elapsed() - produced_in;
    drop(fleet);

    let rolled_back = std::mem::take(&mut *producer.rolled_back.lock().unwrap());
    let evidence = Evidence {
        committed: store.database.orders().await,
        rolled_back,
        journal: read_journal(&store.journal).await,
        sends: server.sends(),
        effects: server.effects(),
    };
    Outcome {
        plan,
        problems: verdict::problems(&evidence),
        figures: verdict::figures(&evidence),
        evidence,
        open_after_drain,
        faults: proxy.counts.summary(),
        produced_in,
        drained_in,
        took: started.elapsed(),
    }
}

/// The journal's table and the business table, in one database.
struct Store {
    /// The test's own handle on the journal (the producers' and the drain's).
    journal: Journal,
    database: Database,
    /// How a relay finds the store (`outbox_relay`'s first argument).
    relay_arg: String,
    /// Kept running until the run ends.
    _cluster: Option<ThrowawayPostgres>,
}

impl Store {
    /// Opening the journal creates (migrates) its table before the first enqueue.
    async fn open(backend: Backend, dir: &tempfile::TempDir) -> Store {
        match backend {
            Backend::Postgres => {
                let cluster = start_postgres();
                let conninfo = cluster.conninfo().to_owned();
                let store = PostgresStore::connect(&conninfo)
                    .await
                    .expect("the journal on PostgreSQL");
                Store {
                    journal: Journal::new(store),
                    relay_arg: format!("postgres:{conninfo}"),
                    database: Database::Postgres { conninfo },
                    _cluster: Some(cluster),
                }
            }
            Backend::Sqlite => {
                let path = dir.path().join("journal.sqlite");
                let store = SqliteStore::open(&path).expect("the journal on SQLite");
                Store {
                    journal: Journal::new(store),
                    relay_arg: format!("sqlite:{}", path.display()),
                    database: Database::Sqlite { path },
                    _cluster: None,
                }
            }
        }
    }
}

fn start_postgres() -> ThrowawayPostgres {
    match ThrowawayPostgres::start(Durability::Off) {
        Ok(Some(cluster)) => cluster,
        Ok(None) => panic!(
            "the outbox test needs PostgreSQL's server binaries (initdb, pg_ctl): \
             run journal/scripts/ensure-postgres.sh"
        ),
        Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
    }
}

/// The relays start; the producers run every transaction while the killer
/// kills relays among them. Returns the fleet, still relaying.
async fn produce_amid_kills(producer: &Producer, relay_arg: &str, plan: Plan) -> Fleet {
    let producing = Arc::new(AtomicBool::new(true));
    let killer = {
        let (finished, producing, relay_arg) = (
            producer.finished.clone(),
            producing.clone(),
            relay_arg.to_owned(),
        );
        tokio::task::spawn_blocking(move || {
            let mut fleet = Fleet::start(&relay_arg, RELAYS, plan.seed, TOKEN);
            let kills = kills::schedule(plan.kills, plan.transactions, RELAYS, plan.seed);
            kills::kill_along(&mut fleet, &kills, &finished, &producing);
            fleet
        })
    };
    let mut producers = tokio::task::JoinSet::new();
    for _ in 0..PRODUCERS {
        producers.spawn(producer.clone().produce());
    }
    let produced = tokio::time::timeout(PRODUCE_TIME, async {
        let mut all_ok = true;
        while let Some(done) = producers.join_next().await {
            all_ok &= done.is_ok();
        }
        all_ok
    })
    .await;
    // The kills still due land now, then the killer hands the fleet back.
    producing.store(false, Ordering::SeqCst);
    let fleet = killer.await.expect("the killer thread");
    assert_eq!(
        produced,
        Ok(true),
        "the producers finished in time, without a panic"
    );
    fleet
}

/// Waits until no intent is open (queued, in flight or unknown), at most
/// [`DRAIN_TIME`]. Returns how many stay open.
async fn drain(journal: &Journal) -> usize {
    let until = Instant::now() + DRAIN_TIME;
    loop {
        let mut open = 0;
        for state in IntentState::ALL.into_iter().filter(|s| !s.is_terminal()) {
            open += journal.list(state, LIST_ALL).await.expect("list").len();
        }
        if open == 0 || Instant::now() >= until {
            return open;
        }
        tokio::time::sleep(DRAIN_POLL).await;
    }
}

async fn read_journal(journal: &Journal) -> Vec<Journaled> {
    let mut rows = Vec::new();
    for state in IntentState::ALL {
        for record in journal.list(state, LIST_ALL).await.expect("list") {
            rows.push(Journaled {
                key: record.key,
                state: record.state,
                runs: record.runs,
                settled_in: record
                    .updated_at
                    .duration_since(record.created_at)
                    .unwrap_or_default(),
                detail: record.detail,
            });
        }
    }
    rows
}

impl Outcome {
    pub fn assert_exact(&self) {
        assert!(
            self.problems.is_empty(),
            "seed {}: {:#?}",
            self.plan.seed,
            self.problems
        );
        assert_eq!(
            self.open_after_drain, 0,
            "intents left open after the drain"
        );
        assert!(self.figures.committed > 0, "no transaction committed");
        assert!(
            self.figures.sends >= self.figures.effects,
            "fewer sends than effects"
        );
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (plan, figures) = (&self.plan, &self.figures);
        writeln!(
            f,
            "outbox run on {:?}, seed {}: {} transactions, committed {}, rolled back {}; \
             {} SIGKILLs of {RELAYS} relays",
            plan.backend,
            plan.seed,
            plan.transactions,
            figures.committed,
            figures.rolled_back,
            plan.kills
        )?;
        writeln!(
            f,
            "times: produced in {:.1?}, drained in {:.1?} more ({} open after), {:.1?} in all",
            self.produced_in, self.drained_in, self.open_after_drain, self.took
        )?;
        writeln!(
            f,
            "server: effects {}, sends {}, extra sends {}, sends for rolled-back orders {}; \
             most sends of one intent {}",
            figures.effects,
            figures.sends,
            figures.extra_sends,
            figures.sends_for_rolled_back,
            worst(&figures.most_sends)
        )?;
        let mut states = String::new();
        for state in IntentState::ALL {
            let n = self
                .evidence
                .journal
                .iter()
                .filter(|r| r.state == state)
                .count();
            states.push_str(&format!(" {state} {n},"));
        }
        writeln!(
            f,
            "journal:{states} most runs {}",
            worst(&figures.most_runs),
        )?;
        writeln!(
            f,
            "from enqueue to the final state: p50 {:.1?}, p99 {:.1?}, slowest {}",
            figures.settled_p50,
            figures.settled_p99,
            worst(&figures.slowest)
        )?;
        writeln!(f, "proxy: {}", self.faults)?;
        let [lost, extra, stray, leaked, unfinished] = self.problems.counts();
        write!(
            f,
            "lost effects {lost}, extra effects {extra}, stray sends {stray}, \
             leaked rollbacks {leaked}, unfinished {unfinished}"
        )
    }
}

/// "key (figure)", or "none".
fn worst<T: fmt::Debug>(figure: &Option<(String, T)>) -> String {
    match figure {
        Some((key, value)) => format!("{value:.1?} ({key})"),
        None => "none".to_owned(),
    }
}
