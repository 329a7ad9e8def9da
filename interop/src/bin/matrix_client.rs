//! The matrix test's durable sender: one `POST` as a durable intent, on the
//! defaults the journal's README shows (a SQLite journal with a stable worker
//! name, `ResilientClient::new()`), in a process of its own so that the test can
//! kill it with SIGKILL mid-request and resume the intent from its journal.
//!
//! ```text
//! matrix_client JOURNAL_PATH WORKER_NAME URL TOKEN BODY
//! ```
//!
//! It prints `sending` just before the send, then one line with the outcome
//! (if it lives that long).

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::{DurableExt, Journal, SqliteStore};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: matrix_client JOURNAL_PATH WORKER_NAME URL TOKEN BODY";
    let path = args.next().ok_or(usage)?;
    let worker = args.next().ok_or(usage)?;
    let url = args.next().ok_or(usage)?;
    let token = args.next().ok_or(usage)?;
    let body = args.next().ok_or(usage)?;

    let journal = Journal::builder(SqliteStore::open(&path)?)
        .worker_name(worker)
        .build()?;
    let client = ResilientClient::new();
    println!("sending");
    let outcome = client
        .post(&url)
        .bearer_auth(&token) // never journaled: the resumer signs again
        .body(body)
        .durable(&journal)
        .send()
        .await;
    match outcome {
        Ok(response) => println!("answered {}", response.status()),
        Err(error) => println!("gave up: {error}"),
    }
    Ok(())
}
