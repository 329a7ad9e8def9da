//! P8 — allocations per intent (in the `p8_allocs` binary: its own global allocator).

use reqwest_resilience_bench::p8_child;
use reqwest_resilience_bench::peers::Peer;

use crate::report::Report;

/// Runs P8 and adds its section (and its targets) to `report`.
pub fn run(report: &mut Report) {
    let figures = match p8_child::run() {
        Ok(figures) => figures,
        Err(message) => {
            report.section(&format!(
                "\n## P8 — allocations per successful single-attempt intent\n\nNot \
                 measured: {message}\n"
            ));
            return;
        }
    };
    report.section(&figures.markdown);
    let (Some(bare), Some(ours), Some(peer)) = (
        figures.allocations(Peer::Bare.short()),
        figures.allocations(Peer::Resilient.short()),
        figures.allocations(Peer::ReqwestRetry.short()),
    ) else {
        report.section("\n(P8: a row is missing from p8_allocs' figures.)\n");
        return;
    };
    report.summary.p8_allocs = Some(ours - bare);
    report.target(
        "P8",
        "fewer allocations per intent than reqwest-retry".into(),
        format!(
            "{ours:.1} vs {peer:.1} (bare {bare:.1}: +{:.1} vs +{:.1})",
            ours - bare,
            peer - bare
        ),
        ours < peer,
    );
}
