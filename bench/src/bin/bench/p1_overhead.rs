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
use crate::stats::{median, per_round_ratios, Spread};

/// The aim: the crate costs at most 2 % more than the complete floor.
const AIM: f64 = 1.02;

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
    let column = |peer: Peer| {
        clients
            .iter()
            .position(|(p, _)| *p == peer)
            .expect("every P1 row is built")
    };
    let (bare, ours) = (column(Peer::Bare), column(Peer::Resilient));
    let mut rows = Vec::new();
    let mut versus_bare = Vec::new();
    for (i, (peer, _)) in clients.iter().enumerate() {
        let r = Spread::of(&per_round_ratios(&wall[i], &wall[bare]));
        let c = Spread::of(&per_round_ratios(&cpu[i], &cpu[bare]));
        versus_bare.push((*peer, r.median, c.median));
        let [ratio, spread] = r.cells();
        rows.push(vec![
            peer.name().to_owned(),
            format!("{:.1}", median(&wall[i])),
            ratio,
            spread,
            format!("{:.1}", median(&cpu[i])),
            format!("{:.3}×", c.median),
        ]);
    }
    let mut text = format!(
        "\n## P1 — overhead: sequential GET, 200 OK\n\n{} rounds × {} requests per peer, \
         interleaved, after {} warm-up requests each. Ratio = median over rounds of \
         (peer ÷ bare in the same round). *Wall* is the time per request (the figure's \
         measure, in SUMMARY); *client CPU* is the client thread's CPU time per request \
         (`CLOCK_THREAD_CPUTIME_ID`), which other processes on a busy machine do not \
         inflate. Per intent, reqwest-resilience with its defaults also sets a \
         per-attempt timeout (10 s, clipped to the 30 s deadline), deposits into its \
         retry budget, opens an intent and an attempt span, sends a fresh \
         `X-Request-Id`, keeps a copy of the request for a possible retry, classifies \
         the response and attaches the attempt log to it; the bare client does none of \
         this. The reference rows: bare reqwest with the same 10 s per-request timeout \
         (what a careful user pays for that protection without this crate), the two \
         floors, and this crate without deadline and attempt timeout. The floor is bare \
         reqwest doing by hand, as cheaply as we know how, all that the crate's \
         defaults do per request: client-level 10 s timeout, a budget deposit (an \
         atomic add into a 10 s window), the intent and attempt spans (disabled: no \
         subscriber), the clock read at the attempt's start and end, a hand copy of the \
         request kept, a fresh UUID request-id header, the status classified (transient \
         status, idempotent method), one response extension. The partial floor leaves \
         out the deposit, the spans, the clock reads and the classification. Bare to floor is what the defaults \
         cost; floor to reqwest-resilience is the crate's own.\n\n",
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
    let against = |floor: Peer| {
        let i = column(floor);
        (
            Spread::of(&per_round_ratios(&wall[ours], &wall[i])),
            Spread::of(&per_round_ratios(&cpu[ours], &cpu[i])),
        )
    };
    let (floor_wall, floor_cpu) = against(Peer::Floor);
    let (partial_wall, partial_cpu) = against(Peer::FloorPartial);
    let floor_rows: Vec<Vec<String>> = [
        ("wall", "floor", floor_wall),
        ("client CPU", "floor", floor_cpu),
        ("wall", "partial floor", partial_wall),
        ("client CPU", "partial floor", partial_cpu),
    ]
    .into_iter()
    .map(|(measure, floor, spread)| {
        let [ratio, range] = spread.cells();
        vec![measure.to_owned(), floor.to_owned(), ratio, range]
    })
    .collect();
    text.push_str(
        "\nreqwest-resilience ÷ floor: median over rounds of (reqwest-resilience ÷ the \
         floor in the same round), with the spread of those per-round ratios. Whether a \
         change made the send path slower is not read here: a timed difference under \
         about 1 % is not resolved, so `bench/scripts/against_commit.sh REV instructions` \
         counts the client thread's instructions per request of the crate at REV and of \
         the working tree, side by side (see docs/bench/hot-path.md); a busy machine \
         does not move that count.\n\n",
    );
    text.push_str(&table(
        &[" measure", " against", "ratio", "ratio p25–p75"],
        &floor_rows,
    ));
    report.section(&text);
    report.summary.p1 = Some(versus_bare[ours].1);
    report.summary.p1_floor = Some(floor_wall.median);
    aim(report, [floor_wall, floor_cpu]);
    let (_, ours_wall, ours_cpu) = versus_bare[ours];
    // The peers proper: not bare (0), not ours (1), not the reference rows (last).
    let peers = &versus_bare[2..Peer::ALL.len()];
    let best_peer = peers.iter().map(|m| m.1).fold(f64::INFINITY, f64::min);
    let best_peer_cpu = peers.iter().map(|m| m.2).fold(f64::INFINITY, f64::min);
    report.target(
        "P1",
        "lower than every peer (wall)".into(),
        format!(
            "{ours_wall:.3}× vs best peer {best_peer:.3}× (CPU {ours_cpu:.3}× vs {best_peer_cpu:.3}×)"
        ),
        ours_wall < best_peer,
    );
}

/// The aim against the complete floor, for [wall, client CPU]. A change on the send
/// path is held to its instruction count against the commit before it
/// (`bench/scripts/against_commit.sh REV instructions`), which timed rows cannot resolve.
fn aim(report: &mut Report, floor: [Spread; 2]) {
    for (measure, floor) in ["wall", "client CPU"].into_iter().zip(floor) {
        report.target(
            "P1",
            format!("aim: ÷ floor ≤ {AIM:.2} ({measure})"),
            floor.described(),
            floor.median <= AIM,
        );
    }
}
