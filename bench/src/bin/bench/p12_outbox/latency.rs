//! Commit-to-first-byte: a producer commits an order with its intent, calls
//! `wake_relays()`, and the time from `COMMIT` returning to the first byte of
//! that key's request at the server (both clocks in this process; the relay in
//! another).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng as _, SeedableRng as _};

use super::first_byte::FirstByteServer;
use super::relay_process::RelayProcess;
use super::transactions::{PgProducer, Txn};
use crate::plan::Plan;

/// The relay's poll bound: a wake-up that does not arrive costs up to this.
pub const POLL: Duration = Duration::from_secs(1);
/// The relay's batch, and its pool of as many connections.
pub const BATCH: usize = 32;

/// The longest wait for a committed intent's first byte before it counts as missing.
const FIRST_BYTE_LIMIT: Duration = Duration::from_secs(10);

/// One scenario's figures.
#[derive(Debug, Default)]
pub struct Latencies {
    /// Milliseconds from `COMMIT` returning to the first byte, per intent.
    pub ms: Vec<f64>,
    /// Committed intents whose first byte did not come within the limit.
    pub missing: usize,
    /// Intents committed per second.
    pub per_s: f64,
}

impl Latencies {
    fn merge(&mut self, other: Latencies) {
        self.ms.extend(other.ms);
        self.missing += other.missing;
    }
}

/// What the relay in another process delivered, and what was left after.
pub struct Delivery {
    pub idle: Latencies,
    pub load: Latencies,
    /// The relay process's `TOTALS` line.
    pub relay_totals: String,
    /// Requests the server received, and distinct keys among them.
    pub sends: usize,
    pub keys: usize,
    /// Journal rows by state after the runs.
    pub states: Vec<(String, i64)>,
}

/// Starts the relay process on `conninfo`, measures idle and at load (all
/// `producers`), stops the relay and counts what was sent and recorded.
pub async fn delivery(
    conninfo: &str,
    producers: &mut Vec<PgProducer>,
    server: &Arc<FirstByteServer>,
    plan: &Plan,
) -> Delivery {
    let relay = RelayProcess::start(conninfo, POLL, BATCH)
        .await
        .unwrap_or_else(|error| panic!("P12: the relay process: {error}"));
    // Warm-up: the relay's connections and statements, the server's connection.
    one_at_a_time(&mut producers[0], server, 10).await;
    let idle = one_at_a_time(&mut producers[0], server, plan.p12_idle_intents).await;
    let load = under_load(producers, server, plan.p12_load).await;
    let relay_totals = relay
        .stop()
        .await
        .unwrap_or_else(|error| panic!("P12: stopping the relay process: {error}"));
    let (sends, keys) = server.sends_and_keys();
    Delivery {
        idle,
        load,
        relay_totals,
        sends,
        keys,
        states: producers[0].intents_by_state().await,
    }
}

/// `count` intents one at a time, each after the previous one's first byte and
/// a seeded pause of 20–40 ms (the relay idle in between).
async fn one_at_a_time(
    producer: &mut PgProducer,
    server: &FirstByteServer,
    count: usize,
) -> Latencies {
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    let mut latencies = Latencies::default();
    let started = Instant::now();
    for _ in 0..count {
        latencies.merge(one(producer, server).await);
        tokio::time::sleep(Duration::from_millis(rng.random_range(20..=40))).await;
    }
    latencies.per_s = count as f64 / started.elapsed().as_secs_f64();
    latencies
}

/// `producers` committing for `length`, each waiting for its intent's first
/// byte before its next transaction.
async fn under_load(
    producers: &mut Vec<PgProducer>,
    server: &Arc<FirstByteServer>,
    length: Duration,
) -> Latencies {
    let started = Instant::now();
    let stop_at = started + length;
    let tasks: Vec<_> = producers
        .drain(..)
        .map(|mut producer| {
            let server = server.clone();
            tokio::spawn(async move {
                let mut latencies = Latencies::default();
                while Instant::now() < stop_at {
                    latencies.merge(one(&mut producer, &server).await);
                }
                (producer, latencies)
            })
        })
        .collect();
    let mut total = Latencies::default();
    for task in tasks {
        let (producer, latencies) = task.await.expect("P12 producer task");
        producers.push(producer);
        total.merge(latencies);
    }
    total.per_s = (total.ms.len() + total.missing) as f64 / started.elapsed().as_secs_f64();
    total
}

/// One order with its intent, `wake_relays()` after commit, and its first byte.
async fn one(producer: &mut PgProducer, server: &FirstByteServer) -> Latencies {
    let committed = producer.transaction(Txn::IntentWakeAfter).await;
    let key = committed.key.expect("an intent was enqueued");
    let mut latencies = Latencies::default();
    match server.first_byte(&key, FIRST_BYTE_LIMIT).await {
        Some(at) => latencies.ms.push(signed_ms(committed.at, at)),
        None => latencies.missing += 1,
    }
    latencies
}

/// `to − from` in milliseconds; negative when the relay's first byte came
/// before `COMMIT`'s answer reached the producer (the row was visible first).
fn signed_ms(from: Instant, to: Instant) -> f64 {
    match to.checked_duration_since(from) {
        Some(after) => after.as_secs_f64() * 1e3,
        None => -(from - to).as_secs_f64() * 1e3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_both_ways() {
        let from = Instant::now();
        let to = from + Duration::from_millis(3);
        assert!((signed_ms(from, to) - 3.0).abs() < 1e-9);
        assert!((signed_ms(to, from) + 3.0).abs() < 1e-9);
    }
}
