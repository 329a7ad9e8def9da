//! What a run collects: the markdown, the SUMMARY figures, the targets table.

use std::fmt::Write as _;

use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::Peer;
use reqwest_resilience_bench::sim::{self, Strategy};

/// What the SUMMARY line needs; `None` for a figure not run.
#[derive(Debug, Default)]
pub struct Summary {
    pub p1: Option<f64>,
    /// reqwest-resilience ÷ the complete floor, wall (median of per-round ratios).
    pub p1_floor: Option<f64>,
    pub p2: Option<f64>,
    /// reqwest-resilience's req/s ÷ the complete floor's (median of per-round ratios).
    pub p2_floor: Option<f64>,
    pub p3: Option<f64>,
    pub p4_early: Option<usize>,
    pub p5_ms: Option<f64>,
    pub p6_full: Option<f64>,
    pub p6_decorrelated: Option<f64>,
    pub p7_kib: Option<i64>,
    /// Allocations per intent, reqwest-resilience minus bare reqwest.
    pub p8_allocs: Option<f64>,
    /// P9, the worst row with a breaker (fast 503 and refused connections): attempts
    /// per intent from 3 s into the outage, worst instance.
    pub p9_outage: Option<f64>,
    /// P9, every row and kind of outage: seconds from recovery to a 1-s window
    /// with 99 % successes, worst instance.
    pub p9_recovery_s: Option<f64>,
    /// P9, the worst gated row: intents refused in the 5 % random-503 run.
    pub p9_refused_at_5pct: Option<usize>,
    /// P9, every gated row: intents refused after one failure from a cold start.
    pub p9_cold_refused: Option<usize>,
    /// P9, every gated row: intents to a healthy authority refused beside a down one.
    pub p9_isolation_refused: Option<usize>,
    /// Durable intents/s ÷ the database's raw rows/s (P10).
    pub p10_sqlite: Option<f64>,
    pub p10_postgres: Option<f64>,
    /// Durable intents/s ÷ the plainest INSERT + UPDATE by key's rows/s (P10).
    pub p10_sqlite_plain: Option<f64>,
    pub p10_postgres_plain: Option<f64>,
    /// tower-idempotency's layer: requests/s ÷ the bare route's (P11, HTTP, 32 tasks).
    pub p11: Option<f64>,
    /// The layer's added µs per request in process, 100 B bodies (P11).
    pub p11_added_us: Option<f64>,
    /// Layered requests/s with each SQL store ÷ the database's raw rows/s (P11).
    pub p11_sqlite: Option<f64>,
    pub p11_postgres: Option<f64>,
    /// A one-row PostgreSQL transaction's time with the outbox enqueue ÷ without,
    /// 1 producer and 32 (P12).
    pub p12_enqueue_ratio: Option<f64>,
    pub p12_enqueue_ratio_32: Option<f64>,
    /// At 32 producers: with `pg_notify` inside the transaction ÷ the enqueue alone (P12).
    pub p12_notify_ratio_32: Option<f64>,
    /// The same transaction with the peer queue's enqueue (underway 0.2's
    /// statement) ÷ without, 1 producer (P12).
    pub p12_peer_enqueue_ratio: Option<f64>,
    /// Commit-to-first-byte p99, idle relay in another process (P12).
    pub p12_commit_to_byte_p99_ms: Option<f64>,
    /// Relay intents/s ÷ its row writes' raw rate (P12).
    pub p12_relay_ratio: Option<f64>,
    /// Hedged ÷ unhedged p99 and p99.9, the better of the fixed and adaptive rows,
    /// worst run (P13).
    pub p13_p99_ratio: Option<f64>,
    pub p13_p999_ratio: Option<f64>,
    /// That row's extra requests at the server ÷ intents, worst run (P13).
    pub p13_extra: Option<f64>,
    /// That row's p99 ÷ tower::hedge's, worst run (P13).
    pub p13_tower_p99_ratio: Option<f64>,
    /// Cap windows with hedges over the cap in the outage rows, all runs (P13).
    pub p13_outage_over_cap: Option<usize>,
    /// The longest time any intent of this crate's rows returned past its
    /// deadline, every round (P13).
    pub p13_deadline_overrun_ms: Option<f64>,
    /// The longest time any of those returned after a plain timer for the same
    /// deadline in the same task had fired (P13).
    pub p13_deadline_beyond_timer_ms: Option<f64>,
}

/// One row of the final targets table.
pub struct Target {
    pub figure: &'static str,
    pub goal: String,
    pub value: String,
    pub met: bool,
}

/// The markdown printed and written so far, and what the end of the run needs.
#[derive(Default)]
pub struct Report {
    pub markdown: String,
    pub summary: Summary,
    pub targets: Vec<Target>,
    pub p3_bars: Vec<(Peer, Option<f64>)>,
    pub p6_points: Vec<(Strategy, Vec<sim::Point>)>,
}

impl Report {
    pub fn section(&mut self, text: &str) {
        print!("{text}");
        self.markdown.push_str(text);
    }

    pub fn target(&mut self, figure: &'static str, goal: String, value: String, met: bool) {
        self.targets.push(Target {
            figure,
            goal,
            value,
            met,
        });
    }
}

impl Report {
    /// The targets table and the run's total wall time.
    pub fn targets_section(&self, wall_secs: f64) -> String {
        let rows: Vec<Vec<String>> = self
            .targets
            .iter()
            .map(|t| {
                vec![
                    t.figure.to_owned(),
                    t.goal.clone(),
                    t.value.clone(),
                    if t.met { "met" } else { "**missed**" }.to_owned(),
                ]
            })
            .collect();
        let mut text = String::from("\n## Targets (reqwest-resilience)\n\n");
        text.push_str(&table(
            &[" figure", " target", " measured", " verdict"],
            &rows,
        ));
        let _ = writeln!(text, "\nTotal wall time: {wall_secs:.0} s.\n");
        text
    }
}

/// The one-line summary: every figure's headline value, `na` when not run.
pub fn summary_line(s: &Summary) -> String {
    pub fn or_na<T>(value: Option<T>, f: impl Fn(T) -> String) -> String {
        value.map_or_else(|| "na".to_owned(), f)
    }
    format!(
        "SUMMARY p1={} p1_floor={} p2={} p2_floor={} p3={} p4_early={} p5_ms={} p6_full={} \
         p6_decorrelated={} p7_kib={} p8_allocs={} p9_outage={} p9_recovery_s={} \
         p9_refused_at_5pct={} p9_cold_refused={} p9_isolation_refused={} p10_sqlite={} \
         p10_postgres={} p10_sqlite_plain={} p10_postgres_plain={} p11={} p11_added_us={} p11_sqlite={} p11_postgres={} \
         p12_enqueue_ratio={} p12_enqueue_ratio_32={} p12_notify_ratio_32={} p12_peer_enqueue_ratio={} \
         p12_commit_to_byte_p99_ms={} p12_relay_ratio={} p13_p99_ratio={} p13_p999_ratio={} \
         p13_extra={} p13_tower_p99_ratio={} p13_outage_over_cap={} \
         p13_deadline_overrun_ms={} p13_deadline_beyond_timer_ms={}",
        or_na(s.p1, |v| format!("{v:.3}")),
        or_na(s.p1_floor, |v| format!("{v:.3}")),
        or_na(s.p2, |v| format!("{v:.3}")),
        or_na(s.p2_floor, |v| format!("{v:.3}")),
        or_na(s.p3, |v| format!("{v:.3}")),
        or_na(s.p4_early, |v| v.to_string()),
        or_na(s.p5_ms, |v| format!("{v:.1}")),
        or_na(s.p6_full, |v| format!("{v:.0}")),
        or_na(s.p6_decorrelated, |v| format!("{v:.0}")),
        or_na(s.p7_kib, |v| v.to_string()),
        or_na(s.p8_allocs, |v| format!("{v:.1}")),
        or_na(s.p9_outage, |v| format!("{v:.3}")),
        or_na(s.p9_recovery_s, |v| format!("{v:.1}")),
        or_na(s.p9_refused_at_5pct, |v| v.to_string()),
        or_na(s.p9_cold_refused, |v| v.to_string()),
        or_na(s.p9_isolation_refused, |v| v.to_string()),
        or_na(s.p10_sqlite, |v| format!("{v:.3}")),
        or_na(s.p10_postgres, |v| format!("{v:.3}")),
        or_na(s.p10_sqlite_plain, |v| format!("{v:.3}")),
        or_na(s.p10_postgres_plain, |v| format!("{v:.3}")),
        or_na(s.p11, |v| format!("{v:.3}")),
        or_na(s.p11_added_us, |v| format!("{v:.1}")),
        or_na(s.p11_sqlite, |v| format!("{v:.3}")),
        or_na(s.p11_postgres, |v| format!("{v:.3}")),
        or_na(s.p12_enqueue_ratio, |v| format!("{v:.3}")),
        or_na(s.p12_enqueue_ratio_32, |v| format!("{v:.3}")),
        or_na(s.p12_notify_ratio_32, |v| format!("{v:.3}")),
        or_na(s.p12_peer_enqueue_ratio, |v| format!("{v:.3}")),
        or_na(s.p12_commit_to_byte_p99_ms, |v| format!("{v:.1}")),
        or_na(s.p12_relay_ratio, |v| format!("{v:.3}")),
        or_na(s.p13_p99_ratio, |v| format!("{v:.3}")),
        or_na(s.p13_p999_ratio, |v| format!("{v:.3}")),
        or_na(s.p13_extra, |v| format!("{v:.4}")),
        or_na(s.p13_tower_p99_ratio, |v| format!("{v:.3}")),
        or_na(s.p13_outage_over_cap, |v| v.to_string()),
        or_na(s.p13_deadline_overrun_ms, |v| format!("{v:.2}")),
        or_na(s.p13_deadline_beyond_timer_ms, |v| format!("{v:.2}")),
    )
}
