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
use crate::stats::{median, quantile};

const P2_TASKS: usize = 32;

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
    let mut rows = Vec::new();
    let (mut ours, mut floor) = ((f64::NAN, f64::NAN), f64::NAN);
    for (i, (peer, _)) in clients.iter().enumerate() {
        let ratios: Vec<f64> = rps[i].iter().zip(&rps[0]).map(|(p, b)| p / b).collect();
        let cpu_ratios: Vec<f64> = cpu[i].iter().zip(&cpu[0]).map(|(p, b)| p / b).collect();
        match peer {
            Peer::Resilient => ours = (median(&ratios), median(&cpu_ratios)),
            Peer::Floor => floor = median(&ratios),
            _ => {}
        }
        rows.push(vec![
            peer.name().to_owned(),
            format!("{:.0}", median(&rps[i])),
            format!("{:.3}×", median(&ratios)),
            format!(
                "{:.3}–{:.3}",
                quantile(&ratios, 0.25),
                quantile(&ratios, 0.75)
            ),
            format!("{:.1}", median(&cpu[i])),
            format!("{:.3}×", median(&cpu_ratios)),
        ]);
    }
    let mut text = format!(
        "\n## P2 — throughput: {P2_TASKS} concurrent tasks, GET 200 OK\n\n{} rounds × {} \
         requests per peer, interleaved, after a warm-up. Ratio = median over rounds of \
         (peer ÷ bare in the same round). Client CPU as in P1.\n\n",
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
    report.section(&text);
    report.summary.p2 = Some(ours.0);
    report.target(
        "P2",
        "≥ 0.97× bare (req/s)".into(),
        format!(
            "{:.3}× (client CPU per request {:.3}×); the floor row: {floor:.3}×",
            ours.0, ours.1
        ),
        ours.0 >= 0.97,
    );
}
