//! P2 — throughput at 32 concurrent tasks.

use std::sync::Arc;
use std::time::Duration;

use reqwest_resilience_bench::cpu::thread_cpu;
use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::{Peer, Settings};
use reqwest_resilience_bench::server::Server;

use crate::load;
use crate::plan::Plan;
use crate::report::Report;
use crate::stats::{median, per_round_ratios, Spread};

const P2_TASKS: usize = 32;
/// The aim: the crate's time per request at most 2 % above the complete floor's.
const AIM: f64 = 1.0 / 1.02;

/// Runs P2 and adds its section (and its targets) to `report`.
pub async fn run(server: &Server, plan: &Plan, report: &mut Report) {
    let url: Arc<str> = server.url("/ok").into();
    let clients = load::build_all_with_reference(Settings::COMPARABLE);
    let limit = Duration::from_secs(60);
    for (_, client) in &clients {
        load::run_concurrent(client.clone(), url.clone(), P2_TASKS * 50, P2_TASKS, limit).await;
    }
    let mut rps = vec![Vec::with_capacity(plan.p2_rounds); clients.len()];
    let mut cpu = vec![Vec::with_capacity(plan.p2_rounds); clients.len()];
    for _ in 0..plan.p2_rounds {
        for (i, (peer, client)) in clients.iter().enumerate() {
            let cpu_started = thread_cpu();
            let (tally, wall) = load::run_concurrent(
                client.clone(),
                url.clone(),
                plan.p2_per_round,
                P2_TASKS,
                limit,
            )
            .await;
            assert_eq!(tally.ok, plan.p2_per_round, "{}", peer.name());
            rps[i].push(tally.done as f64 / wall.as_secs_f64());
            cpu[i].push((thread_cpu() - cpu_started).as_secs_f64() * 1e6 / tally.done as f64);
        }
    }
    let column = |peer: Peer| {
        clients
            .iter()
            .position(|(p, _)| *p == peer)
            .expect("every P2 row is built")
    };
    let (bare, ours) = (column(Peer::Bare), column(Peer::Resilient));
    let mut rows = Vec::new();
    for (i, (peer, _)) in clients.iter().enumerate() {
        let ratios = Spread::of(&per_round_ratios(&rps[i], &rps[bare]));
        let cpu_ratios = per_round_ratios(&cpu[i], &cpu[bare]);
        let [ratio, spread] = ratios.cells();
        rows.push(vec![
            peer.name().to_owned(),
            format!("{:.0}", median(&rps[i])),
            ratio,
            spread,
            format!("{:.1}", median(&cpu[i])),
            format!("{:.3}×", median(&cpu_ratios)),
        ]);
    }
    let mut text = format!(
        "\n## P2 — throughput: {P2_TASKS} concurrent tasks, GET 200 OK\n\n{} rounds × {} \
         requests per peer, interleaved, after a warm-up. Ratio = median over rounds of \
         (peer ÷ bare in the same round). Client CPU as in P1; the floors as in P1.\n\n",
        plan.p2_rounds, plan.p2_per_round
    );
    text.push_str(&table(
        &[
            " peer",
            "requests/s",
            "req/s ratio",
            "req/s ratio p25–p75",
            "client CPU µs / request",
            "CPU ratio",
        ],
        &rows,
    ));
    let against = |floor: Peer| {
        let i = column(floor);
        (
            Spread::of(&per_round_ratios(&rps[ours], &rps[i])),
            Spread::of(&per_round_ratios(&cpu[ours], &cpu[i])),
        )
    };
    let (floor_rps, floor_cpu) = against(Peer::Floor);
    let (partial_rps, partial_cpu) = against(Peer::FloorPartial);
    let floor_rows: Vec<Vec<String>> = [
        ("req/s", "floor", floor_rps),
        ("client CPU / request", "floor", floor_cpu),
        ("req/s", "partial floor", partial_rps),
        ("client CPU / request", "partial floor", partial_cpu),
    ]
    .into_iter()
    .map(|(measure, floor, spread)| {
        let [ratio, range] = spread.cells();
        vec![measure.to_owned(), floor.to_owned(), ratio, range]
    })
    .collect();
    text.push_str(
        "\nreqwest-resilience ÷ floor: median over rounds of (reqwest-resilience ÷ the \
         floor in the same round), with the spread of those per-round ratios (for req/s, \
         higher is better). The partial floor is a reference row.\n\n",
    );
    text.push_str(&table(
        &[" measure", " against", "ratio", "ratio p25–p75"],
        &floor_rows,
    ));
    report.section(&text);
    report.summary.p2 = Some(median(&per_round_ratios(&rps[ours], &rps[bare])));
    report.summary.p2_floor = Some(floor_rps.median);
    report.target(
        "P2",
        format!("aim: req/s ÷ floor ≥ {AIM:.3} (1 ÷ 1.02)"),
        floor_rps.described(),
        floor_rps.median >= AIM,
    );
}
