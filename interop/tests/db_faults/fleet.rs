//! The load: four journal workers making durable payments, each with a
//! resumer running through the fault, against the payments server in the
//! strong mode on `PostgresStore` (the interop matrix's server, as a child
//! process on the same database). Every send's answer is noted as its caller
//! would read it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest_resilience::{ResilientClient, RetryPolicy};
use reqwest_resilience_journal::{DurableExt, IntentState, Journal, PostgresStore};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::faults::{Cluster, Fault, LOCK_HELD};
use crate::outbox::{OutboxLoad, OutboxOutcome};
use crate::stalls::{Stall, Stalls};

const WORKERS: usize = 4;
/// Concurrent senders per worker.
const SENDERS: usize = 2;
/// Each send's deadline.
pub const DEADLINE: Duration = Duration::from_secs(3);
/// How far past its deadline a send may end under a fault, beyond the time
/// this process was stalled meanwhile (`stalls`): the journal ends its own
/// waits before the deadline and the client cuts what is left at it, so this
/// is room for scheduling noise only.
pub const OVERRUN_SLACK: Duration = Duration::from_secs(1);
/// How long the suite waits for every intent to become terminal after the
/// fault ended: past it, the intents still open are listed.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(60);
/// How long an intent may take to become terminal after the database is back,
/// on the journal's defaults (its due times, its leases).
pub const SETTLE_TARGET: Duration = Duration::from_secs(10);
const TOKEN: &str = "Bearer acct";
const BODY: &str = r#"{"amount":100,"currency":"EUR"}"#;

/// The payments server: tower-idempotency's strong mode on `PostgresStore`,
/// each effect a row of `effects` in the same transaction as its key.
pub struct PaymentsServer {
    pub url: String,
    _child: Child,
}

impl PaymentsServer {
    pub async fn start(conninfo: &str) -> PaymentsServer {
        Self::start_in("postgres", conninfo).await
    }

    /// The server in `mode` (`postgres`, `sqlite`) on `database`.
    pub async fn start_in(mode: &str, database: &str) -> PaymentsServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_matrix_server"))
            .args([mode, database, "0"])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the payments server");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server says where it listens")
            .unwrap()
            .expect("a first line");
        let addr: SocketAddr = line
            .strip_prefix("listening on ")
            .expect("listening on ADDR")
            .parse()
            .unwrap();
        PaymentsServer {
            url: format!("http://{addr}/payments"),
            _child: child,
        }
    }

    /// Each key's effects (rows), read after the database is back.
    pub async fn effects(&self, cluster: &Cluster) -> BTreeMap<String, i64> {
        let admin = cluster.admin().await;
        admin
            .query("SELECT key, count(*) FROM effects GROUP BY key", &[])
            .await
            .expect("count the effects")
            .into_iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect()
    }
}

/// What a caller was told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Told {
    /// A response with this status.
    Answered(u16),
    /// Refused before its first byte, outcome known.
    Refused,
    /// Outcome unknown (retry with the same key).
    Unknown,
    /// Another known failure.
    Failed,
}

#[derive(Debug, Clone)]
pub struct Note {
    pub key: String,
    pub told: Told,
    pub at: Instant,
    /// How long the send took.
    pub took: Duration,
    /// The error's text, for an `Err`.
    pub error: Option<String>,
    /// The error's reason label, for an `Err`.
    pub reason: Option<&'static str>,
    /// An error that said both "refused" and "outcome unknown".
    pub refused_and_unknown: bool,
    /// A response whose end the journal could not record at once.
    pub end_not_recorded: bool,
}

pub struct Outcome {
    pub notes: Vec<Note>,
    pub fault_started: Instant,
    pub back_at: Instant,
    /// When every intent was terminal, if within [`SETTLE_LIMIT`].
    pub settled_at: Option<Instant>,
    pub resume_errors: usize,
    pub journal: Journal,
    /// How late this process ran meanwhile (see `stalls`).
    pub stalls: Vec<Stall>,
}

pub struct Fleet {
    journals: Vec<Journal>,
    /// The strong mode's URL.
    url: String,
    /// The layer mode's URL.
    layer_url: String,
    round: usize,
    seed: u64,
}

fn client(seed: u64) -> ResilientClient {
    ResilientClient::with_policy(
        RetryPolicy::builder()
            .max_attempts(4)
            .rng_seed(seed)
            .build()
            .expect("the senders' policy"),
    )
}

/// A worker's journal, on the store's default connect timeout. A worker that
/// starts while the database recovers tries again (bounded).
async fn journal(conninfo: &str, worker: usize, pool: usize, statement: Duration) -> Journal {
    let mut tries = 0;
    let store = loop {
        let connected = PostgresStore::builder(conninfo)
            .pool_size(pool)
            .statement_timeout(statement)
            .connect()
            .await;
        tries += 1;
        match connected {
            Ok(store) => break store,
            Err(error) if tries < 10 => {
                eprintln!("worker {worker}: connecting failed ({error}); trying again");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(error) => panic!("connect a worker's journal: {error}"),
        }
    };
    // Every setting is the default's: nothing here waits for a lease to lapse
    // (a write-ahead whose COMMIT answer was lost ends its own lease once the
    // database is back), and an intent whose outcome the outage left unknown is
    // due again 1 s after its first run, 2 s after its second…
    Journal::builder(store)
        .worker_name(format!("worker-{worker}"))
        .build()
        .expect("journal settings")
}

impl Fleet {
    pub async fn start(
        cluster: &Cluster,
        server: &PaymentsServer,
        layer: &PaymentsServer,
        round: usize,
        seed: u64,
    ) -> Fleet {
        let mut journals = Vec::new();
        for worker in 0..WORKERS {
            journals.push(journal(cluster.conninfo(), worker, 4, Duration::from_secs(2)).await);
        }
        Fleet {
            journals,
            url: server.url.clone(),
            layer_url: layer.url.clone(),
            round,
            seed,
        }
    }

    /// Runs the load (durable sends, and outbox enqueues with their relay),
    /// applies `fault` in the middle, then lets every intent settle.
    pub async fn run_through(self, cluster: &Cluster, fault: &Fault) -> (Outcome, OutboxOutcome) {
        let notes = Arc::new(Mutex::new(Vec::new()));
        let outbox = OutboxLoad::start(cluster, &self.url, self.round, self.seed).await;
        let fault = async {
            let back = match fault {
                Fault::PoolExhaustion => {
                    pool_exhaustion(cluster, &self.url, self.round, &notes).await
                }
                _ => cluster.apply(fault).await,
            };
            // As long past the fault as the durable sends.
            outbox.stop_enqueuing_after(Duration::from_secs(2));
            back
        };
        // Half the workers pay through the strong mode, half through the layer.
        let outcome = run_load(
            &self.journals,
            &[self.url.clone(), self.layer_url.clone()],
            self.round,
            self.seed,
            &notes,
            fault,
        )
        .await;
        (outcome, outbox.finish().await)
    }
}

/// The load's first second is its warm-up (connections, prepared statements).
const WARM_UP: Duration = Duration::from_secs(1);
/// How long the full form loads the database after its warm-up, before the
/// fault: the throughput a fault is held to (the quick form has no time for it).
pub const BASELINE: Duration = Duration::from_secs(5);

/// How long the load runs before the fault starts.
fn load_before_fault() -> Duration {
    if crate::full() {
        WARM_UP + BASELINE
    } else {
        WARM_UP
    }
}

/// Runs the senders and resumers of `journals` (worker `w` sending to
/// `urls[w % urls.len()]`), applies `fault` (which returns when the database
/// is back) after `load_before_fault`, goes on for a while, then lets every
/// intent settle.
pub async fn run_load(
    journals: &[Journal],
    urls: &[String],
    round: usize,
    seed: u64,
    notes: &Arc<Mutex<Vec<Note>>>,
    fault: impl std::future::Future<Output = Instant>,
) -> Outcome {
    let stalls = Stalls::watch();
    let stop_sending = Arc::new(AtomicBool::new(false));
    let stop_resuming = Arc::new(AtomicBool::new(false));
    let resume_errors = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for (worker, journal) in journals.iter().enumerate() {
        for sender in 0..SENDERS {
            let prefix = format!("r{}-w{worker}-s{sender}", round);
            let seed = seed ^ ((worker * SENDERS + sender) as u64) << 8;
            tasks.push(tokio::spawn(send_until(
                journal.clone(),
                urls[worker % urls.len()].clone(),
                prefix,
                seed,
                Arc::clone(notes),
                Arc::clone(&stop_sending),
            )));
        }
    }
    let resumers: Vec<_> = journals
        .iter()
        .map(|journal| {
            tokio::spawn(resume_until(
                journal.clone(),
                seed,
                Arc::clone(&resume_errors),
                Arc::clone(&stop_resuming),
            ))
        })
        .collect();

    tokio::time::sleep(load_before_fault()).await;
    let fault_started = Instant::now();
    let back_at = fault.await;
    // The load goes on past the database's return (recovery is measured
    // on it), then the intents settle.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    stop_sending.store(true, Ordering::SeqCst);
    for task in tasks {
        tokio::time::timeout(DEADLINE * 4, task)
            .await
            .expect("a sender ends within its deadlines")
            .expect("a sender panicked");
    }
    let settled_at = settle(&journals[0]).await;
    stop_resuming.store(true, Ordering::SeqCst);
    for resumer in resumers {
        tokio::time::timeout(Duration::from_secs(30), resumer)
            .await
            .expect("a resumer ends")
            .expect("a resumer panicked");
    }
    let notes = notes.lock().unwrap().clone();
    Outcome {
        notes,
        fault_started,
        back_at,
        settled_at,
        resume_errors: resume_errors.load(Ordering::SeqCst),
        journal: journals[0].clone(),
        stalls: stalls.seen(),
    }
}

async fn send_until(
    journal: Journal,
    url: String,
    prefix: String,
    seed: u64,
    notes: Arc<Mutex<Vec<Note>>>,
    stop: Arc<AtomicBool>,
) {
    let client = client(seed);
    // Bounded: a send takes at least a round trip, the run a minute at most.
    for n in 0..100_000 {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let key = format!("{prefix}-{n}");
        let note = send_one(&client, &journal, &url, key).await;
        let pause = note.told != Told::Answered(201);
        notes.lock().unwrap().push(note);
        if pause {
            // A caller that failed does not spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

pub async fn send_one(client: &ResilientClient, journal: &Journal, url: &str, key: String) -> Note {
    use reqwest_resilience::ResponseExt;
    let started = Instant::now();
    let sent = client
        .post(url)
        .idempotency_key(&key)
        .header("authorization", TOKEN)
        .header("content-type", "application/json")
        .body(BODY)
        .deadline(DEADLINE)
        .durable(journal)
        .send()
        .await;
    let at = Instant::now();
    let took = at - started;
    match sent {
        Ok(response) => Note {
            key,
            told: Told::Answered(response.status().as_u16()),
            at,
            took,
            error: None,
            reason: None,
            refused_and_unknown: false,
            end_not_recorded: response.end_not_recorded(),
        },
        Err(error) => {
            let told = if error.is_outcome_unknown() {
                Told::Unknown
            } else if error.is_write_ahead_refused() {
                Told::Refused
            } else {
                Told::Failed
            };
            Note {
                key,
                told,
                at,
                took,
                refused_and_unknown: error.is_outcome_unknown() && error.is_write_ahead_refused(),
                reason: Some(error.reason().as_str()),
                error: Some(error.to_string()),
                end_not_recorded: false,
            }
        }
    }
}

async fn resume_until(
    journal: Journal,
    seed: u64,
    errors: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) {
    // The journal never stores credentials: a resume signs again.
    let resumer = journal
        .resumer(&client(seed))
        .batch(16)
        .resign(|request, _| request.header("authorization", TOKEN));
    for _ in 0..10_000 {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if resumer.run_once().await.is_err() {
            errors.fetch_add(1, Ordering::SeqCst);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// When nothing is open in the journal any more (the resumers send what is
/// due meanwhile), or `None` past [`SETTLE_LIMIT`].
async fn settle(journal: &Journal) -> Option<Instant> {
    let end = Instant::now() + SETTLE_LIMIT;
    while Instant::now() < end {
        if let Ok(backlog) = journal.backlog().await {
            if backlog.due + backlog.leased + backlog.waiting == 0 {
                return Some(Instant::now());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// 64 concurrent durable sends on a journal whose pool holds 8 connections and
/// whose `statement_timeout` (300 ms) is shorter than the lock another session
/// holds on the journal's table ([`LOCK_HELD`]): each send ends within its
/// deadline (sent, or refused with a timeout — nothing written), none hangs.
/// Returns when the lock is released.
async fn pool_exhaustion(
    cluster: &Cluster,
    url: &str,
    round: usize,
    notes: &Arc<Mutex<Vec<Note>>>,
) -> Instant {
    let journal = journal(cluster.conninfo(), 9, 8, Duration::from_millis(300)).await;
    let admin = cluster.admin().await;
    admin
        .batch_execute("BEGIN; LOCK TABLE journal_intents IN EXCLUSIVE MODE")
        .await
        .expect("hold the journal's table");
    // One client for all, made before the sends: building a client loads its
    // TLS roots on the runtime's threads, and 64 at once stalled every send's
    // timers for seconds.
    let client = client(round as u64);
    let sends: Vec<_> = (0..64)
        .map(|n| {
            let (client, journal, url) = (client.clone(), journal.clone(), url.to_owned());
            tokio::spawn(async move {
                send_one(&client, &journal, &url, format!("r{round}-pool-{n}")).await
            })
        })
        .collect();
    tokio::time::sleep(LOCK_HELD).await;
    admin
        .batch_execute("ROLLBACK")
        .await
        .expect("release the lock");
    let released = Instant::now();
    for send in sends {
        let note = send.await.expect("a send panicked");
        notes.lock().unwrap().push(note);
    }
    released
}

/// The rows of the keys noted, read after the run: each state, and how the
/// row reads (for a failure's message).
pub async fn states(
    journal: &Journal,
    notes: &[Note],
) -> BTreeMap<String, (Option<IntentState>, String)> {
    let mut states = BTreeMap::new();
    for note in notes {
        let row = journal.get(&note.key).await.expect("read the journal back");
        let shown = row.as_ref().map_or("no row".to_owned(), |r| {
            format!("runs={} fence={} detail={:?}", r.runs, r.fence, r.detail)
        });
        states.insert(note.key.clone(), (row.map(|r| r.state), shown));
    }
    states
}
