//! The strong mode under SIGKILL: the `strong_payments` example server (SQLite) and
//! `strong_payments_postgres` are killed at seeded random moments while keys are being
//! sent; afterwards each key has exactly one payment row, and every 201 a client ever
//! saw names that row.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::processes::{Db, Server};
use crate::support::{try_send, Req};

/// Each round sends 16 keys: the previous round's last 8 again (retries across a
/// crash) and 8 new ones (so every kill can land on a first execution).
const PER_ROUND: usize = 16;
const NEW_PER_ROUND: usize = 8;

/// The quick form; scripts/crash.sh runs 100 kills.
fn kills() -> usize {
    std::env::var("TOWER_IDEMPOTENCY_KILLS")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(12)
}

/// A small seeded generator (xorshift64*): the moments repeat run to run.
struct Moments(u64);

impl Moments {
    fn next_below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn request(key: usize) -> Req {
    Req {
        account: Some("acct_1"),
        ..Req::post(
            "/payments",
            &format!("order-{key}"),
            &format!("{}", 1000 + key),
        )
    }
}

/// `{"payment":ID,"amount":AMOUNT}` → (ID, AMOUNT).
fn parse(body: &str) -> (i64, i64) {
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    (
        json["payment"].as_i64().unwrap(),
        json["amount"].as_i64().unwrap(),
    )
}

/// Sends each key once, concurrently; records each 201's payment id.
async fn send_all(
    addr: SocketAddr,
    keys: std::ops::Range<usize>,
    seen: &mut HashMap<usize, Vec<(i64, i64)>>,
) -> usize {
    let tasks: Vec<_> = keys
        .map(|key| tokio::spawn(async move { (key, try_send(addr, &request(key)).await) }))
        .collect();
    let mut answered = 0;
    for task in tasks {
        let (key, answer) = task.await.unwrap();
        match answer {
            Some(answer) if answer.status == 201 => {
                seen.entry(key).or_default().push(parse(&answer.text()));
                answered += 1;
            }
            // A live server answers 201 (fresh or replayed) or 503; nothing else.
            Some(answer) => assert_eq!(answer.status, 503, "key {key}: {answer:?}"),
            None => {}
        }
    }
    answered
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_leaves_one_payment_per_key_sqlite() {
    let dir = crate::support::TempDir::new("crash");
    crash_run(Db::Sqlite(dir.path().join("payments.db"))).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_leaves_one_payment_per_key_postgres() {
    let Some(cluster) = crate::throwaway_pg::Cluster::start() else {
        return;
    };
    let conninfo = cluster.database("crash").await;
    crash_run(Db::Postgres(conninfo)).await;
}

async fn crash_run(db: Db) {
    let db = &db;
    let mut moments = Moments(0x5eed_1234_abcd_0001);
    let mut seen: HashMap<usize, Vec<(i64, i64)>> = HashMap::new();
    for round in 0..kills() {
        let server = Server::start(db);
        let addr = server.addr;
        let keys = round * NEW_PER_ROUND..round * NEW_PER_ROUND + PER_ROUND;
        let sending = tokio::spawn(async move {
            let mut seen = HashMap::new();
            send_all(addr, keys, &mut seen).await;
            seen
        });
        tokio::time::sleep(Duration::from_micros(
            moments.next_below(db.kill_window_us()),
        ))
        .await;
        server.kill();
        for (key, ids) in sending.await.unwrap() {
            seen.entry(key).or_default().extend(ids);
        }
    }
    // Converge: every key is answered (executed now, or replayed).
    let server = Server::start(db);
    let start = Instant::now();
    let keys = kills() * NEW_PER_ROUND + PER_ROUND - NEW_PER_ROUND;
    let mut finals = HashMap::new();
    while finals.len() < keys {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "keys did not converge"
        );
        let mut round = HashMap::new();
        send_all(server.addr, 0..keys, &mut round).await;
        for (key, ids) in round {
            finals.insert(key, ids[0]);
        }
    }
    server.kill();

    let rows = db.payments().await;
    assert_eq!(rows.len(), keys, "one payment per key, no double effect");
    for key in 0..keys {
        let (id, amount) = finals[&key];
        assert_eq!(amount, 1000 + key as i64, "key {key}");
        assert!(
            rows.contains(&(id, amount)),
            "key {key}: its payment row exists"
        );
        // No lost committed effect: every 201 seen before a crash names the same row.
        for earlier in seen.get(&key).into_iter().flatten() {
            assert_eq!(
                *earlier,
                (id, amount),
                "key {key}: one result across crashes"
            );
        }
    }
    let answered_before_the_end: usize = seen.values().map(Vec::len).sum();
    eprintln!(
        "{} kills: {}, keys: {keys}, keys answered 201 between kills: {}, 201s seen between kills: \
         {answered_before_the_end}, rows: {}",
        db.example().0,
        kills(),
        seen.len(),
        rows.len()
    );
}
