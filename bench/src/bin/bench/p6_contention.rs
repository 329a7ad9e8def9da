//! P6 — Brooker's contention simulation.

use std::time::Instant;

use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::sim::{self, Strategy};

use crate::plan::Plan;
use crate::report::Report;

/// Runs P6 and adds its section (and its targets) to `report`.
pub fn run(plan: &Plan, report: &mut Report) {
    let started = Instant::now();
    let sizes: Vec<usize> = (10..=190).step_by(10).collect();
    for (s, strategy) in Strategy::ALL.iter().enumerate() {
        let points = sizes
            .iter()
            .map(|&n| {
                let seed = 0x5EED_0000 + (s as u64) * 1_000 + n as u64;
                sim::simulate(*strategy, n, plan.p6_runs, seed)
            })
            .collect();
        report.p6_points.push((*strategy, points));
    }
    let mut headers = vec!["N".to_owned()];
    for strategy in Strategy::ALL {
        headers.push(format!("{} calls", strategy.short()));
        headers.push(format!("{} ms", strategy.short()));
    }
    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut row = vec![n.to_string()];
            for (_, points) in &report.p6_points {
                row.push(format!("{:.0}", points[i].calls));
                row.push(format!("{:.0}", points[i].time_ms));
            }
            row
        })
        .collect();
    let mut text = format!(
        "\n## P6 — contention simulation (Brooker 2015), virtual time\n\nN clients each \
         make one optimistic-concurrency update of one row (read version, conditional \
         write; a write fails if another write landed in between, then back off and read \
         again). Network delay |Normal(10 ms, 2 ms)| per hop, base 5 ms, cap 2 s, {} runs \
         per point, seeded `StdRng`. *Calls* = writes reaching the server (as in the \
         published simulator), mean per run; *ms* = mean completion time. Full and \
         decorrelated jitter use the crate's `Backoff`; exponential without jitter and \
         equal jitter are local to the bench. Simulated in {:.1} s.\n\n",
        plan.p6_runs,
        started.elapsed().as_secs_f64()
    );
    text.push_str(&table(&header_refs, &rows));
    let at_100 = sizes.iter().position(|&n| n == 100).expect("N = 100");
    let mut comparison = Vec::new();
    for (strategy, points) in &report.p6_points {
        let ours = points[at_100].calls;
        let (reference, deviation, within) = match strategy.reference_calls_at_100() {
            Some(reference) => {
                let deviation = (ours - reference) / reference * 100.0;
                (
                    format!("{reference:.0}"),
                    format!("{deviation:+.1} %"),
                    if deviation.abs() <= 10.0 {
                        "yes"
                    } else {
                        "**no**"
                    },
                )
            }
            None => ("—".into(), "—".into(), "—"),
        };
        comparison.push(vec![
            strategy.name().to_owned(),
            format!("{ours:.0}"),
            reference,
            deviation,
            within.to_owned(),
        ]);
    }
    text.push_str("\nAt N = 100 against a rerun of the published simulator:\n\n");
    text.push_str(&table(
        &[
            " strategy",
            "calls (ours)",
            "calls (reference)",
            "deviation",
            "within ±10 %",
        ],
        &comparison,
    ));
    report.section(&text);
    let calls_at = |wanted: Strategy| {
        report
            .p6_points
            .iter()
            .find(|(s, _)| *s == wanted)
            .map(|(_, points)| points[at_100].calls)
    };
    report.summary.p6_full = calls_at(Strategy::FullJitter);
    report.summary.p6_decorrelated = calls_at(Strategy::Decorrelated);
    let mut all_within = true;
    let mut values = Vec::new();
    for strategy in Strategy::ALL {
        if let (Some(reference), Some(ours)) =
            (strategy.reference_calls_at_100(), calls_at(strategy))
        {
            all_within &= ((ours - reference) / reference).abs() <= 0.10;
            values.push(format!("{} {ours:.0}/{reference:.0}", strategy.short()));
        }
    }
    report.target(
        "P6",
        "calls at N = 100 within ±10 % of reference".into(),
        values.join(", "),
        all_within,
    );
}
