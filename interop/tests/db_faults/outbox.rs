//! The outbox under the faults: business transactions that enqueue a payment
//! in their own transaction (`tokio_postgres`, an `orders` row beside the
//! intent; every fourth rolled back on purpose), and a relay (the journal's
//! resumer, spawned) sending what committed, through the outage. After each
//! scenario: every committed intent was paid exactly once and is `succeeded`;
//! none whose transaction did not commit was paid or left a row; the relay
//! sent after the database came back, and said through `tracing` when its
//! passes failed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use reqwest_resilience::{ResilientClient, RetryPolicy};
use reqwest_resilience_journal::{IntentState, Journal, PostgresStore, ResumeHandle};
use tokio::time::Instant;
use tokio_postgres::NoTls;

use crate::faults::Cluster;
use crate::fleet::DEADLINE;

/// Business transactions running at once.
const ENQUEUERS: usize = 2;
/// The relay's poll (commits wake it earlier).
const POLL: Duration = Duration::from_millis(500);
const TOKEN: &str = "Bearer acct";
const BODY: &str = r#"{"amount":100,"currency":"EUR"}"#;

/// One business transaction: its key, and whether it was meant to commit.
#[derive(Debug, Clone)]
pub struct Enqueued {
    pub key: String,
    pub meant_to_commit: bool,
    /// How the transaction failed, if it did (its outcome is then read back
    /// from the `orders` table).
    pub error: Option<String>,
}

/// The running business transactions and relay.
pub struct OutboxLoad {
    enqueued: Arc<Mutex<Vec<Enqueued>>>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    relay: ResumeHandle,
    sent_at: Arc<Mutex<Vec<Instant>>>,
    failures_before: usize,
}

/// What the outbox's load came to.
pub struct OutboxOutcome {
    pub enqueued: Vec<Enqueued>,
    /// When the relay recorded each result it sent.
    pub sent_at: Vec<Instant>,
    /// The relay's failed passes, as its `tracing` warnings said.
    pub pass_failures: usize,
}

fn client(seed: u64) -> ResilientClient {
    ResilientClient::with_policy(
        RetryPolicy::builder()
            .max_attempts(4)
            .rng_seed(seed)
            .build()
            .expect("the relay's policy"),
    )
}

impl OutboxLoad {
    pub async fn start(cluster: &Cluster, url: &str, round: usize, seed: u64) -> OutboxLoad {
        let failures_before = pass_failures().load(Ordering::SeqCst);
        cluster
            .admin()
            .await
            .batch_execute("CREATE TABLE IF NOT EXISTS orders (key TEXT PRIMARY KEY)")
            .await
            .expect("the business table");
        let store = PostgresStore::builder(cluster.conninfo())
            .pool_size(4)
            .statement_timeout(Duration::from_secs(2))
            .connect()
            .await
            .expect("the relay's store");
        let journal = Journal::builder(store)
            .worker_name(format!("relay-{round}"))
            .build()
            .expect("journal settings");
        let sent_at = Arc::new(Mutex::new(Vec::new()));
        let relay = journal
            .resumer(&client(seed))
            .batch(16)
            .resign(|request, _| request.header("authorization", TOKEN))
            .on_result({
                let sent_at = Arc::clone(&sent_at);
                move |result| {
                    if result.error.is_none() {
                        sent_at.lock().unwrap().push(Instant::now());
                    }
                }
            })
            .spawn(POLL);
        let enqueued = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..ENQUEUERS)
            .map(|n| {
                tokio::spawn(enqueue_until(
                    cluster.conninfo().to_owned(),
                    journal.clone(),
                    url.to_owned(),
                    format!("r{round}-outbox-{n}"),
                    Arc::clone(&enqueued),
                    Arc::clone(&stop),
                ))
            })
            .collect();
        OutboxLoad {
            enqueued,
            stop,
            tasks,
            relay,
            sent_at,
            failures_before,
        }
    }

    /// Stops the business transactions `after` from now (the relay goes on).
    pub fn stop_enqueuing_after(&self, after: Duration) {
        let stop = Arc::clone(&self.stop);
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            stop.store(true, Ordering::SeqCst);
        });
    }

    /// Waits for the business transactions to end and stops the relay.
    pub async fn finish(self) -> OutboxOutcome {
        self.stop.store(true, Ordering::SeqCst);
        for task in self.tasks {
            tokio::time::timeout(DEADLINE * 4, task)
                .await
                .expect("an enqueuer ends")
                .expect("an enqueuer panicked");
        }
        tokio::time::timeout(Duration::from_secs(30), self.relay.stop())
            .await
            .expect("the relay stops");
        OutboxOutcome {
            enqueued: self.enqueued.lock().unwrap().clone(),
            sent_at: self.sent_at.lock().unwrap().clone(),
            pass_failures: pass_failures().load(Ordering::SeqCst) - self.failures_before,
        }
    }
}

async fn enqueue_until(
    conninfo: String,
    journal: Journal,
    url: String,
    prefix: String,
    enqueued: Arc<Mutex<Vec<Enqueued>>>,
    stop: Arc<AtomicBool>,
) {
    // The request is decided by the client's rules; the relay sends it.
    let client = client(0);
    let mut conn: Option<tokio_postgres::Client> = None;
    // Bounded: the run lasts a minute at most.
    for n in 0..100_000 {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if conn.as_ref().is_none_or(|c| c.is_closed()) {
            conn = connect(&conninfo).await;
            if conn.is_none() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        }
        let key = format!("{prefix}-{n}");
        let meant_to_commit = n % 4 != 3;
        let business = conn.as_mut().expect("connected just above");
        let done = tokio::time::timeout(
            DEADLINE,
            enqueue_one(business, &journal, &client, &url, &key, meant_to_commit),
        )
        .await
        .unwrap_or_else(|_| Err("no answer within the deadline".to_owned()));
        let failed = done.is_err();
        enqueued.lock().unwrap().push(Enqueued {
            key,
            meant_to_commit,
            error: done.err(),
        });
        if failed {
            // Its session is in an unknown state: a new one.
            conn = None;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

async fn connect(conninfo: &str) -> Option<tokio_postgres::Client> {
    let connected = tokio::time::timeout(
        Duration::from_secs(2),
        tokio_postgres::connect(conninfo, NoTls),
    )
    .await;
    let Ok(Ok((client, connection))) = connected else {
        return None;
    };
    tokio::spawn(connection);
    Some(client)
}

/// One business transaction: the order, the payment's intent, commit (and
/// wake the relays) or roll back.
async fn enqueue_one(
    conn: &mut tokio_postgres::Client,
    journal: &Journal,
    client: &ResilientClient,
    url: &str,
    key: &str,
    commit: bool,
) -> Result<(), String> {
    let tx = conn.transaction().await.map_err(|e| e.to_string())?;
    tx.execute("INSERT INTO orders (key) VALUES ($1)", &[&key])
        .await
        .map_err(|e| e.to_string())?;
    let intent = journal
        .outbox(
            client
                .post(url)
                .idempotency_key(key)
                .header("content-type", "application/json")
                .body(BODY)
                .deadline(DEADLINE),
        )
        .map_err(|e| e.to_string())?;
    intent
        .enqueue_tokio_postgres(&tx)
        .await
        .map_err(|e| e.to_string())?;
    if commit {
        tx.commit().await.map_err(|e| e.to_string())?;
        journal.wake_relays().await;
    } else {
        tx.rollback().await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Judges the outbox after a scenario (panicking with every violation) and
/// returns its figures. `back_at`: when the database accepted connections again.
pub async fn judge(
    name: &str,
    cluster: &Cluster,
    journal: &Journal,
    outcome: &OutboxOutcome,
    effects: &BTreeMap<String, i64>,
    back_at: Instant,
) -> String {
    let admin = cluster.admin().await;
    let committed: BTreeSet<String> = admin
        .query("SELECT key FROM orders", &[])
        .await
        .expect("the orders")
        .into_iter()
        .map(|row| row.get(0))
        .collect();
    let mut problems = Vec::new();
    let (mut committed_n, mut rolled_back_n, mut failed_n) = (0, 0, 0);
    for enqueue in &outcome.enqueued {
        let effect = effects.get(&enqueue.key).copied().unwrap_or(0);
        let row = journal.get(&enqueue.key).await.expect("read the journal");
        failed_n += usize::from(enqueue.error.is_some());
        if committed.contains(&enqueue.key) {
            committed_n += 1;
            if !enqueue.meant_to_commit {
                problems.push(format!("{}: rolled back, yet committed", enqueue.key));
            }
            let state = row.as_ref().map(|r| r.state);
            if effect != 1 || state != Some(IntentState::Succeeded) {
                problems.push(format!(
                    "{}: committed, but {effect} effects and state {state:?} ({:?})",
                    enqueue.key, enqueue.error
                ));
            }
        } else {
            rolled_back_n += 1;
            if effect != 0 || row.is_some() {
                problems.push(format!(
                    "{}: not committed, but {effect} effects and a row {:?}",
                    enqueue.key,
                    row.map(|r| r.state)
                ));
            }
        }
    }
    if committed_n == 0 {
        problems.push("no business transaction committed".to_owned());
    }
    let sent_after = outcome.sent_at.iter().filter(|at| **at >= back_at).count();
    if sent_after == 0 {
        problems.push("the relay sent nothing after the database came back".to_owned());
    }
    let figures = format!(
        "{name}_outbox: enqueues={} committed={committed_n} not_committed={rolled_back_n} \
         failed_transactions={failed_n} relay_sent={} relay_sent_after_fault={sent_after} \
         relay_pass_failures={}",
        outcome.enqueued.len(),
        outcome.sent_at.len(),
        outcome.pass_failures,
    );
    assert!(problems.is_empty(), "{figures}\n{}", problems.join("\n"));
    figures
}

/// The relays' failed passes so far, as their `tracing` warnings say
/// ("journal: resume pass failed"), counted by a subscriber for the whole
/// test binary (only this load spawns a relay loop).
pub fn pass_failures() -> &'static AtomicUsize {
    static COUNT: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    COUNT.get_or_init(|| {
        use tracing_subscriber::layer::SubscriberExt;
        let count = Arc::new(AtomicUsize::new(0));
        let subscriber = tracing_subscriber::registry().with(PassFailures(Arc::clone(&count)));
        // Another test of this binary may have set one first: then nothing
        // is counted, and the verdict only reports the figure.
        let _ = tracing::subscriber::set_global_default(subscriber);
        count
    })
}

struct PassFailures(Arc<AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for PassFailures {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() != tracing::Level::WARN {
            return;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if message.0.contains("resume pass failed") {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}
