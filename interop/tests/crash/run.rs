//! One crash run: senders, a killer, the resume, the replays; what each saw.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest_resilience::{Backoff, ResilientClient, RetryPolicy};
use reqwest_resilience_journal::{DurableExt, IntentState, Journal, SqliteStore};

use crate::fault_proxy::FaultProxy;
use crate::ledger;
use crate::server::Server;
use crate::verdict::{Intent, Outcome, Seen};

/// Concurrent senders of new intents.
const SENDERS: u64 = 4;
/// Intents sent per kill at most, besides a fixed allowance: the send loop is
/// bounded even if the killer were slow.
const INTENTS_PER_KILL: u64 = 40;
/// A kill lands this long (drawn) after the server came up: within the first
/// few sends, or while they are in its transactions.
const KILL_AFTER_MS: std::ops::RangeInclusive<u64> = 2..=40;
/// Runs before the journal abandons an intent. Nearly half the proxy's
/// connections fail and the retry budget soon allows one attempt per run, so
/// the default (10) would abandon about one intent in 3,000 that a real network
/// lets through.
const MAX_RUNS: u32 = 100;
/// The resume after the run: bounded in passes and time.
const RESUME_PASSES: usize = 600;
const RESUME_TIME: Duration = Duration::from_secs(60);
const ACCOUNT: &str = "acct_interop";
/// Above any run's intent count: `list` reads them all.
const LIST_ALL: usize = 1_000_000;

/// How much of a crash run there is.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// SIGKILLs of the server.
    pub kills: u64,
    /// Seeds the kill moments, the proxy's faults and the client's jitter.
    pub seed: u64,
}

pub async fn crash_run(plan: Plan) -> Outcome {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = dir.path().join("payments.db");
    let first = Server::start(&db);
    let proxy = Arc::new(FaultProxy::start(first.addr, plan.seed).await);
    let url = format!("http://{}/payments", proxy.addr);
    let client = client(plan.seed);
    let journal = Journal::builder(
        SqliteStore::open(dir.path().join("journal.sqlite")).expect("open the journal"),
    )
    .worker_name("interop-sender")
    .unknown_retry_after(Duration::from_millis(50))
    .resume_lease(Duration::from_secs(10))
    .lease_margin(Duration::from_secs(1))
    .max_runs(MAX_RUNS)
    .build()
    .expect("a valid journal");

    let senders = Senders {
        client: client.clone(),
        journal: journal.clone(),
        url: url.clone(),
        seed: plan.seed,
        max_intents: 100 + plan.kills * INTENTS_PER_KILL,
        killing: Arc::new(AtomicBool::new(true)),
        next: Arc::new(AtomicU64::new(0)),
        seen: Arc::new(Mutex::new(Vec::new())),
        send_errors: Arc::new(AtomicU64::new(0)),
    };
    let mut sending = tokio::task::JoinSet::new();
    for _ in 0..SENDERS {
        sending.spawn(senders.clone().send_until_the_kills_end());
    }

    let killer = {
        let (proxy, db) = (proxy.clone(), db.clone());
        tokio::task::spawn_blocking(move || {
            // "kill" in ASCII: the killer's draws are not the proxy's.
            let mut rng = StdRng::seed_from_u64(plan.seed ^ 0x6b69_6c6c);
            let mut server = first;
            for _ in 0..plan.kills {
                std::thread::sleep(Duration::from_millis(rng.random_range(KILL_AFTER_MS)));
                server.kill();
                server = Server::start(&db);
                proxy.set_upstream(server.addr);
            }
            server
        })
    };
    let last = killer.await.expect("the killer thread");
    senders.killing.store(false, Ordering::SeqCst);
    while let Some(done) = sending.join_next().await {
        done.expect("a sender task");
    }
    let killed_at = started.elapsed();

    let (resume_passes, open_after_resume) = resume_all(&journal, &client).await;
    let intents = read_journal(&journal).await;

    proxy.set_faults(false);
    let replays = replay_succeeded(&client, &url, &intents).await;
    drop(last);
    let seen = std::mem::take(&mut *senders.seen.lock().unwrap());

    Outcome {
        kills: plan.kills,
        seed: plan.seed,
        intents,
        payments: ledger::payments_by_amount(&db),
        seen,
        replays,
        send_errors: senders.send_errors.load(Ordering::SeqCst),
        resume_passes,
        open_after_resume,
        faults: proxy.counts.summary(),
        killed_in: killed_at,
        took: started.elapsed(),
    }
}

/// What the senders share: a counter handing out intents, and what they saw.
#[derive(Clone)]
struct Senders {
    client: ResilientClient,
    journal: Journal,
    url: String,
    seed: u64,
    max_intents: u64,
    /// Cleared when the last kill is done: no new intents after it.
    killing: Arc<AtomicBool>,
    next: Arc<AtomicU64>,
    seen: Arc<Mutex<Vec<Seen>>>,
    send_errors: Arc<AtomicU64>,
}

impl Senders {
    /// New intents, one at a time, each with its own key and amount, sent
    /// durably, until the kills end (or the bound on intents is reached).
    async fn send_until_the_kills_end(self) {
        while self.killing.load(Ordering::SeqCst) {
            let i = self.next.fetch_add(1, Ordering::SeqCst);
            if i >= self.max_intents {
                break;
            }
            let amount = i64::try_from(i).expect("bounded by max_intents") + 1;
            let key = format!("crash-{}-{i}", self.seed);
            let sent = self
                .client
                .post(&self.url)
                .idempotency_key(&key)
                .header("x-account", ACCOUNT)
                .body(amount.to_string())
                .durable(&self.journal)
                .send()
                .await;
            match read(sent).await {
                Some((status, body)) => self.seen.lock().unwrap().push(Seen {
                    key,
                    status,
                    body,
                    replay: false,
                }),
                None => {
                    self.send_errors.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }
}

/// Every intent the journal holds as succeeded, sent once more with its key
/// and body: the server must replay the same payment.
async fn replay_succeeded(client: &ResilientClient, url: &str, intents: &[Intent]) -> Vec<Seen> {
    let mut replays = Vec::new();
    for intent in intents.iter().filter(|i| i.state == IntentState::Succeeded) {
        let sent = client
            .post(url)
            .idempotency_key(&intent.key)
            .header("x-account", ACCOUNT)
            .body(intent.amount.to_string())
            .send()
            .await;
        let replayed = sent.as_ref().is_ok_and(|r| {
            r.headers()
                .get("idempotent-replayed")
                .is_some_and(|v| v == "true")
        });
        if let Some((status, body)) = read(sent).await {
            replays.push(Seen {
                key: intent.key.clone(),
                status,
                body,
                replay: replayed,
            });
        }
    }
    replays
}

/// The client the senders and the resumer share: no idle connections (so every
/// attempt meets a fresh fault), short jittered backoff seeded by the run.
fn client(seed: u64) -> ResilientClient {
    let policy = RetryPolicy::builder()
        .max_attempts(4)
        .backoff(Backoff::full_jitter(
            Duration::from_millis(10),
            Duration::from_millis(200),
        ))
        .attempt_timeout(Duration::from_secs(2))
        .deadline(Duration::from_secs(5))
        .rng_seed(seed)
        .build()
        .expect("a valid policy");
    let http = ResilientClient::reqwest_builder_for(&policy).pool_max_idle_per_host(0);
    ResilientClient::from_builder(http, policy).expect("a reqwest client")
}

/// The status and body of an answer that arrived whole.
async fn read(sent: Result<reqwest::Response, reqwest_resilience::Error>) -> Option<(u16, String)> {
    let response = sent.ok()?;
    let status = response.status().as_u16();
    let body = response.text().await.ok()?;
    Some((status, body))
}

/// Resumes until no intent is open (in flight or unknown), within bounds.
/// Returns the passes taken and what stayed open.
async fn resume_all(journal: &Journal, client: &ResilientClient) -> (usize, usize) {
    let resumer = journal.resumer(client);
    let until = Instant::now() + RESUME_TIME;
    let mut open = usize::MAX;
    for pass in 1..=RESUME_PASSES {
        resumer.drain().await.expect("a resume pass");
        open = 0;
        for state in [IntentState::InFlight, IntentState::Unknown] {
            open += journal.list(state, LIST_ALL).await.expect("list").len();
        }
        if open == 0 || Instant::now() >= until {
            return (pass, open);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (RESUME_PASSES, open)
}

async fn read_journal(journal: &Journal) -> Vec<Intent> {
    let mut intents = Vec::new();
    for state in IntentState::ALL {
        for record in journal.list(state, LIST_ALL).await.expect("list") {
            let amount = std::str::from_utf8(&record.body)
                .ok()
                .and_then(|s| s.parse().ok())
                .expect("every journaled body is an amount");
            intents.push(Intent {
                key: record.key,
                amount,
                state: record.state,
                status: record.status,
                detail: record.detail,
            });
        }
    }
    intents
}
