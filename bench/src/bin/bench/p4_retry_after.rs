//! P4 — Retry-After adherence.

use std::time::{Duration, SystemTime};

use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::{Peer, Settings};
use reqwest_resilience_bench::server::Server;

use crate::load;
use crate::plan::Plan;
use crate::report::Report;
use crate::stats::median;

/// Runs P4 and adds its section (and its targets) to `report`.
pub async fn run(server: &Server, plan: &Plan, report: &mut Report) {
    // Budgets off: 2 × N throttled intents at once on a fresh client would otherwise
    // exhaust reqwest-resilience's reserve (10 retries per 10 s) and reqwest's, and
    // the figure would count refusals instead of adherence.
    let clients = load::build_all(Settings {
        budget: false,
        ..Settings::COMPARABLE
    });
    let scenarios = [
        ("secs", "`Retry-After: 1`"),
        ("date", "IMF-fixdate ≥ 2 s ahead"),
    ];
    let mut tasks = Vec::new();
    for (peer, client) in &clients {
        for (scenario, _) in scenarios {
            for i in 0..plan.p4_intents {
                let url = server.url(&format!("/ra/{scenario}/{}/{i}", peer.short()));
                let client = client.clone();
                tasks.push(tokio::spawn(async move { client.get(&url).await }));
            }
        }
    }
    let all = futures_util::future::join_all(tasks);
    if tokio::time::timeout(Duration::from_secs(30), all)
        .await
        .is_err()
    {
        report.section("\n(P4 hit its 30 s time limit; results below are partial.)\n");
    }
    let mut rows = Vec::new();
    let mut ours_early = 0;
    for (peer, _) in &clients {
        for (scenario, label) in scenarios {
            let traces = server.traces(&format!("/ra/{scenario}/{}/", peer.short()));
            let mut gaps = Vec::new();
            let mut margins = Vec::new();
            let mut early = 0;
            let mut retried = 0;
            for trace in traces.values() {
                let (Some(first), Some(not_before)) = (trace.arrivals.first(), trace.not_before)
                else {
                    continue;
                };
                if trace.arrivals.len() < 2 {
                    continue;
                }
                retried += 1;
                let secs = |a: &SystemTime, b: &SystemTime| match a.duration_since(*b) {
                    Ok(d) => d.as_secs_f64(),
                    Err(e) => -e.duration().as_secs_f64(),
                };
                gaps.push(secs(&trace.arrivals[1], first) * 1000.0);
                margins.push(secs(&trace.arrivals[1], &not_before) * 1000.0);
                early += trace.arrivals[1..]
                    .iter()
                    .filter(|arrival| **arrival < not_before)
                    .count();
            }
            if *peer == Peer::Resilient {
                ours_early += early;
            }
            let verdict = if retried == 0 {
                "does not retry".to_owned()
            } else if early == 0 {
                "honours Retry-After".to_owned()
            } else {
                "**ignores Retry-After**".to_owned()
            };
            let fmt_ms = |v: f64| {
                if v.is_nan() {
                    "—".to_owned()
                } else {
                    format!("{v:.0}")
                }
            };
            rows.push(vec![
                peer.name().to_owned(),
                label.to_owned(),
                format!("{}/{}", retried, traces.len()),
                fmt_ms(median(&gaps)),
                fmt_ms(margins.iter().copied().fold(f64::NAN, f64::min)),
                early.to_string(),
                verdict,
            ]);
        }
    }
    let mut text = format!(
        "\n## P4 — Retry-After adherence\n\nThe first attempt of each intent gets `503` \
         with `Retry-After`; later attempts get `200`. {} intents per peer and scenario, \
         all at once, retry budgets off (with the default budget a fresh \
         reqwest-resilience client grants 10 % of the intents + 10 retries per 10 s, so \
         most of a burst of throttled intents would give up instead of waiting). *Gap* = time between the two arrivals at the server; *margin* = \
         second arrival − earliest time allowed (negative = early). *Early* counts \
         attempts that arrived before the allowed time (target 0).\n\n",
        plan.p4_intents
    );
    text.push_str(&table(
        &[
            " peer",
            " scenario",
            "retried",
            "gap ms (median)",
            "margin ms (min)",
            "early",
            " verdict",
        ],
        &rows,
    ));
    text.push_str(
        "\nreqwest-retry's `RetryTransientMiddleware` and reqwest's retry layer read no \
         `Retry-After`; backon does not either unless the caller writes an `.adjust(…)` \
         hook that parses it.\n",
    );
    report.section(&text);
    report.summary.p4_early = Some(ours_early);
    report.target(
        "P4",
        "0 early attempts".into(),
        ours_early.to_string(),
        ours_early == 0,
    );
}
