//! P13 — hedged requests side by side in one run: this crate with hedging off and
//! at its defaults (and, on P13's first tail, with a fixed delay), and
//! `tower::hedge`, against seeded latency distributions served on 127.0.0.1 (see
//! `server.rs`).
//!
//! Every row runs under the same open-loop arrivals (one intent every 0.5 ms, each
//! on a task of its own, see `arrivals.rs`) after a warm-up of the same
//! distribution (the adaptive hedgers learn the latency then, and tower's
//! histogram fills one period):
//!
//! * three tails, each with this crate at its defaults, unhedged, and tower: P13's
//!   own (a 2 ms base, 3 % of requests 20–100 ms slower), a lognormal one (median
//!   2 ms, p99 about 40 ms) and a bimodal one (1 ms base, 2 % at 150–250 ms);
//! * P13's tail with 2 % fast `503`s beside it: tower returns whichever copy ends
//!   first, a `503` included; this crate waits for a copy still running and sends
//!   another on a transient failure;
//! * an outage: every measured request takes 50 ms, beyond the crate rows' 40 ms
//!   deadline. Every hedge this crate sends is stamped, every intent's call too,
//!   and the cap's own arithmetic (hedges ≤ 5 % of the intents + 10 over 10
//!   one-second slots from the policy's creation) is checked at the end of every
//!   slot; every intent's return is checked against its deadline.
//!
//! The rows run interleaved in rounds (every row of every scenario once per
//! round, the same seed in every round of a seed), so that a host busy with other
//! work weighs on every row alike; each figure is the median of the rounds,
//! reported beside the worst round, and the targets take the worst seed.
//! Extra load is counted at the server: (requests received − intents) ÷ intents.

mod arrivals;
mod clients;
mod server;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest_resilience_bench::markdown::table;

use crate::plan::Plan;
use crate::report::Report;
use crate::stats::quantile;

use arrivals::{drive, Record};
use clients::{RowClient, Who, CAP_BURST, CAP_RATIO, DEADLINE, OUTAGE_DEADLINE};
use server::{LatencyServer, Shape};

/// One intent every 0.5 ms: 2000 intents/s.
const GAP: Duration = Duration::from_micros(500);
/// The seeds (server draws and the crate's jitter), fixed before any run.
const RUN_SEEDS: [u64; 5] = [131, 132, 133, 134, 135];
/// The cap's window: 10 slots of 1 s (`RetryBudget`'s arithmetic).
const CAP_SLOT: Duration = Duration::from_secs(1);
const CAP_SLOTS: usize = 10;
/// Targets at the defaults, on each tail: p99 against tower's (at no more extra
/// load), p99.9 against unhedged, extra load; and P13's first tail's p99 against
/// unhedged.
const TOWER_P99_TARGET: f64 = 1.0;
const P999_TARGET: f64 = 0.5;
const EXTRA_TARGET: f64 = 0.05;
const P99_TARGET: f64 = 0.35;
/// tokio's timer tick: no intent may return later than this past its deadline.
const TIMER_TICK_MS: f64 = 1.0;
/// Cancelled copies may still be on their way to the server when the last
/// intent ends: the count is read this long after.
const SETTLE: Duration = Duration::from_millis(200);
/// A slot with this many intents called counts toward the peak slot share.
const FULL_SLOT: u64 = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Tail,
    Lognormal,
    Bimodal,
    Tail503,
    Outage,
}

impl Scenario {
    const ALL: [Scenario; 5] = [
        Scenario::Tail,
        Scenario::Lognormal,
        Scenario::Bimodal,
        Scenario::Tail503,
        Scenario::Outage,
    ];
    /// The distributions the defaults are held against tower on.
    const TAILS: [Scenario; 3] = [Scenario::Tail, Scenario::Lognormal, Scenario::Bimodal];

    fn shape(self) -> Shape {
        match self {
            Scenario::Tail => Shape::Tail,
            Scenario::Lognormal => Shape::Lognormal,
            Scenario::Bimodal => Shape::Bimodal,
            Scenario::Tail503 => Shape::Tail503,
            Scenario::Outage => Shape::Outage,
        }
    }

    fn rows(self) -> &'static [Who] {
        match self {
            Scenario::Tail => &[Who::Off, Who::Fixed, Who::Defaults, Who::Tower],
            Scenario::Lognormal | Scenario::Bimodal | Scenario::Tail503 => {
                &[Who::Off, Who::Defaults, Who::Tower]
            }
            Scenario::Outage => &[Who::Defaults, Who::Tower],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Scenario::Tail => "P13 tail (2 ms, 3 % +20–100 ms)",
            Scenario::Lognormal => "lognormal (median 2 ms, p99 ≈ 40 ms)",
            Scenario::Bimodal => "bimodal (1 ms, 2 % at 150–250 ms)",
            Scenario::Tail503 => "P13 tail + 2 % fast 503",
            Scenario::Outage => "outage (all 50 ms, 40 ms deadline)",
        }
    }

    /// The names of this tail's two targets: against tower, against unhedged.
    fn target_names(self) -> (&'static str, &'static str) {
        match self {
            Scenario::Tail => ("P13 tail vs tower::hedge", "P13 tail vs unhedged"),
            Scenario::Lognormal => ("P13 lognormal vs tower::hedge", "P13 lognormal vs unhedged"),
            Scenario::Bimodal => ("P13 bimodal vs tower::hedge", "P13 bimodal vs unhedged"),
            Scenario::Tail503 | Scenario::Outage => ("P13 vs tower::hedge", "P13 vs unhedged"),
        }
    }

    fn deadline(self) -> Duration {
        match self {
            Scenario::Outage => OUTAGE_DEADLINE,
            _ => DEADLINE,
        }
    }
}

/// The crate's hedge counts, measured intents only.
#[derive(Debug, Clone, Copy, Default)]
struct Hedges {
    sent: u64,
    won: u64,
    refused_by_cap: u64,
    refused_by_gate: u64,
}

/// The cap checked at the end of every 1 s slot.
#[derive(Debug, Clone, Copy, Default)]
struct CapCheck {
    windows: usize,
    over: usize,
    /// The most hedges in one slot ÷ the intents called in it, over the slots
    /// with at least `FULL_SLOT` intents (the first and last are partial).
    peak_slot_share: f64,
}

/// One row of one round.
#[derive(Debug, Clone, Copy)]
struct Measured {
    scenario: Scenario,
    who: Who,
    seed: usize,
    round: usize,
    intents: usize,
    p50: f64,
    p95: f64,
    p99: f64,
    p999: f64,
    ok: usize,
    /// Measured intents that ended with a `503`, and with no response at all.
    unavailable: usize,
    failed: usize,
    extra: f64,
    hedges: Option<Hedges>,
    cap: Option<CapCheck>,
    /// Intents (warm-up too) whose call returned after the deadline (crate rows),
    /// and the longest time past it (0 when none).
    past_deadline: usize,
    overrun_ms: f64,
    /// Of those, the longest time past a plain timer for the same deadline in the
    /// same task (0 when none): the part of the overrun that is the crate's.
    beyond_timer_ms: f64,
    /// How many returned more than one timer tick after the plain timer.
    beyond_tick: usize,
    lag_p99_ms: f64,
}

impl Measured {
    fn ok_share(&self) -> f64 {
        self.ok as f64 / self.intents.max(1) as f64
    }
}

/// Runs P13 and adds its section (and its targets) to `report`.
pub async fn run(plan: &Plan, report: &mut Report) {
    let server = LatencyServer::start().expect("P13 server");
    let base = format!("http://{}", server.addr);
    let mut rows = Vec::new();
    for (seed_index, &seed) in RUN_SEEDS.iter().take(plan.p13_runs).enumerate() {
        for round in 0..plan.p13_rounds {
            for scenario in Scenario::ALL {
                for &who in scenario.rows() {
                    let at = (seed_index, round);
                    let row = measure(&server, &base, scenario, who, at, seed, plan).await;
                    eprintln!(
                        "P13 seed {} round {} {:>38} {:<45} p99 {:>7.2} ms p99.9 {:>7.2} ms \
                         extra {:.3} 200s {:.4} overrun {:.2} ms \
                         (after a plain timer {:.2} ms, {} over a tick)",
                        seed_index + 1,
                        round + 1,
                        scenario.name(),
                        who.name(),
                        row.p99,
                        row.p999,
                        row.extra,
                        row.ok_share(),
                        row.overrun_ms,
                        row.beyond_timer_ms,
                        row.beyond_tick,
                    );
                    rows.push(row);
                }
            }
        }
    }
    render(plan, report, &rows);
}

async fn measure(
    server: &LatencyServer,
    base: &str,
    scenario: Scenario,
    who: Who,
    (seed_index, round): (usize, usize),
    seed: u64,
    plan: &Plan,
) -> Measured {
    server.reset(scenario.shape(), seed);
    let measured = match scenario {
        Scenario::Outage => plan.p13_outage_intents,
        _ => plan.p13_intents,
    };
    // The cap's slots count from the policy's creation, a few µs after this.
    let origin = Instant::now();
    let client = Arc::new(RowClient::build(who, seed, scenario.deadline()));
    let records = drive(&client, base, plan.p13_warmup, measured, GAP).await;
    tokio::time::sleep(SETTLE).await;
    let received = server.measured();

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let latencies: Vec<f64> = records
        .iter()
        .filter(|r| r.measured)
        .map(|r| ms(r.latency))
        .collect();
    let intents = latencies.len();
    let ok = records
        .iter()
        .filter(|r| r.measured && r.status == Some(StatusCode::OK))
        .count();
    if let Some(log) = client.log().filter(|_| scenario != Scenario::Outage) {
        for error in log.errors.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            eprintln!(
                "P13 {} {}: an intent ended with {error}",
                scenario.name(),
                who.name()
            );
        }
    }
    let ended_with = |status: Option<StatusCode>| {
        records
            .iter()
            .filter(|r| r.measured && r.status == status)
            .count()
    };
    let unavailable = ended_with(Some(StatusCode::SERVICE_UNAVAILABLE));
    let failed = ended_with(None);
    let log = client.log().filter(|_| who.hedges());
    let hedges = log.map(|log| Hedges {
        sent: log.sent.load(Ordering::Relaxed),
        won: log.won.load(Ordering::Relaxed),
        refused_by_cap: log.refused_by_cap.load(Ordering::Relaxed),
        refused_by_gate: log.refused_by_gate.load(Ordering::Relaxed),
    });
    let cap = log.map(|log| {
        let sent_at = log.sent_at.lock().unwrap_or_else(|e| e.into_inner());
        check_cap(origin, &records, &sent_at)
    });
    let deadline = scenario.deadline();
    let beyond_tick = records
        .iter()
        .filter(|r| r.beyond_control.is_some_and(|d| ms(d) > TIMER_TICK_MS))
        .count();
    let (past_deadline, overrun_ms, beyond_timer_ms) = if who.is_crate() {
        (
            records.iter().filter(|r| r.returned > deadline).count(),
            records
                .iter()
                .map(|r| ms(r.returned.saturating_sub(deadline)))
                .fold(0.0, f64::max),
            records
                .iter()
                .filter_map(|r| r.beyond_control.map(ms))
                .fold(0.0, f64::max),
        )
    } else {
        (0, f64::NAN, f64::NAN)
    };
    let lags: Vec<f64> = records.iter().map(|r| ms(r.lag)).collect();
    Measured {
        scenario,
        who,
        seed: seed_index,
        round,
        intents,
        p50: quantile(&latencies, 0.5),
        p95: quantile(&latencies, 0.95),
        p99: quantile(&latencies, 0.99),
        p999: quantile(&latencies, 0.999),
        ok,
        unavailable,
        failed,
        extra: (received as f64 - intents as f64) / intents.max(1) as f64,
        hedges,
        cap,
        past_deadline,
        overrun_ms,
        beyond_timer_ms,
        beyond_tick,
        lag_p99_ms: quantile(&lags, 0.99),
    }
}

/// The cap's arithmetic at the end of every 1 s slot from `origin`: hedges sent in
/// the last 10 slots ≤ `CAP_RATIO` × intents called in them + `CAP_BURST`.
fn check_cap(origin: Instant, records: &[Record], sent_at: &[Instant]) -> CapCheck {
    let slot_of = |t: Instant| {
        let nanos = t.saturating_duration_since(origin).as_nanos() / CAP_SLOT.as_nanos();
        usize::try_from(nanos).unwrap_or(usize::MAX)
    };
    let last = records
        .iter()
        .map(|r| slot_of(r.called))
        .chain(sent_at.iter().map(|&t| slot_of(t)))
        .max()
        .unwrap_or(0);
    let mut deposits = vec![0u64; last + 1];
    let mut withdrawals = vec![0u64; last + 1];
    for record in records {
        deposits[slot_of(record.called)] += 1;
    }
    for &t in sent_at {
        withdrawals[slot_of(t)] += 1;
    }
    let mut check = CapCheck::default();
    for k in 0..=last {
        let from = k.saturating_sub(CAP_SLOTS - 1);
        let d: u64 = deposits[from..=k].iter().sum();
        let w: u64 = withdrawals[from..=k].iter().sum();
        check.windows += 1;
        if w as f64 > CAP_RATIO * d as f64 + f64::from(CAP_BURST) + 1e-9 {
            check.over += 1;
        }
        if deposits[k] >= FULL_SLOT {
            let share = withdrawals[k] as f64 / deposits[k] as f64;
            check.peak_slot_share = check.peak_slot_share.max(share);
        }
    }
    check
}

/// The rounds of `who` in `scenario` for seed `seed` (`None`: every seed).
fn of(rows: &[Measured], scenario: Scenario, who: Who, seed: Option<usize>) -> Vec<Measured> {
    rows.iter()
        .filter(|r| r.scenario == scenario && r.who == who)
        .filter(|r| seed.is_none_or(|seed| r.seed == seed))
        .copied()
        .collect()
}

fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

fn worst(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::max)
}

fn least(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::min)
}

/// `f(who's row) ÷ f(against's row)` in each round of `seed`.
fn round_ratios(
    rows: &[Measured],
    scenario: Scenario,
    who: Who,
    against: Who,
    seed: usize,
    f: impl Fn(&Measured) -> f64,
) -> Vec<f64> {
    let base = of(rows, scenario, against, Some(seed));
    of(rows, scenario, who, Some(seed))
        .iter()
        .filter_map(|row| {
            let other = base.iter().find(|b| b.round == row.round)?;
            Some(f(row) / f(other))
        })
        .collect()
}

/// A ratio over the seeds: (the worst seed's median of rounds, the worst round).
fn ratio_of(
    rows: &[Measured],
    seeds: usize,
    scenario: Scenario,
    who: Who,
    against: Who,
    f: impl Fn(&Measured) -> f64 + Copy,
) -> (f64, f64) {
    let per_seed: Vec<Vec<f64>> = (0..seeds)
        .map(|seed| round_ratios(rows, scenario, who, against, seed, f))
        .collect();
    (
        worst(&per_seed.iter().map(|v| median(v)).collect::<Vec<_>>()),
        worst(&per_seed.concat()),
    )
}

/// A figure over the seeds: (the worst seed's median of rounds, the worst round).
fn figure_of(
    rows: &[Measured],
    seeds: usize,
    scenario: Scenario,
    who: Who,
    f: impl Fn(&Measured) -> f64 + Copy,
) -> (f64, f64) {
    let per_seed: Vec<Vec<f64>> = (0..seeds)
        .map(|seed| of(rows, scenario, who, Some(seed)).iter().map(f).collect())
        .collect();
    (
        worst(&per_seed.iter().map(|v| median(v)).collect::<Vec<_>>()),
        worst(&per_seed.concat()),
    )
}

fn pair((median, worst): (f64, f64), digits: usize) -> String {
    format!("{median:.digits$} ({worst:.digits$})")
}

fn render(plan: &Plan, report: &mut Report, rows: &[Measured]) {
    let seeds = plan.p13_runs.min(RUN_SEEDS.len());
    let mut text = format!(
        "\n## P13 — hedged requests: three tails, side by side in one run\n\n\
         A hyper 1 server on 127.0.0.1 (own thread) draws every request's answer from a \
         seeded RNG, one draw per request received (the n-th measured request draws the \
         same in every row of a seed). Its waits are timed by a thread of its own (not \
         tokio's 1 ms ticks). Distributions: **P13's tail** (2 ms base, 3 % of requests \
         uniformly 20–100 ms slower), a **lognormal** one (median 2 ms, σ = 1.288: p99 ≈ \
         40 ms) and a **bimodal** one (1 ms base, 2 % uniformly 150–250 ms); P13's tail \
         with **2 % fast `503`s**; an **outage** where every measured request takes 50 ms \
         and this crate's intents carry a 40 ms deadline (every one ends at it). \
         Open-loop arrivals: one intent every 0.5 ms (2000/s), each on a task of its own, \
         timed from its release to its body read; {warm} warm-up intents of the same \
         distribution first (the healthy tail before the outage; not counted), then {n} \
         measured intents per row ({outage} in the outage). Extra load is counted **at \
         the server**: (requests received − intents) ÷ intents, a cancelled copy that \
         reached it included. Rows, all GET: this crate with hedging off; \
         `Hedging::default()` (the adaptive delay at p95, the percentile its 5 % cap \
         implies, worked out every 1 s over 5 s, no floor); on P13's tail, \
         `Hedging::fixed(3 ms)` for reference; `tower::hedge::Hedge::new(reqwest::Client, \
         policy, 20, 0.95, 1 s)` (tower 0.5.3) around reqwest's own tower service. Every \
         crate row carries a 1 s deadline (40 ms in the outage) and the policy's defaults \
         otherwise. **{rounds} round(s) per seed**, the rows interleaved (every row of \
         every scenario once per round, the same seed in each round), {seeds} seed(s) \
         ({seed_list:?}). Each cell: the **median of the rounds** of the worst seed, \
         and in brackets the **worst round** of any seed (answered 200: the lowest); \
         hedge counts, cap windows and intents past the deadline are summed over every \
         round. Ratios pair rows of the same round.\n\n",
        warm = plan.p13_warmup,
        n = plan.p13_intents,
        outage = plan.p13_outage_intents,
        rounds = plan.p13_rounds,
        seed_list = &RUN_SEEDS[..seeds],
    );
    let mut table_rows = Vec::new();
    for scenario in Scenario::ALL {
        for &who in scenario.rows() {
            let all = of(rows, scenario, who, None);
            if all.is_empty() {
                continue;
            }
            let fig = |f: fn(&Measured) -> f64| pair(figure_of(rows, seeds, scenario, who, f), 2);
            let versus = |against: Who, f: fn(&Measured) -> f64| {
                if who == against || !scenario.rows().contains(&against) || who == Who::Off {
                    "–".to_owned()
                } else {
                    pair(ratio_of(rows, seeds, scenario, who, against, f), 3)
                }
            };
            let hedges =
                all.iter()
                    .filter_map(|r| r.hedges)
                    .fold(None, |sum: Option<Hedges>, h| {
                        let s = sum.unwrap_or_default();
                        Some(Hedges {
                            sent: s.sent + h.sent,
                            won: s.won + h.won,
                            refused_by_cap: s.refused_by_cap + h.refused_by_cap,
                            refused_by_gate: s.refused_by_gate + h.refused_by_gate,
                        })
                    });
            let caps: Vec<CapCheck> = all.iter().filter_map(|r| r.cap).collect();
            let cap_cell = if caps.is_empty() {
                "–".to_owned()
            } else {
                format!(
                    "{} / {} (peak slot {:.1} %)",
                    caps.iter().map(|c| c.over).sum::<usize>(),
                    caps.iter().map(|c| c.windows).sum::<usize>(),
                    100.0 * caps.iter().map(|c| c.peak_slot_share).fold(0.0, f64::max)
                )
            };
            let deadline_cell = if who.is_crate() {
                format!(
                    "{} (worst {:.2} ms past; after a plain timer: worst {:.2} ms, {} over a tick)",
                    all.iter().map(|r| r.past_deadline).sum::<usize>(),
                    worst(&all.iter().map(|r| r.overrun_ms).collect::<Vec<_>>()),
                    worst(&all.iter().map(|r| r.beyond_timer_ms).collect::<Vec<_>>()),
                    all.iter().map(|r| r.beyond_tick).sum::<usize>()
                )
            } else {
                "–".to_owned()
            };
            table_rows.push(vec![
                scenario.name().to_owned(),
                who.name().to_owned(),
                fig(|r| r.p50),
                fig(|r| r.p95),
                fig(|r| r.p99),
                fig(|r| r.p999),
                versus(Who::Tower, |r| r.p99),
                versus(Who::Off, |r| r.p999),
                pair(figure_of(rows, seeds, scenario, who, |r| r.extra), 4),
                format!(
                    "{:.2} % ({} × 503, {} × none)",
                    100.0 * least(&all.iter().map(Measured::ok_share).collect::<Vec<_>>()),
                    all.iter().map(|r| r.unavailable).sum::<usize>(),
                    all.iter().map(|r| r.failed).sum::<usize>()
                ),
                hedges.map_or_else(
                    || "–".to_owned(),
                    |h| {
                        format!(
                            "{} / {} / {} / {}",
                            h.sent, h.won, h.refused_by_cap, h.refused_by_gate
                        )
                    },
                ),
                cap_cell,
                deadline_cell,
            ]);
        }
    }
    text.push_str(&table(
        &[
            " scenario",
            " row",
            "p50 ms",
            "p95 ms",
            "p99 ms",
            "p99.9 ms",
            "p99 ÷ tower",
            "p99.9 ÷ unhedged",
            "extra (server)",
            "answered 200 (lowest)",
            "hedges sent / won / refused by cap / by gate",
            "cap windows over / checked",
            "past the deadline",
        ],
        &table_rows,
    ));
    let lag = worst(&rows.iter().map(|r| r.lag_p99_ms).collect::<Vec<_>>());
    text.push_str(&format!(
        "\nThe driver's release lag (release − due time, tokio's own timer), p99 of every \
         row: at most {lag:.2} ms. Cap windows: at the end of every 1 s slot from the \
         policy's creation, hedges sent in the last 10 slots against 5 % of the intents \
         called in them + 10 (the cap's own arithmetic, warm-up included); *peak slot* is \
         the most hedges in one slot ÷ the intents called in it (slots with ≥ {FULL_SLOT} \
         intents). *Past the deadline*: intents of the row (warm-up too) whose call \
         returned after their deadline, timed from before `send()`, and the longest \
         time past it; then the longest time such a call returned after a plain tokio \
         timer for the same deadline, armed before `send()` and polled first in the \
         same task, had fired (the runtime's own lateness — a busy thread, the timer \
         wheel's tick — delays both alike: what is left is the crate's).\n"
    ));
    report.section(&text);
    summarise(report, rows, seeds);
}

/// The SUMMARY figures and the targets.
fn summarise(report: &mut Report, rows: &[Measured], seeds: usize) {
    let who = Who::Defaults;
    // Against unhedged on P13's first tail (the figures P13 began with).
    let (p99, _) = ratio_of(rows, seeds, Scenario::Tail, who, Who::Off, |r| r.p99);
    let (p999_tail, _) = ratio_of(rows, seeds, Scenario::Tail, who, Who::Off, |r| r.p999);
    let (extra_tail, _) = figure_of(rows, seeds, Scenario::Tail, who, |r| r.extra);
    report.summary.p13_p99_ratio = Some(p99);
    report.summary.p13_p999_ratio = Some(p999_tail);
    report.summary.p13_extra = Some(extra_tail);
    report.target(
        "P13 tail p99 vs unhedged",
        "defaults: p99 ≤ 0.35× unhedged on P13's tail (median of rounds, worst seed)".into(),
        format!("{p99:.3}×"),
        p99 <= P99_TARGET,
    );

    // Each tail: against tower and against unhedged.
    let mut worst_tower = f64::NAN;
    for scenario in Scenario::TAILS {
        let (tower, tower_worst) = ratio_of(rows, seeds, scenario, who, Who::Tower, |r| r.p99);
        let (p999, p999_worst) = ratio_of(rows, seeds, scenario, who, Who::Off, |r| r.p999);
        let (extra, extra_worst) = figure_of(rows, seeds, scenario, who, |r| r.extra);
        let (tower_extra, _) = figure_of(rows, seeds, scenario, Who::Tower, |r| r.extra);
        // No more extra load than tower: seed by seed, median of rounds.
        let no_more_load = (0..seeds).all(|seed| {
            let mine: Vec<f64> = of(rows, scenario, who, Some(seed))
                .iter()
                .map(|r| r.extra)
                .collect();
            let theirs: Vec<f64> = of(rows, scenario, Who::Tower, Some(seed))
                .iter()
                .map(|r| r.extra)
                .collect();
            median(&mine) <= median(&theirs)
        });
        worst_tower = worst(&[worst_tower, tower]);
        report.target(
            scenario.target_names().0,
            "defaults: p99 ≤ 1.0× tower::hedge's at no more extra load (median of rounds, \
             worst seed)"
                .into(),
            format!(
                "{tower:.3}× (worst round {tower_worst:.3}×), extra {extra:.4} vs tower \
                 {tower_extra:.4}{}",
                if no_more_load {
                    ""
                } else {
                    " (more than tower)"
                }
            ),
            tower <= TOWER_P99_TARGET && no_more_load,
        );
        report.target(
            scenario.target_names().1,
            "defaults: p99.9 ≤ 0.5× unhedged, extra ≤ 0.05 (median of rounds, worst seed)".into(),
            format!(
                "p99.9 {p999:.3}× (worst round {p999_worst:.3}×), extra {extra:.4} (worst \
                 round {extra_worst:.4})"
            ),
            p999 <= P999_TARGET && extra <= EXTRA_TARGET,
        );
    }
    report.summary.p13_tower_p99_ratio = Some(worst_tower);

    // The 503 scenario: more intents answered 200 than tower, every round.
    let ours_503 = of(rows, Scenario::Tail503, who, None);
    let tower_503 = of(rows, Scenario::Tail503, Who::Tower, None);
    let better = !ours_503.is_empty()
        && ours_503.iter().all(|row| {
            tower_503
                .iter()
                .find(|t| t.seed == row.seed && t.round == row.round)
                .is_some_and(|t| row.ok > t.ok)
        });
    let share = |v: &[Measured]| least(&v.iter().map(Measured::ok_share).collect::<Vec<_>>());
    report.target(
        "P13 fast 503s",
        "defaults: strictly more intents answered 200 than tower::hedge (every round)".into(),
        format!(
            "{:.2} % vs {:.2} % (lowest round)",
            100.0 * share(&ours_503),
            100.0 * share(&tower_503),
        ),
        better,
    );

    // The outage: the cap's arithmetic, every slot of every round.
    let outage: Vec<CapCheck> = of(rows, Scenario::Outage, who, None)
        .iter()
        .filter_map(|r| r.cap)
        .collect();
    let over: usize = outage.iter().map(|c| c.over).sum();
    let checked: usize = outage.iter().map(|c| c.windows).sum();
    report.summary.p13_outage_over_cap = Some(over);
    report.target(
        "P13 outage",
        "0 windows with hedges over 5 % of intents + 10 (10 × 1 s slots, checked every slot)"
            .into(),
        format!("{over} of {checked}"),
        over == 0,
    );

    // The deadline: every intent of every crate row, every round.
    let crate_rows: Vec<&Measured> = rows.iter().filter(|r| r.who.is_crate()).collect();
    let overrun = worst(&crate_rows.iter().map(|r| r.overrun_ms).collect::<Vec<_>>());
    let outage_overruns: Vec<f64> = of(rows, Scenario::Outage, who, None)
        .iter()
        .map(|r| r.overrun_ms)
        .collect();
    report.summary.p13_deadline_overrun_ms = Some(overrun);
    report.target(
        "P13 deadline",
        format!(
            "no intent of this crate's rows returns more than one timer tick \
             ({TIMER_TICK_MS} ms) past its deadline"
        ),
        format!(
            "worst {overrun:.2} ms past (outage rows, where every intent ends at its \
             deadline: median of rounds {:.2} ms)",
            median(&outage_overruns)
        ),
        overrun <= TIMER_TICK_MS,
    );
    let beyond = worst(
        &crate_rows
            .iter()
            .map(|r| r.beyond_timer_ms)
            .collect::<Vec<_>>(),
    );
    report.summary.p13_deadline_beyond_timer_ms = Some(beyond);
    report.target(
        "P13 deadline, the crate's part",
        format!(
            "no intent of this crate's rows returns more than one timer tick \
             ({TIMER_TICK_MS} ms) after a plain timer for its deadline in the same task"
        ),
        format!("worst {beyond:.2} ms after the plain timer"),
        beyond <= TIMER_TICK_MS,
    );
}
