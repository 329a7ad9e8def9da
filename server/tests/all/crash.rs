//! The strong mode under SIGKILL: the `strong_payments` example server (SQLite) and
//! `strong_payments_postgres` are killed at seeded random moments while keys are being
//! sent; afterwards each key has exactly one payment row, and every 201 a client ever
//! saw names that row.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// Built by `cargo test` beside this test binary (examples are test targets' siblings).
fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().and_then(Path::parent).unwrap();
    debug.join("examples").join(name)
}

/// The database a crash run writes to, and how to read its payments back.
enum Db {
    #[cfg(feature = "sqlite")]
    Sqlite(PathBuf),
    #[cfg(feature = "postgres")]
    Postgres(String),
}

impl Db {
    fn example(&self) -> (&'static str, String) {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(path) => ("strong_payments", path.display().to_string()),
            #[cfg(feature = "postgres")]
            Db::Postgres(conninfo) => ("strong_payments_postgres", conninfo.clone()),
        }
    }

    /// The kills land within this many µs of the sends starting: about the time a
    /// round of sends takes (PostgreSQL's first transactions open their connections).
    fn kill_window_us(&self) -> u64 {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(_) => 20_000,
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => 60_000,
        }
    }

    async fn payments(&self) -> Vec<(i64, i64)> {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(path) => {
                let conn = tower_idempotency::rusqlite::Connection::open(path).unwrap();
                let mut statement = conn
                    .prepare("SELECT id, amount FROM payments ORDER BY id")
                    .unwrap();
                let rows = statement
                    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                rows
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(conninfo) => {
                let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(connection);
                let rows = client
                    .query("SELECT id, amount FROM payments ORDER BY id", &[])
                    .await
                    .unwrap();
                rows.iter().map(|row| (row.get(0), row.get(1))).collect()
            }
        }
    }
}

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(db: &Db) -> Self {
        let (example, arg) = db.example();
        let mut child = Command::new(example_binary(example))
            .arg(arg)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect(
                "the strong_payments example is built (cargo test --features sqlite builds it)",
            );
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .expect("the address line")
            .parse()
            .unwrap();
        Server { child, addr }
    }

    /// SIGKILL: no destructor, no flush, no graceful shutdown.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
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
