//! P7 — memory.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::{self, Peer, Settings};
use reqwest_resilience_bench::server::Server;

use crate::load;
use crate::plan::Plan;
use crate::report::Report;

const P7_CONCURRENCY: usize = 32;
const P7_CHUNKS: usize = 4;

/// Runs P7 and adds its section (and its targets) to `report`.
pub async fn run(server: &Server, plan: &Plan, report: &mut Report) {
    let url: Arc<str> = server.url("/ok").into();
    let client = peers::build(Peer::Resilient, Settings::COMPARABLE);
    let limit = Duration::from_secs(300);
    let warmup = (plan.p7_intents / 20).max(5_000);
    load::run_concurrent(client.clone(), url.clone(), warmup, P7_CONCURRENCY, limit).await;
    let before = vm_rss_kib().unwrap_or(0);
    let mut samples = Vec::new();
    let mut done = 0usize;
    let started = Instant::now();
    for _ in 0..P7_CHUNKS {
        let chunk = plan.p7_intents / P7_CHUNKS;
        let (tally, _) =
            load::run_concurrent(client.clone(), url.clone(), chunk, P7_CONCURRENCY, limit).await;
        assert_eq!(tally.ok, tally.done, "P7: every intent should succeed");
        done += tally.done;
        samples.push((done, vm_rss_kib().unwrap_or(0)));
    }
    let wall = started.elapsed();
    let after = samples.last().map_or(before, |s| s.1);
    let growth = after - before;
    let mut rows = vec![vec![
        "0 (after warm-up)".to_owned(),
        before.to_string(),
        "0".into(),
    ]];
    for (count, rss) in &samples {
        rows.push(vec![
            count.to_string(),
            rss.to_string(),
            format!("{:+}", rss - before),
        ]);
    }
    let mut text = format!(
        "\n## P7 — memory: RSS over {} intents through one ResilientClient\n\nSuccess \
         path (`/ok`), {P7_CONCURRENCY} concurrent tasks, after {warmup} warm-up \
         intents; VmRSS from /proc/self/status (whole process, server thread included). \
         {:.0} intents/s.\n\n",
        done,
        done as f64 / wall.as_secs_f64()
    );
    text.push_str(&table(&[" intents", "VmRSS KiB", "growth KiB"], &rows));
    let _ = writeln!(
        text,
        "\nGrowth: **{growth} KiB** ({:.3} bytes per intent).",
        growth as f64 * 1024.0 / done.max(1) as f64
    );
    report.section(&text);
    report.summary.p7_kib = Some(growth);
}

fn vm_rss_kib() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}
