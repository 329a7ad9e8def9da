//! P1 for the `metrics` feature: what attaching `reqwest_resilience::Metrics` costs a
//! sequential GET (200 OK), against the same client without it.
//!
//! ```text
//! cargo run -p reqwest-resilience-bench --release --bin metrics_overhead
//! cargo run -p reqwest-resilience-bench --release --bin metrics_overhead -- --rounds 30 --per-round 500
//! ```
//!
//! P1's method on four rows: reqwest-resilience as the benchmark builds it
//! (`Peer::Resilient`), the same with an observer that does nothing (the loop's
//! observer calls), with `Metrics` and no recorder installed (the observer's own
//! work), and with `metrics-exporter-prometheus`'s recorder set for
//! the client's thread (what a service pays). Rounds alternate the rows so drift
//! hits each alike; the figures are medians over rounds of µs per request, wall and
//! client-thread CPU, with each round's ratio to the row without metrics. The
//! loopback server (127.0.0.1) runs on its own thread.

use std::sync::Arc;
use std::time::Instant;

use metrics_exporter_prometheus::PrometheusBuilder;
use reqwest::StatusCode;
use reqwest_resilience::{Backoff, IntentObserver, Metrics, ResilientClient, RetryPolicy};
use reqwest_resilience_bench::cpu::thread_cpu;
use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::{self, Client, Peer, Settings};
use reqwest_resilience_bench::server::Server;

const USAGE: &str =
    "usage: metrics_overhead [--rounds N (20)] [--per-round N (400)] [--warmup N (500)]";

struct Args {
    rounds: usize,
    per_round: usize,
    warmup: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        rounds: 20,
        per_round: 400,
        warmup: 500,
    };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            iter.next()
                .and_then(|n| n.parse().ok())
                .filter(|n| (1..=1_000_000).contains(n))
                .ok_or_else(|| format!("{name} needs a count from 1 to 1000000"))
        };
        match arg.as_str() {
            "--rounds" => args.rounds = number("--rounds")?,
            "--per-round" => args.per_round = number("--per-round")?,
            "--warmup" => args.warmup = number("--warmup")?,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(args)
}

/// An observer with no work: what the loop's observer calls cost by themselves.
struct Empty;

impl IntentObserver for Empty {}

/// `Peer::Resilient`'s client with `observer` attached.
fn with_observer(observer: impl IntentObserver) -> Arc<Client> {
    let policy = RetryPolicy::builder()
        .max_attempts(Settings::COMPARABLE.max_attempts)
        .backoff(Backoff::full_jitter(peers::BASE, peers::CAP))
        .observer(observer)
        .build()
        .expect("valid policy");
    let client = ResilientClient::from_builder(peers::bare_reqwest_builder(), policy)
        .expect("reqwest client");
    Arc::new(Client::Resilient {
        client,
        deadline: None,
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let server = Server::start().expect("loopback server");
    let url = server.url("/ok");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let prometheus = PrometheusBuilder::new().build_recorder();
    let handle = prometheus.handle();
    // (name, client, records into Prometheus)
    let rows: [(&str, Arc<Client>, bool); 4] = [
        (
            "reqwest-resilience",
            peers::build(Peer::Resilient, Settings::COMPARABLE),
            false,
        ),
        (
            "reqwest-resilience + an observer that does nothing",
            with_observer(Empty),
            false,
        ),
        (
            "reqwest-resilience + `Metrics`, no recorder",
            with_observer(Metrics::new()),
            false,
        ),
        (
            "reqwest-resilience + `Metrics`, Prometheus recorder",
            with_observer(Metrics::new()),
            true,
        ),
    ];
    let run = |client: &Client, n: usize, prometheus_on: bool| {
        let _local = prometheus_on.then(|| metrics::set_default_local_recorder(&prometheus));
        runtime.block_on(async {
            for _ in 0..n {
                let status = client.get(&url).await.status;
                assert_eq!(status, Some(StatusCode::OK));
            }
        });
    };
    for (_, client, prometheus_on) in &rows {
        run(client, args.warmup, *prometheus_on);
    }
    let mut wall = vec![Vec::new(); rows.len()];
    let mut cpu = vec![Vec::new(); rows.len()];
    for round in 0..args.rounds {
        for (i, (_, client, prometheus_on)) in rows.iter().enumerate() {
            let (started, cpu_started) = (Instant::now(), thread_cpu());
            run(client, args.per_round, *prometheus_on);
            let n = args.per_round as f64;
            wall[i].push(started.elapsed().as_secs_f64() * 1e6 / n);
            cpu[i].push((thread_cpu() - cpu_started).as_secs_f64() * 1e6 / n);
        }
        // As an exporter's upkeep would between scrapes.
        if round % 5 == 4 {
            handle.run_upkeep();
        }
    }
    let ratio = |series: &[Vec<f64>], i: usize| -> f64 {
        let mut ratios: Vec<f64> = series[i]
            .iter()
            .zip(&series[0])
            .map(|(row, base)| row / base)
            .collect();
        median(&mut ratios)
    };
    let table_rows: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .map(|(i, (name, _, _))| {
            vec![
                (*name).to_owned(),
                format!("{:.1}", median(&mut wall[i].clone())),
                format!("{:.3}×", ratio(&wall, i)),
                format!("{:.1}", median(&mut cpu[i].clone())),
                format!("{:.3}×", ratio(&cpu, i)),
            ]
        })
        .collect();
    println!(
        "\n## P1 with `Metrics` — sequential GET, 200 OK\n\n{} rounds × {} requests per row \
         after {} warm-up requests each, rows alternating; medians over rounds.\n",
        args.rounds, args.per_round, args.warmup
    );
    print!(
        "{}",
        table(
            &[
                " client",
                "wall µs / request",
                "wall vs no metrics",
                "client CPU µs / request",
                "CPU vs no metrics",
            ],
            &table_rows,
        )
    );
}
