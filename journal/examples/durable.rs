//! A durable payment survives a crash: one payment, not two.
//!
//! Process 1 (a child of this one) sends `POST /payments` durably: the intent is
//! written ahead to a SQLite journal, the server commits the payment — and the
//! process is killed (SIGKILL) before the answer arrives. Process 2 (this one) is
//! the same worker restarted: same worker name, a new incarnation. At start-up it
//! takes the dead process's lease back at once — no waiting for it to end — and
//! resumes the intent with the same key and the same body bytes: the server
//! replays its stored answer. The server shows one payment.
//!
//! Run: `cargo run -p reqwest-resilience-journal --example durable`

use std::time::{Duration, Instant, SystemTime};

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::{DurableExt, Journal, SqliteStore};

#[path = "../tests/all/support/server.rs"]
#[allow(dead_code)] // the test server, shared; the example uses part of it
mod server;
use server::{Act, Server};

const CHILD_ENV: &str = "DURABLE_EXAMPLE_CHILD";
const KEY: &str = "order-1842-payment";
const BODY: &str = r#"{"amount":500,"currency":"EUR","order":"1842"}"#;
/// The worker's stable name: the same in both processes.
const WORKER: &str = "payments-1";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::var(CHILD_ENV) {
        Ok(args) => first_process(&args).await,
        Err(_) => second_process().await,
    }
}

/// Sends the payment durably; never sees the answer (it is killed first).
async fn first_process(args: &str) -> Result<(), Box<dyn std::error::Error>> {
    let (url, journal_path) = args.split_once('|').ok_or("bad child arguments")?;
    let journal = Journal::builder(SqliteStore::open(journal_path)?)
        .worker_name(WORKER)
        .build()?;
    let result = ResilientClient::new()
        .post(url)
        .idempotency_key(KEY)
        .header("content-type", "application/json")
        .body(BODY)
        .deadline(Duration::from_secs(1))
        .durable(&journal)
        .send()
        .await;
    println!(
        "process 1 was not killed in time: {:?}",
        result.map(|r| r.status())
    );
    Ok(())
}

async fn second_process() -> Result<(), Box<dyn std::error::Error>> {
    // The payments server commits the first request and never answers it.
    let server = Server::scripted(
        |_, before| {
            if before == 0 {
                Act::CommitThenHold
            } else {
                Act::Normal
            }
        },
        None,
    )
    .await;
    let journal_path =
        std::env::temp_dir().join(format!("durable-example-{}.sqlite", std::process::id()));

    let mut first = tokio::process::Command::new(std::env::current_exe()?)
        .env(
            CHILD_ENV,
            format!("{}|{}", server.url, journal_path.display()),
        )
        .kill_on_drop(true)
        .spawn()?;
    server.wait_for_effects(1).await;
    first.kill().await?; // SIGKILL: the answer never arrives
    println!("process 1: sent the payment; the server committed it; process 1 was killed");
    println!("payments on the server: {}\n", server.effects());

    let journal = Journal::builder(SqliteStore::open(&journal_path)?)
        .worker_name(WORKER)
        .build()?;
    let row = journal
        .get(KEY)
        .await?
        .ok_or("the intent was not journaled")?;
    let lease_left = row
        .lease_until
        .and_then(|until| until.duration_since(SystemTime::now()).ok())
        .unwrap_or_default();
    println!(
        "process 2: journal holds the intent: state {}, {} body bytes, the dead process's lease \
         would end in {lease_left:.0?}",
        row.state,
        row.body.len(),
    );

    // Start-up: the same worker name in a new process takes its leases back now.
    let started = Instant::now();
    let report = journal.resumer(&ResilientClient::new()).drain().await?;
    let row = journal.get(KEY).await?.ok_or("row gone")?;
    println!(
        "process 2: resumed {} intent(s) at start-up in {:.0?}: state {}, status {:?}, result at {:?}",
        report.claimed,
        started.elapsed(),
        row.state,
        row.status,
        row.locator
    );
    let seen = server.seen_with_key(KEY);
    println!(
        "the server saw the key {} times with identical bodies: {}",
        seen.len(),
        seen.iter().all(|s| s.body == BODY.as_bytes())
    );
    println!(
        "payments on the server: {} (one payment, not two)",
        server.effects()
    );
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", journal_path.display()));
    }
    assert_eq!(server.effects(), 1);
    Ok(())
}
