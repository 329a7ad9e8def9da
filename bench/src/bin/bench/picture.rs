//! The picture for the README: P6 and P3 as one SVG.

use reqwest_resilience_bench::peers::Peer;
use reqwest_resilience_bench::svg;

use crate::report::Report;

/// P6's two panels and P3's bars, from this run.
pub fn render_svg(report: &Report, mode: &str) -> String {
    const COLORS: [&str; 5] = ["#e41a1c", "#984ea3", "#377eb8", "#4daf4a", "#ff7f00"];
    let calls: Vec<svg::Series<'_>> = report
        .p6_points
        .iter()
        .enumerate()
        .map(|(i, (strategy, points))| svg::Series {
            name: strategy.name(),
            color: COLORS[i % COLORS.len()],
            points: points.iter().map(|p| (p.clients as f64, p.calls)).collect(),
        })
        .collect();
    let times: Vec<svg::Series<'_>> = report
        .p6_points
        .iter()
        .enumerate()
        .map(|(i, (strategy, points))| svg::Series {
            name: strategy.name(),
            color: COLORS[i % COLORS.len()],
            points: points
                .iter()
                .map(|p| (p.clients as f64, p.time_ms))
                .collect(),
        })
        .collect();
    let bars: Vec<svg::Bar<'_>> = report
        .p3_bars
        .iter()
        .map(|(peer, value)| svg::Bar {
            label: peer.label_lines(),
            value: *value,
            highlight: *peer == Peer::Resilient,
        })
        .collect();
    svg::render(
        &calls,
        &times,
        &bars,
        &format!(
            "{mode} run of bench/ — P6: Brooker's OCC simulation, base 5 ms, cap 2 s; \
             P3: 503 outage, 4 attempts, backoff 10–100 ms"
        ),
    )
}
