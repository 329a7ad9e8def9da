//! P3 — amplification in a total outage.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::{self, Peer, Settings};
use reqwest_resilience_bench::server::Server;

use crate::load;
use crate::plan::Plan;
use crate::report::Report;

const P3_CONCURRENCY: usize = 50;

/// Runs P3 and adds its section (and its targets) to `report`.
pub async fn run(server: &Server, plan: &Plan, report: &mut Report) {
    let url: Arc<str> = server.url("/down").into();
    let counters = server.counters();
    let mut rows = Vec::new();
    for peer in Peer::ALL {
        // A fresh client per peer: budgets start empty.
        let client = peers::build(peer, Settings::COMPARABLE);
        let requests_before = counters.down.load(Ordering::Relaxed);
        let connections_before = counters.connections.load(Ordering::Relaxed);
        let (tally, wall) = load::run_concurrent(
            client,
            url.clone(),
            plan.p3_intents,
            P3_CONCURRENCY,
            plan.p3_limit,
        )
        .await;
        let received = counters.down.load(Ordering::Relaxed) - requests_before;
        let connections = counters.connections.load(Ordering::Relaxed) - connections_before;
        let amplification = received as f64 / tally.done.max(1) as f64;
        report.p3_bars.push((peer, Some(amplification)));
        if peer == Peer::Resilient {
            report.summary.p3 = Some(amplification);
            report.target(
                "P3",
                "≤ 1.15 requests per intent".into(),
                format!("{amplification:.3}"),
                amplification <= 1.15,
            );
        }
        let mut note = peer.settings_note().to_owned();
        if tally.done < plan.p3_intents {
            let _ = write!(note, "; stopped at the {:?} time limit", plan.p3_limit);
        }
        if tally.failed + tally.other > 0 {
            let _ = write!(
                note,
                "; {} intents ended without a 503",
                tally.failed + tally.other
            );
        }
        rows.push(vec![
            peer.name().to_owned(),
            tally.done.to_string(),
            received.to_string(),
            format!("{amplification:.3}"),
            connections.to_string(),
            format!("{:.1}", wall.as_secs_f64()),
            note,
        ]);
    }
    let mut text = format!(
        "\n## P3 — amplification: total 503 outage\n\n{} GET intents per peer at \
         concurrency {P3_CONCURRENCY}, every request answered `503` (no Retry-After). \
         Amplification = requests received by the server ÷ intents. 4 attempts, backoff \
         10–100 ms where the peer has one; real sleeps.\n\n",
        plan.p3_intents
    );
    text.push_str(&table(
        &[
            " peer",
            "intents",
            "requests received",
            "amplification",
            "connections opened",
            "wall s",
            " settings",
        ],
        &rows,
    ));
    report.section(&text);
}
