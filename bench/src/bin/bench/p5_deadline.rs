//! P5 — deadline overshoot.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::{self, Peer, Settings};
use reqwest_resilience_bench::server::Server;

use crate::report::Report;
use crate::stats::median;

const P5_INTENTS: usize = 20;
const P5_DEADLINE: Duration = Duration::from_secs(1);
const P5_ATTEMPTS: u32 = 10;

/// Runs P5 and adds its section (and its targets) to `report`.
pub async fn run(server: &Server, report: &mut Report) {
    let url = server.url("/slow503");
    let counters = server.counters();
    // Budgets off (reqwest-resilience and reqwest's layer): with 20 intents a default
    // budget ends them after a retry or two, and the deadline would never be tested.
    let settings = Settings {
        max_attempts: P5_ATTEMPTS,
        deadline: Some(P5_DEADLINE),
        budget: false,
    };
    let mut rows = Vec::new();
    for peer in Peer::ALL {
        let client = peers::build(peer, settings);
        let before = counters.slow.load(Ordering::Relaxed);
        let mut tasks = Vec::new();
        for _ in 0..P5_INTENTS {
            let (client, url) = (client.clone(), url.clone());
            tasks.push(tokio::spawn(async move {
                let started = Instant::now();
                let outcome = client.get(&url).await;
                (started.elapsed(), outcome.status)
            }));
        }
        let all = futures_util::future::join_all(tasks);
        let Ok(results) = tokio::time::timeout(Duration::from_secs(20), all).await else {
            rows.push(vec![peer.name().to_owned(), "timed out after 20 s".into()]);
            continue;
        };
        let walls: Vec<f64> = results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|(wall, _)| wall.as_secs_f64() * 1000.0)
            .collect();
        let max = walls.iter().copied().fold(f64::MIN, f64::max);
        let overshoot = max - P5_DEADLINE.as_secs_f64() * 1000.0;
        let attempts = (counters.slow.load(Ordering::Relaxed) - before) as f64 / P5_INTENTS as f64;
        let (setting, note) = match peer {
            Peer::Bare | Peer::BareTimeout | Peer::Floor | Peer::FloorPartial => (
                "none (no retries)",
                "one 150 ms attempt: the deadline never binds",
            ),
            Peer::Resilient
            | Peer::ResilientNoTimer
            | Peer::ResilientFromParts
            | Peer::ResilientObserved => (
                "`.deadline(1 s)` on the request",
                "attempt timeout clipped to the time left; no pause that would end past it",
            ),
            Peer::ReqwestRetry => (
                "`build_with_total_retry_duration_and_max_retries(1 s, 9)`",
                "checked only before scheduling a retry: the attempt in flight and the \
                 sleep run past it",
            ),
            Peer::Builtin => (
                "request `.timeout(1 s)` (total, wraps the retry layer)",
                "a real deadline (budget off here); retries at once, no backoff",
            ),
            Peer::Backon => (
                "`with_total_delay(Some(1 s))`",
                "bounds the sum of sleeps only, not the time in attempts: no wall-clock \
                 deadline",
            ),
        };
        if peer == Peer::Resilient {
            report.summary.p5_ms = Some(overshoot);
            report.target(
                "P5",
                "overshoot ≤ 10 ms".into(),
                format!("{overshoot:.1} ms"),
                overshoot <= 10.0,
            );
        }
        rows.push(vec![
            peer.name().to_owned(),
            setting.to_owned(),
            format!("{:.0}", median(&walls)),
            format!("{max:.0}"),
            format!("{overshoot:+.1}"),
            format!("{attempts:.1}"),
            note.to_owned(),
        ]);
    }
    let mut text = format!(
        "\n## P5 — deadline overshoot\n\nEvery attempt answers `503` after 150 ms. \
         Deadline 1 s, {P5_INTENTS} intents at once, up to {P5_ATTEMPTS} attempts and no \
         retry budget (so the deadline, not the attempt limit or a budget, ends the \
         intent), backoff 10–100 ms. \
         Overshoot = slowest intent's wall time − 1 s (negative: gave up before the \
         deadline).\n\n"
    );
    text.push_str(&table(
        &[
            " peer",
            " total-time setting",
            "wall ms (median)",
            "wall ms (max)",
            "overshoot ms",
            "attempts / intent",
            " note",
        ],
        &rows,
    ));
    report.section(&text);
}
