//! P13 — hedged requests side by side in one run: this crate with hedging off,
//! with a fixed delay and with the adaptive one, and `tower::hedge`, against one
//! seeded latency distribution served on 127.0.0.1 (see `server.rs`).
//!
//! Three scenarios, every row under the same open-loop arrivals (one intent every
//! 0.5 ms, each on a task of its own, see `arrivals.rs`) after a warm-up of
//! healthy traffic (the adaptive hedgers learn the latency then, and tower's
//! histogram fills one period):
//!
//! * the tail: a 2 ms base, 3 % of requests 20–100 ms slower;
//! * the same tail with 2 % fast `503`s beside it: tower returns whichever copy
//!   ends first, a `503` included; this crate waits for a copy still running and
//!   sends another on a transient failure;
//! * an outage: every measured request takes 50 ms. Every hedge this crate sends is
//!   stamped, every intent's call too, and the cap's own arithmetic (hedges ≤ 5 %
//!   of the intents + 10 over 10 one-second slots from the policy's creation) is
//!   checked at the end of every slot.
//!
//! Extra load is counted at the server: (requests received − intents) ÷ intents.
//! Each figure is the worst instance over the runs (seeds fixed here).

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
use clients::{RowClient, Who, CAP_BURST, CAP_RATIO, DEADLINE};
use server::{LatencyServer, Shape};

/// One intent every 0.5 ms: 2000 intents/s.
const GAP: Duration = Duration::from_micros(500);
/// The runs' seeds (server draws and the crate's jitter), fixed before any run.
const RUN_SEEDS: [u64; 5] = [131, 132, 133, 134, 135];
/// The cap's window: 10 slots of 1 s (`RetryBudget`'s arithmetic).
const CAP_SLOT: Duration = Duration::from_secs(1);
const CAP_SLOTS: usize = 10;
/// The targets on the tail: hedged ÷ unhedged p99 and p99.9, at extra load.
const P99_TARGET: f64 = 0.35;
const P999_TARGET: f64 = 0.5;
const EXTRA_TARGET: f64 = 0.05;
/// Cancelled copies may still be on their way to the server when the last
/// intent ends: the count is read this long after.
const SETTLE: Duration = Duration::from_millis(200);
/// A slot with this many intents called counts toward the peak slot share.
const FULL_SLOT: u64 = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Tail,
    Tail503,
    Outage,
}

impl Scenario {
    const ALL: [Scenario; 3] = [Scenario::Tail, Scenario::Tail503, Scenario::Outage];

    fn shape(self) -> Shape {
        match self {
            Scenario::Tail => Shape::Tail,
            Scenario::Tail503 => Shape::Tail503,
            Scenario::Outage => Shape::Outage,
        }
    }

    fn rows(self) -> &'static [Who] {
        match self {
            Scenario::Tail => &[
                Who::Off,
                Who::Fixed,
                Who::Adaptive,
                Who::AdaptiveLowFloor,
                Who::Tower,
            ],
            Scenario::Tail503 => &[Who::Off, Who::Fixed, Who::Adaptive, Who::Tower],
            Scenario::Outage => &[Who::Fixed, Who::Adaptive, Who::Tower],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Scenario::Tail => "tail",
            Scenario::Tail503 => "tail + 2 % fast 503",
            Scenario::Outage => "outage (all 50 ms)",
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

/// One row of one run.
#[derive(Debug, Clone, Copy)]
struct Measured {
    scenario: Scenario,
    who: Who,
    run: usize,
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
    /// Intents (warm-up too) whose call returned after the deadline (crate rows).
    past_deadline: usize,
    longest_returned_ms: f64,
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
    for (run, &seed) in RUN_SEEDS.iter().take(plan.p13_runs).enumerate() {
        for scenario in Scenario::ALL {
            for &who in scenario.rows() {
                let row = measure(&server, &base, scenario, who, run, seed, plan).await;
                eprintln!(
                    "P13 run {} {:>20} {:<55} p99 {:>6.2} ms p99.9 {:>6.2} ms extra {:.3} \
                     200s {:.4}",
                    run + 1,
                    scenario.name(),
                    who.name(),
                    row.p99,
                    row.p999,
                    row.extra,
                    row.ok_share()
                );
                rows.push(row);
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
    run: usize,
    seed: u64,
    plan: &Plan,
) -> Measured {
    server.reset(scenario.shape(), seed);
    let measured = match scenario {
        Scenario::Outage => plan.p13_outage_intents,
        Scenario::Tail | Scenario::Tail503 => plan.p13_intents,
    };
    // The cap's slots count from the policy's creation, a few µs after this.
    let origin = Instant::now();
    let client = Arc::new(RowClient::build(who, seed));
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
    if let Some(log) = client.log() {
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
    let (past_deadline, longest_returned_ms) = if who.is_crate() {
        (
            records.iter().filter(|r| r.returned > DEADLINE).count(),
            records.iter().map(|r| ms(r.returned)).fold(0.0, f64::max),
        )
    } else {
        (0, f64::NAN)
    };
    let lags: Vec<f64> = records.iter().map(|r| ms(r.lag)).collect();
    Measured {
        scenario,
        who,
        run,
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
        longest_returned_ms,
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

/// The rows of `who` in `scenario`, one per run.
fn of(rows: &[Measured], scenario: Scenario, who: Who) -> Vec<Measured> {
    rows.iter()
        .filter(|r| r.scenario == scenario && r.who == who)
        .copied()
        .collect()
}

/// `f(row) ÷ f(the same run's unhedged row)` for each run.
fn ratios(rows: &[Measured], who: Who, f: impl Fn(&Measured) -> f64) -> Vec<f64> {
    let base = of(rows, Scenario::Tail, Who::Off);
    of(rows, Scenario::Tail, who)
        .iter()
        .map(|row| {
            let off = base.iter().find(|b| b.run == row.run);
            off.map_or(f64::NAN, |off| f(row) / f(off))
        })
        .collect()
}

fn worst(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::max)
}

fn least(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::min)
}

fn render(plan: &Plan, report: &mut Report, rows: &[Measured]) {
    let runs = plan.p13_runs;
    let mut text = format!(
        "\n## P13 — hedged requests: a slow tail, side by side in one run\n\n\
         A hyper 1 server on 127.0.0.1 (own thread) draws every request's answer from a \
         seeded RNG, one draw per request received (the n-th measured request draws the \
         same in every row of a run): a **2 ms base, 3 % of requests uniformly 20–100 ms \
         slower**, independent per request. Its waits are timed by a thread of its own \
         (not tokio's 1 ms ticks), so a fast request is answered in about 2.1–2.5 ms. \
         Open-loop arrivals: one intent every 0.5 ms (2000/s), each on a task of its \
         own, released by a driver on tokio's timer (two per 1 ms tick) and timed from \
         its release to its body read; {warm} warm-up intents of the same tail first \
         (not counted: the adaptive hedgers learn the latency, tower's histogram fills a \
         period), then {n} measured intents per row ({outage} in the outage). Extra load \
         is counted **at the server**: (requests received − intents) ÷ intents, a \
         cancelled copy that reached it included. Rows, all GET: this crate with hedging \
         off; `Hedging::fixed(3 ms).cap(0.05, 10)` (about the distribution's p95: the 2 ms \
         base plus the client's own time, rounded up to the millisecond tokio's timer \
         keeps; on a loaded host the p95 a client sees is higher, see the p95 column); `Hedging::adaptive(95.0)` at its defaults \
         (min samples 20, **floor 10 ms**); for reference the adaptive one with a 1 ms \
         floor; `tower::hedge::Hedge::new(reqwest::Client, policy, 20, 0.95, 1 s)` (tower \
         0.5.3: min data points, percentile, histogram period; there is no \
         max-request-duration argument) around reqwest's own tower service, the policy \
         copying any request with `try_clone`. Every crate row carries a 1 s deadline and \
         the policy's defaults otherwise (3 attempts, budget 10 % + 10). Beside the tail, \
         **2 % fast `503`s** (answered at once) in a second scenario, and an **outage** \
         where every measured request takes 50 ms. Each cell is the **worst of {runs} \
         run(s)** (seeds {seeds:?}): latencies, ratios and extra load the highest, \
         answered 200 the lowest; hedge counts, cap windows and the intents that ended \
         with a `503` or with no response at all are summed over the runs. \
         Ratios are against the same run's unhedged row. Hedge counts are this crate's \
         `HedgeEvent`s (an observer on the policy), measured intents only. The targets \
         and the SUMMARY's p13 keys take the better of the fixed and adaptive rows: the \
         one whose largest figure ÷ its target (p99 ratio ÷ 0.35, p99.9 ratio ÷ 0.5, \
         extra ÷ 0.05, worst run each) is lower.\n\n",
        warm = plan.p13_warmup,
        n = plan.p13_intents,
        outage = plan.p13_outage_intents,
        seeds = &RUN_SEEDS[..runs.min(RUN_SEEDS.len())],
    );
    let mut table_rows = Vec::new();
    for scenario in Scenario::ALL {
        for &who in scenario.rows() {
            let runs_of = of(rows, scenario, who);
            if runs_of.is_empty() {
                continue;
            }
            let get = |f: fn(&Measured) -> f64| runs_of.iter().map(f).collect::<Vec<_>>();
            let ratio_cells = if scenario == Scenario::Tail && who != Who::Off {
                let p99 = ratios(rows, who, |r| r.p99);
                let p999 = ratios(rows, who, |r| r.p999);
                let per_run = p99
                    .iter()
                    .map(|r| format!("{r:.2}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                [
                    format!("{:.3}×", worst(&p99)),
                    format!("{:.3}×", worst(&p999)),
                    per_run,
                ]
            } else {
                ["–".to_owned(), "–".to_owned(), "–".to_owned()]
            };
            let hedges =
                runs_of
                    .iter()
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
            let caps: Vec<CapCheck> = runs_of.iter().filter_map(|r| r.cap).collect();
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
                    "{} (longest {:.0} ms)",
                    runs_of.iter().map(|r| r.past_deadline).sum::<usize>(),
                    worst(&get(|r| r.longest_returned_ms))
                )
            } else {
                "–".to_owned()
            };
            let [p99_ratio, p999_ratio, per_run] = ratio_cells;
            table_rows.push(vec![
                scenario.name().to_owned(),
                who.name().to_owned(),
                format!("{:.2}", worst(&get(|r| r.p50))),
                format!("{:.2}", worst(&get(|r| r.p95))),
                format!("{:.2}", worst(&get(|r| r.p99))),
                format!("{:.2}", worst(&get(|r| r.p999))),
                p99_ratio,
                per_run,
                p999_ratio,
                format!("{:.4}", worst(&get(|r| r.extra))),
                format!(
                    "{:.2} % ({} × 503, {} × none)",
                    100.0 * least(&get(Measured::ok_share)),
                    runs_of.iter().map(|r| r.unavailable).sum::<usize>(),
                    runs_of.iter().map(|r| r.failed).sum::<usize>()
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
            "p99 ÷ unhedged",
            "p99 ratio per run",
            "p99.9 ÷ unhedged",
            "extra (server)",
            "answered 200",
            "hedges sent / won / refused by cap / by gate",
            "cap windows over / checked",
            "past the 1 s deadline",
        ],
        &table_rows,
    ));
    let lag = worst(&rows.iter().map(|r| r.lag_p99_ms).collect::<Vec<_>>());
    text.push_str(&format!(
        "\nThe driver's release lag (release − due time), p99 of every row: at most \
         {lag:.2} ms. Cap windows: at the end of every 1 s slot from the policy's \
         creation, hedges sent in the last 10 slots against 5 % of the intents called in \
         them + 10 (the cap's own arithmetic, warm-up included); *peak slot* is the most \
         hedges in one slot ÷ the intents called in it (slots with ≥ {FULL_SLOT} intents).\n"
    ));
    report.section(&text);
    summarise(report, rows);
}

/// The SUMMARY figures and the targets.
fn summarise(report: &mut Report, rows: &[Measured]) {
    // The better of fixed and adaptive (defaults): the lower of each row's
    // largest figure ÷ its target (p99 ratio ÷ 0.35, p99.9 ratio ÷ 0.5, extra ÷
    // 0.05), worst run each.
    let score = |who: Who| {
        let extra = worst(
            &of(rows, Scenario::Tail, who)
                .iter()
                .map(|r| r.extra)
                .collect::<Vec<_>>(),
        );
        [
            worst(&ratios(rows, who, |r| r.p99)) / P99_TARGET,
            worst(&ratios(rows, who, |r| r.p999)) / P999_TARGET,
            extra / EXTRA_TARGET,
        ]
        .into_iter()
        .fold(f64::NAN, f64::max)
    };
    let Some(chosen) = [Who::Fixed, Who::Adaptive]
        .into_iter()
        .filter(|&who| score(who).is_finite())
        .min_by(|&a, &b| score(a).total_cmp(&score(b)))
    else {
        return;
    };
    let p99 = worst(&ratios(rows, chosen, |r| r.p99));
    let p999 = worst(&ratios(rows, chosen, |r| r.p999));
    let ours = of(rows, Scenario::Tail, chosen);
    let extra = worst(&ours.iter().map(|r| r.extra).collect::<Vec<_>>());
    let label = match chosen {
        Who::Fixed => "fixed 3 ms",
        _ => "adaptive p95",
    };
    report.summary.p13_p99_ratio = Some(p99);
    report.summary.p13_p999_ratio = Some(p999);
    report.summary.p13_extra = Some(extra);
    report.target(
        "P13 tail",
        "p99 ≤ 0.35× and p99.9 ≤ 0.5× unhedged, at extra ≤ 0.05 (the better of fixed and \
         adaptive, worst run)"
            .into(),
        format!("{label}: p99 {p99:.3}×, p99.9 {p999:.3}×, extra {extra:.4}"),
        p99 <= P99_TARGET && p999 <= P999_TARGET && extra <= EXTRA_TARGET,
    );

    // Against tower::hedge, run by run.
    let tower = of(rows, Scenario::Tail, Who::Tower);
    let versus = |who: Who| -> (f64, bool) {
        let mut ratio = f64::NAN;
        let mut no_more_load = true;
        for row in of(rows, Scenario::Tail, who) {
            if let Some(t) = tower.iter().find(|t| t.run == row.run) {
                ratio = worst(&[ratio, row.p99 / t.p99]);
                no_more_load &= row.extra <= t.extra;
            }
        }
        (ratio, no_more_load)
    };
    let (tower_ratio, no_more_load) = versus(chosen);
    let (other, other_label) = match chosen {
        Who::Fixed => (Who::Adaptive, "adaptive p95"),
        _ => (Who::Fixed, "fixed 3 ms"),
    };
    let (other_ratio, other_no_more_load) = versus(other);
    let other_extra = worst(
        &of(rows, Scenario::Tail, other)
            .iter()
            .map(|r| r.extra)
            .collect::<Vec<_>>(),
    );
    let more_load = |no_more: bool| {
        if no_more {
            ""
        } else {
            ", more than tower's in a run"
        }
    };
    let tower_extra = worst(&tower.iter().map(|r| r.extra).collect::<Vec<_>>());
    report.summary.p13_tower_p99_ratio = Some(tower_ratio);
    report.target(
        "P13 vs tower::hedge",
        "p99 ≤ tower::hedge's at the same or lower extra load (every run)".into(),
        format!(
            "{label}: p99 ÷ tower {tower_ratio:.3}×, extra {extra:.4}{} vs tower \
             {tower_extra:.4} ({other_label}: {other_ratio:.3}×, extra {other_extra:.4}{})",
            more_load(no_more_load),
            more_load(other_no_more_load),
        ),
        tower_ratio <= 1.0 && no_more_load,
    );

    // The 503 scenario: more intents answered 200 than tower, every run.
    let ours_503 = of(rows, Scenario::Tail503, chosen);
    let tower_503 = of(rows, Scenario::Tail503, Who::Tower);
    let better = !ours_503.is_empty()
        && ours_503.iter().all(|row| {
            tower_503
                .iter()
                .find(|t| t.run == row.run)
                .is_some_and(|t| row.ok > t.ok)
        });
    let share = |v: &[Measured]| least(&v.iter().map(Measured::ok_share).collect::<Vec<_>>());
    let p99_of = |v: &[Measured]| worst(&v.iter().map(|r| r.p99).collect::<Vec<_>>());
    report.target(
        "P13 fast 503s",
        "strictly more intents answered 200 than tower::hedge (every run)".into(),
        format!(
            "{label}: {:.2} % vs {:.2} % (p99 {:.2} vs {:.2} ms)",
            100.0 * share(&ours_503),
            100.0 * share(&tower_503),
            p99_of(&ours_503),
            p99_of(&tower_503)
        ),
        better,
    );

    // The outage: the cap's arithmetic, every slot of every crate row.
    let outage: Vec<CapCheck> = rows
        .iter()
        .filter(|r| r.scenario == Scenario::Outage)
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

    let past: usize = rows.iter().map(|r| r.past_deadline).sum();
    let longest = worst(
        &rows
            .iter()
            .filter(|r| r.who.is_crate())
            .map(|r| r.longest_returned_ms)
            .collect::<Vec<_>>(),
    );
    report.target(
        "P13 deadline",
        "no intent of this crate's rows outlives its 1 s deadline".into(),
        format!("{past} (longest {longest:.1} ms)"),
        past == 0,
    );
}
