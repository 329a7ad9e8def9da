//! P1 and P2 side by side: this crate at an earlier commit ("then") against the
//! working tree ("now"), with bare reqwest and the two floors, in one process and
//! one run.
//!
//! Built and run by `bench/scripts/against_commit.sh`, not by CI (it needs the
//! earlier commit's sources). A ratio of two rows taken in the same round cancels
//! what drifts between runs (machine load, frequency, the floor's own ratio), which
//! a threshold copied from one full run into another cannot.
//!
//!     main [ROUNDS]              P1's method: ROUNDS rounds × 200 sequential GETs per row
//!     main p2 [ROUNDS]           P2's method: ROUNDS rounds × 3200 GETs from 32 tasks per row
//!     main profile ROW COUNT     ROW alone, COUNT GETs after 1000 warm-up (for callgrind)

use std::sync::Arc;
use std::time::{Duration, Instant};

use bench::floor::{self, deposits::DepositWindow};
use bench::peers::{self, Peer, Settings};

/// What P1's reqwest-resilience row sets besides the defaults.
const ATTEMPTS: u32 = 4;
const BASE: Duration = Duration::from_millis(10);
const CAP: Duration = Duration::from_millis(100);
const WARM_UP: usize = 1000;
/// P1: sequential GETs per row and round.
const P1_PER_ROUND: usize = 200;
/// P2: tasks at once, and GETs per task in a round.
const P2_TASKS: usize = 32;
const P2_PER_TASK: usize = 100;

/// Every row called the same way, each by its own code: not through the bench's
/// `peers::Client::get`, whose future is as large as its largest peer's and would
/// be one more layer for some rows than for others.
enum Row {
    Bare(reqwest::Client),
    PartialFloor(reqwest::Client),
    Floor(reqwest::Client, DepositWindow),
    Then(then::ResilientClient),
    Now(now::ResilientClient),
}

impl Row {
    async fn get(&self, url: &str) {
        match self {
            Row::Bare(client) => {
                if let Ok(response) = client.get(url).send().await {
                    peers::drain(response).await;
                }
            }
            Row::PartialFloor(client) => {
                floor::defaults::partial(client, url).await;
            }
            Row::Floor(client, deposits) => {
                floor::defaults::complete(client, deposits, url).await;
            }
            Row::Then(client) => {
                if let Ok(response) = client.get(url).send().await {
                    peers::drain(response).await;
                }
            }
            Row::Now(client) => {
                if let Ok(response) = client.get(url).send().await {
                    peers::drain(response).await;
                }
            }
        }
    }
}

/// The client as the bench builds P1's reqwest-resilience row, from either
/// commit's crate (their APIs agree on these calls).
macro_rules! resilient_client {
    ($krate:ident) => {{
        let policy = $krate::RetryPolicy::builder()
            .max_attempts(ATTEMPTS)
            .backoff($krate::Backoff::full_jitter(BASE, CAP))
            .build()
            .expect("valid policy");
        let builder = reqwest::Client::builder()
            .no_proxy()
            .tcp_nodelay(true)
            .pool_max_idle_per_host(256)
            .pool_idle_timeout(Duration::from_secs(90));
        $krate::ResilientClient::from_builder(builder, policy).expect("client")
    }};
}

/// The "now" row's client with hedging on (fixed 1 s, which no answer here reaches).
fn hedged_client() -> now::ResilientClient {
    let policy = now::RetryPolicy::builder()
        .max_attempts(ATTEMPTS)
        .backoff(now::Backoff::full_jitter(BASE, CAP))
        .hedging(now::Hedging::fixed(Duration::from_secs(1)))
        .build()
        .expect("valid policy");
    let builder = reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(256)
        .pool_idle_timeout(Duration::from_secs(90));
    now::ResilientClient::from_builder(builder, policy).expect("client")
}

fn rows() -> Vec<(&'static str, Arc<Row>)> {
    // The bench's own clients for the rows it has, built as P1 builds them.
    let reqwest_of = |peer| match &*peers::build(peer, Settings::COMPARABLE) {
        peers::Client::Bare { client, .. }
        | peers::Client::FloorPartial(client)
        | peers::Client::Floor { client, .. } => client.clone(),
        _ => unreachable!("bare and the floors are reqwest clients"),
    };
    vec![
        ("bare", Arc::new(Row::Bare(reqwest_of(Peer::Bare)))),
        (
            "partial floor",
            Arc::new(Row::PartialFloor(reqwest_of(Peer::FloorPartial))),
        ),
        (
            "floor",
            Arc::new(Row::Floor(
                reqwest_of(Peer::Floor),
                DepositWindow::new(Instant::now()),
            )),
        ),
        ("then", Arc::new(Row::Then(resilient_client!(then)))),
        ("now", Arc::new(Row::Now(resilient_client!(now)))),
        // Hedging on, its delay far above the loopback server's answer: the first
        // copy always wins, so the row is the cost of the hedged path itself.
        ("now, hedged", Arc::new(Row::Now(hedged_client()))),
    ]
}

/// `count` GETs one after the other.
async fn sequential(row: &Row, url: &str, count: usize) {
    for _ in 0..count {
        row.get(url).await;
    }
}

/// P2's load: `P2_TASKS` tasks of `P2_PER_TASK` GETs each.
async fn concurrent(row: &Arc<Row>, url: &Arc<str>) {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..P2_TASKS {
        let (row, url) = (row.clone(), url.clone());
        tasks.spawn(async move { sequential(&row, &url, P2_PER_TASK).await });
    }
    while tasks.join_next().await.is_some() {}
}

/// Median, p25 and p75.
fn quartiles(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.25), at(0.75))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = bench::server::Server::start().expect("loopback server");
    let url: Arc<str> = server.url("/ok").into();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rows = runtime.block_on(async { rows() });
    let mode = args.first().map_or("", String::as_str);
    if mode == "profile" {
        let name = args.get(1).map_or("now", String::as_str);
        let count: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(1000);
        let (_, row) = rows.iter().find(|(row, _)| *row == name).expect("a row");
        runtime.block_on(sequential(row, &url, WARM_UP + count));
        return;
    }
    let p2 = mode == "p2";
    let rounds_arg = if p2 { args.get(1) } else { args.first() };
    let rounds: usize =
        rounds_arg
            .and_then(|n| n.parse().ok())
            .unwrap_or(if p2 { 41 } else { 151 });
    let per_round = if p2 {
        P2_TASKS * P2_PER_TASK
    } else {
        P1_PER_ROUND
    };
    let (mut wall, mut cpu) = (vec![Vec::new(); rows.len()], vec![Vec::new(); rows.len()]);
    runtime.block_on(async {
        for (_, row) in &rows {
            sequential(row, &url, WARM_UP).await;
        }
        for round in 0..rounds {
            // Each round starts with another row, so no row always follows the same one.
            for turn in 0..rows.len() {
                let i = (turn + round) % rows.len();
                let (started, cpu_before) = (Instant::now(), bench::cpu::thread_cpu());
                if p2 {
                    concurrent(&rows[i].1, &url).await;
                } else {
                    sequential(&rows[i].1, &url, P1_PER_ROUND).await;
                }
                wall[i].push(started.elapsed().as_secs_f64());
                cpu[i].push((bench::cpu::thread_cpu() - cpu_before).as_secs_f64());
            }
        }
    });
    let method = if p2 { "P2" } else { "P1" };
    println!(
        "{method}: {rounds} rounds × {per_round} GETs per row; time ratio = median over \
         rounds of the two rows' times in the same round (p25–p75); lower is faster"
    );
    let pairs = [
        (4, 3),
        (4, 1),
        (3, 1),
        (4, 2),
        (3, 2),
        (1, 0),
        (4, 0),
        (3, 0),
    ];
    for (measure, data) in [("wall", &wall), ("client CPU", &cpu)] {
        for (a, b) in pairs {
            let ratios = (0..rounds).map(|k| data[a][k] / data[b][k]).collect();
            let (median, p25, p75) = quartiles(ratios);
            let (a, b) = (rows[a].0, rows[b].0);
            println!("{measure:>10}  {a:>13} ÷ {b:<13} {median:.3}  ({p25:.3}–{p75:.3})");
        }
    }
    for (i, (name, _)) in rows.iter().enumerate() {
        let per_request = |v: &Vec<f64>| quartiles(v.clone()).0 * 1e6 / per_round as f64;
        println!(
            "{name:>13}: wall {:.1} µs, client CPU {:.1} µs per request",
            per_request(&wall[i]),
            per_request(&cpu[i])
        );
    }
}
