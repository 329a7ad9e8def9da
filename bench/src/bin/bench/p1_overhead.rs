//! P1 — sequential overhead.

use std::time::Instant;

use reqwest::StatusCode;
use reqwest_resilience_bench::cpu::thread_cpu;
use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::{Peer, Settings};
use reqwest_resilience_bench::server::Server;

use crate::load;
use crate::plan::Plan;
use crate::report::Report;
use crate::stats::{median, quantile};

/// Runs P1 and adds its section (and its targets) to `report`.
pub async fn run(server: &Server, plan: &Plan, report: &mut Report) {
    let url = server.url("/ok");
    let clients = load::build_all_with_reference(Settings::COMPARABLE);
    for (peer, client) in &clients {
        for _ in 0..plan.p1_warmup {
            let status = client.get(&url).await.status;
            assert_eq!(status, Some(StatusCode::OK), "{} warm-up", peer.name());
        }
    }
    // wall[peer][round] and cpu[peer][round], in µs per request.
    let mut wall = vec![Vec::with_capacity(plan.p1_rounds); clients.len()];
    let mut cpu = vec![Vec::with_capacity(plan.p1_rounds); clients.len()];
    for _ in 0..plan.p1_rounds {
        for (i, (peer, client)) in clients.iter().enumerate() {
            let (started, cpu_started) = (Instant::now(), thread_cpu());
            for _ in 0..plan.p1_per_round {
                let status = client.get(&url).await.status;
                assert_eq!(status, Some(StatusCode::OK), "{}", peer.name());
            }
            let n = plan.p1_per_round as f64;
            wall[i].push(started.elapsed().as_secs_f64() * 1e6 / n);
            cpu[i].push((thread_cpu() - cpu_started).as_secs_f64() * 1e6 / n);
        }
    }
    let ratios = |series: &[Vec<f64>], i: usize| -> Vec<f64> {
        series[i]
            .iter()
            .zip(&series[0])
            .map(|(peer, bare)| peer / bare)
            .collect()
    };
    let mut rows = Vec::new();
    let mut medians = Vec::new();
    for (i, (peer, _)) in clients.iter().enumerate() {
        let r = ratios(&wall, i);
        let c = ratios(&cpu, i);
        medians.push((*peer, median(&r), median(&c)));
        rows.push(vec![
            peer.name().to_owned(),
            format!("{:.1}", median(&wall[i])),
            format!("{:.3}×", median(&r)),
            format!("{:.3}–{:.3}", quantile(&r, 0.25), quantile(&r, 0.75)),
            format!("{:.1}", median(&cpu[i])),
            format!("{:.3}×", median(&c)),
        ]);
    }
    let mut text = format!(
        "\n## P1 — overhead: sequential GET, 200 OK\n\n{} rounds × {} requests per peer, \
         interleaved, after {} warm-up requests each. Ratio = median over rounds of \
         (peer ÷ bare in the same round). *Wall* is the time per request (the figure's \
         measure, in SUMMARY); *client CPU* is the client thread's CPU time per request \
         (`CLOCK_THREAD_CPUTIME_ID`), which other processes on a busy machine do not \
         inflate. Per intent, reqwest-resilience with its defaults also sets a \
         per-attempt timeout (10 s, clipped to the 30 s deadline), sends a fresh \
         `X-Request-Id`, keeps a copy of the request for a possible retry and attaches \
         the attempt log to the response; the bare client does none of this. The \
         reference rows: bare reqwest with the same 10 s per-request timeout (what a \
         careful user pays for that protection without this crate), the floor, and \
         this crate without deadline and attempt timeout. The floor row is bare \
         reqwest doing by hand the least the crate's defaults require: client-level \
         10 s timeout, a hand copy of the request kept, a fresh UUID request-id \
         header, one response extension; bare to floor is what the defaults cost done \
         as cheaply as we know how, floor to reqwest-resilience is the crate's own.\n\n",
        plan.p1_rounds, plan.p1_per_round, plan.p1_warmup
    );
    text.push_str(&table(
        &[
            " peer",
            "wall µs / request",
            "wall ratio",
            "wall ratio p25–p75",
            "client CPU µs / request",
            "CPU ratio",
        ],
        &rows,
    ));
    report.section(&text);
    let (_, ours, ours_cpu) = medians[1];
    // The peers proper: not bare (0), not ours (1), not the reference rows (last).
    let peers = &medians[2..Peer::ALL.len()];
    let best_peer = peers.iter().map(|m| m.1).fold(f64::INFINITY, f64::min);
    let best_peer_cpu = peers.iter().map(|m| m.2).fold(f64::INFINITY, f64::min);
    let floor = medians
        .iter()
        .find(|(peer, _, _)| *peer == Peer::Floor)
        .map_or(f64::NAN, |m| m.1);
    report.summary.p1 = Some(ours);
    report.target(
        "P1",
        "≤ 1.03× bare (wall)".into(),
        format!("{ours:.3}× (client CPU {ours_cpu:.3}×); the floor row: {floor:.3}×"),
        ours <= 1.03,
    );
    report.target(
        "P1",
        "lower than every peer (wall)".into(),
        format!(
            "{ours:.3}× vs best peer {best_peer:.3}× (CPU {ours_cpu:.3}× vs {best_peer_cpu:.3}×)"
        ),
        ours < best_peer,
    );
}
