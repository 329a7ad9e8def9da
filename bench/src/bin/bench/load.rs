//! Building the clients, and driving many intents through one of them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest_resilience_bench::peers::{self, Client, Peer, Settings};

/// Every peer, then the reference rows: bare reqwest with the crate's default
/// attempt timeout (the careful user), bare reqwest doing the defaults' work by
/// hand (the floor), and the crate without its timer.
pub fn build_all_with_reference(settings: Settings) -> Vec<(Peer, Arc<Client>)> {
    let mut clients = build_all(settings);
    for reference in Peer::REFERENCES {
        clients.push((reference, peers::build(reference, settings)));
    }
    clients
}

pub fn build_all(settings: Settings) -> Vec<(Peer, Arc<Client>)> {
    Peer::ALL
        .iter()
        .map(|&peer| (peer, peers::build(peer, settings)))
        .collect()
}

/// Intents counted by the final status (or none).
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub done: usize,
    pub ok: usize,
    pub unavailable: usize,
    pub other: usize,
    pub failed: usize,
}

impl Tally {
    pub fn add(&mut self, status: Option<StatusCode>) {
        self.done += 1;
        match status {
            Some(StatusCode::OK) => self.ok += 1,
            Some(StatusCode::SERVICE_UNAVAILABLE) => self.unavailable += 1,
            Some(_) => self.other += 1,
            None => self.failed += 1,
        }
    }

    pub fn merge(&mut self, other: Tally) {
        self.done += other.done;
        self.ok += other.ok;
        self.unavailable += other.unavailable;
        self.other += other.other;
        self.failed += other.failed;
    }
}

/// `intents` GETs through `client` from `concurrency` tasks, stopping early at
/// `limit`. Returns the tally and the wall time.
pub async fn run_concurrent(
    client: Arc<Client>,
    url: Arc<str>,
    intents: usize,
    concurrency: usize,
    limit: Duration,
) -> (Tally, Duration) {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let stop_at = started + limit;
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let (client, url, next) = (client.clone(), url.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            while Instant::now() < stop_at && next.fetch_add(1, Ordering::Relaxed) < intents {
                tally.add(client.get(&url).await.status);
            }
            tally
        }));
    }
    let mut tally = Tally::default();
    for task in tasks {
        tally.merge(task.await.expect("worker task"));
    }
    (tally, started.elapsed())
}
