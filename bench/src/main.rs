//! Side-by-side benchmarks of reqwest-resilience and its peers (issue 5).
//!
//! ```text
//! cargo run -p reqwest-resilience-bench --release -- --quick      # < 2 min on 2 cores
//! cargo run -p reqwest-resilience-bench --release                 # full run, a few minutes
//! cargo run -p reqwest-resilience-bench --release -- --write      # also writes docs/bench/
//! cargo run -p reqwest-resilience-bench --release -- --only p1,p8 # a subset (development)
//! ```
//!
//! Everything runs against a hyper 1 server this program starts on 127.0.0.1 (its
//! own thread and runtime); no other address is ever contacted. Every loop is bounded
//! in count and in time.
//!
//! Peers: bare reqwest 0.13, reqwest-resilience, reqwest-retry 0.9 +
//! reqwest-middleware 0.5, reqwest 0.13's `retry::for_host` with a 429/5xx
//! classifier, and backon 1 around reqwest. Comparable settings: 4 attempts, 10 ms
//! base, 100 ms cap, jitter where supported. Timed figures interleave rounds
//! (A B C D E, A B C D E, …) after a warm-up and report medians of per-round ratios.
//!
//! Figures: P1 sequential overhead, P2 throughput at 32 tasks, P3 amplification in a
//! total 503 outage, P4 Retry-After adherence, P5 deadline overshoot, P6 Brooker's
//! contention simulation (virtual time), P7 memory growth, P8 allocations per
//! intent. P8 needs a counting global allocator, and a global allocator applies to
//! a whole binary, so it runs in a binary of its own (`p8_allocs`, see
//! `src/bin/p8_allocs.rs`) that this one builds and runs as a child process (P1–P7
//! keep the system allocator). The program prints one markdown table per figure and
//! a final `SUMMARY …` line.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use reqwest::StatusCode;
use reqwest_resilience_bench::cpu::thread_cpu;
use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::p8_child;
use reqwest_resilience_bench::peers::{self, Client, Peer, Settings};
use reqwest_resilience_bench::server::{self, Server};
use reqwest_resilience_bench::sim::{self, Strategy};
use reqwest_resilience_bench::svg;

/// Iteration counts: `--quick` runs the same figures with fewer iterations.
#[derive(Debug, Clone, Copy)]
struct Plan {
    p1_warmup: usize,
    p1_rounds: usize,
    p1_per_round: usize,
    p2_rounds: usize,
    p2_per_round: usize,
    p3_intents: usize,
    p3_limit: Duration,
    p4_intents: usize,
    p6_runs: u32,
    p7_intents: usize,
}

const P2_TASKS: usize = 32;
const P3_CONCURRENCY: usize = 50;
const P5_INTENTS: usize = 20;
const P5_DEADLINE: Duration = Duration::from_secs(1);
const P5_ATTEMPTS: u32 = 10;
const P7_CONCURRENCY: usize = 32;
const P7_CHUNKS: usize = 4;

impl Plan {
    fn new(quick: bool) -> Plan {
        if quick {
            Plan {
                p1_warmup: 300,
                p1_rounds: 40,
                p1_per_round: 100,
                p2_rounds: 15,
                p2_per_round: 1_600,
                p3_intents: 2_000,
                p3_limit: Duration::from_secs(20),
                p4_intents: 3,
                p6_runs: 20,
                p7_intents: 100_000,
            }
        } else {
            Plan {
                p1_warmup: 1_000,
                p1_rounds: 151,
                p1_per_round: 200,
                p2_rounds: 41,
                p2_per_round: 3_200,
                p3_intents: 10_000,
                p3_limit: Duration::from_secs(90),
                p4_intents: 10,
                p6_runs: 100,
                p7_intents: 1_000_000,
            }
        }
    }
}

/// What the SUMMARY line needs; `None` for a figure not run.
#[derive(Debug, Default)]
struct Summary {
    p1: Option<f64>,
    p2: Option<f64>,
    p3: Option<f64>,
    p4_early: Option<usize>,
    p5_ms: Option<f64>,
    p6_full: Option<f64>,
    p6_decorrelated: Option<f64>,
    p7_kib: Option<i64>,
    /// Allocations per intent, reqwest-resilience minus bare reqwest.
    p8_allocs: Option<f64>,
}

/// One row of the final targets table.
struct Target {
    figure: &'static str,
    goal: String,
    value: String,
    met: bool,
}

#[derive(Default)]
struct Report {
    markdown: String,
    summary: Summary,
    targets: Vec<Target>,
    p3_bars: Vec<(Peer, Option<f64>)>,
    p6_points: Vec<(Strategy, Vec<sim::Point>)>,
}

impl Report {
    fn section(&mut self, text: &str) {
        print!("{text}");
        self.markdown.push_str(text);
    }

    fn target(&mut self, figure: &'static str, goal: String, value: String, met: bool) {
        self.targets.push(Target {
            figure,
            goal,
            value,
            met,
        });
    }
}

fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let position = q * (sorted.len() - 1) as f64;
    let low = position.floor() as usize;
    let high = position.ceil() as usize;
    let frac = position - low as f64;
    sorted[low] * (1.0 - frac) + sorted[high] * frac
}

fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

fn vm_rss_kib() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Every peer, then the reference rows: bare reqwest with the crate's default
/// attempt timeout (the careful user), and the crate without its timer.
fn build_all_with_reference(settings: Settings) -> Vec<(Peer, Arc<Client>)> {
    let mut clients = build_all(settings);
    for reference in Peer::REFERENCES {
        clients.push((reference, peers::build(reference, settings)));
    }
    clients
}

fn build_all(settings: Settings) -> Vec<(Peer, Arc<Client>)> {
    Peer::ALL
        .iter()
        .map(|&peer| (peer, peers::build(peer, settings)))
        .collect()
}

/// Intents counted by the final status (or none).
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    done: usize,
    ok: usize,
    unavailable: usize,
    other: usize,
    failed: usize,
}

impl Tally {
    fn add(&mut self, status: Option<StatusCode>) {
        self.done += 1;
        match status {
            Some(StatusCode::OK) => self.ok += 1,
            Some(StatusCode::SERVICE_UNAVAILABLE) => self.unavailable += 1,
            Some(_) => self.other += 1,
            None => self.failed += 1,
        }
    }

    fn merge(&mut self, other: Tally) {
        self.done += other.done;
        self.ok += other.ok;
        self.unavailable += other.unavailable;
        self.other += other.other;
        self.failed += other.failed;
    }
}

/// `intents` GETs through `client` from `concurrency` tasks, stopping early at
/// `limit`. Returns the tally and the wall time.
async fn run_concurrent(
    client: Arc<Client>,
    url: Arc<str>,
    intents: usize,
    concurrency: usize,
    limit: Duration,
) -> (Tally, Duration) {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let stop_at = started + limit;
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let (client, url, next) = (client.clone(), url.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            while Instant::now() < stop_at && next.fetch_add(1, Ordering::Relaxed) < intents {
                tally.add(client.get(&url).await.status);
            }
            tally
        }));
    }
    let mut tally = Tally::default();
    for task in tasks {
        tally.merge(task.await.expect("worker task"));
    }
    (tally, started.elapsed())
}

// ---------------------------------------------------------------------------------
// P1 — sequential overhead

async fn p1(server: &Server, plan: &Plan, report: &mut Report) {
    let url = server.url("/ok");
    let clients = build_all_with_reference(Settings::COMPARABLE);
    for (peer, client) in &clients {
        for _ in 0..plan.p1_warmup {
            let status = client.get(&url).await.status;
            assert_eq!(status, Some(StatusCode::OK), "{} warm-up", peer.name());
        }
    }
    // wall[peer][round] and cpu[peer][round], in µs per request.
    let mut wall = vec![Vec::with_capacity(plan.p1_rounds); clients.len()];
    let mut cpu = vec![Vec::with_capacity(plan.p1_rounds); clients.len()];
    for _ in 0..plan.p1_rounds {
        for (i, (peer, client)) in clients.iter().enumerate() {
            let (started, cpu_started) = (Instant::now(), thread_cpu());
            for _ in 0..plan.p1_per_round {
                let status = client.get(&url).await.status;
                assert_eq!(status, Some(StatusCode::OK), "{}", peer.name());
            }
            let n = plan.p1_per_round as f64;
            wall[i].push(started.elapsed().as_secs_f64() * 1e6 / n);
            cpu[i].push((thread_cpu() - cpu_started).as_secs_f64() * 1e6 / n);
        }
    }
    let ratios = |series: &[Vec<f64>], i: usize| -> Vec<f64> {
        series[i]
            .iter()
            .zip(&series[0])
            .map(|(peer, bare)| peer / bare)
            .collect()
    };
    let mut rows = Vec::new();
    let mut medians = Vec::new();
    for (i, (peer, _)) in clients.iter().enumerate() {
        let r = ratios(&wall, i);
        let c = ratios(&cpu, i);
        medians.push((*peer, median(&r), median(&c)));
        rows.push(vec![
            peer.name().to_owned(),
            format!("{:.1}", median(&wall[i])),
            format!("{:.3}×", median(&r)),
            format!("{:.3}–{:.3}", quantile(&r, 0.25), quantile(&r, 0.75)),
            format!("{:.1}", median(&cpu[i])),
            format!("{:.3}×", median(&c)),
        ]);
    }
    let mut text = format!(
        "\n## P1 — overhead: sequential GET, 200 OK\n\n{} rounds × {} requests per peer, \
         interleaved, after {} warm-up requests each. Ratio = median over rounds of \
         (peer ÷ bare in the same round). *Wall* is the time per request (the figure's \
         measure, in SUMMARY); *client CPU* is the client thread's CPU time per request \
         (`CLOCK_THREAD_CPUTIME_ID`), which other processes on a busy machine do not \
         inflate. Per intent, reqwest-resilience with its defaults also sets a \
         per-attempt timeout (10 s, clipped to the 30 s deadline), sends a fresh \
         `X-Request-Id`, keeps a copy of the request for a possible retry and attaches \
         the attempt log to the response; the bare client does none of this. The \
         reference rows: bare reqwest with the same 10 s per-request timeout (what a \
         careful user pays for that protection without this crate), and this crate \
         without deadline and attempt timeout.\n\n",
        plan.p1_rounds, plan.p1_per_round, plan.p1_warmup
    );
    text.push_str(&table(
        &[
            " peer",
            "wall µs / request",
            "wall ratio",
            "wall ratio p25–p75",
            "client CPU µs / request",
            "CPU ratio",
        ],
        &rows,
    ));
    report.section(&text);
    let (_, ours, ours_cpu) = medians[1];
    // The peers proper: not bare (0), not ours (1), not the reference rows (last).
    let peers = &medians[2..Peer::ALL.len()];
    let best_peer = peers.iter().map(|m| m.1).fold(f64::INFINITY, f64::min);
    let best_peer_cpu = peers.iter().map(|m| m.2).fold(f64::INFINITY, f64::min);
    report.summary.p1 = Some(ours);
    report.target(
        "P1",
        "≤ 1.03× bare (wall)".into(),
        format!("{ours:.3}× (client CPU {ours_cpu:.3}×)"),
        ours <= 1.03,
    );
    report.target(
        "P1",
        "lower than every peer (wall)".into(),
        format!(
            "{ours:.3}× vs best peer {best_peer:.3}× (CPU {ours_cpu:.3}× vs {best_peer_cpu:.3}×)"
        ),
        ours < best_peer,
    );
}

// ---------------------------------------------------------------------------------
// P2 — throughput at 32 concurrent tasks

async fn p2(server: &Server, plan: &Plan, report: &mut Report) {
    let url: Arc<str> = server.url("/ok").into();
    let clients = build_all_with_reference(Settings::COMPARABLE);
    let limit = Duration::from_secs(60);
    for (_, client) in &clients {
        run_concurrent(client.clone(), url.clone(), P2_TASKS * 50, P2_TASKS, limit).await;
    }
    let mut rps = vec![Vec::with_capacity(plan.p2_rounds); clients.len()];
    let mut cpu = vec![Vec::with_capacity(plan.p2_rounds); clients.len()];
    for _ in 0..plan.p2_rounds {
        for (i, (peer, client)) in clients.iter().enumerate() {
            let cpu_started = thread_cpu();
            let (tally, wall) = run_concurrent(
                client.clone(),
                url.clone(),
                plan.p2_per_round,
                P2_TASKS,
                limit,
            )
            .await;
            assert_eq!(tally.ok, plan.p2_per_round, "{}", peer.name());
            rps[i].push(tally.done as f64 / wall.as_secs_f64());
            cpu[i].push((thread_cpu() - cpu_started).as_secs_f64() * 1e6 / tally.done as f64);
        }
    }
    let mut rows = Vec::new();
    let mut ours = (f64::NAN, f64::NAN);
    for (i, (peer, _)) in clients.iter().enumerate() {
        let ratios: Vec<f64> = rps[i].iter().zip(&rps[0]).map(|(p, b)| p / b).collect();
        let cpu_ratios: Vec<f64> = cpu[i].iter().zip(&cpu[0]).map(|(p, b)| p / b).collect();
        if *peer == Peer::Resilient {
            ours = (median(&ratios), median(&cpu_ratios));
        }
        rows.push(vec![
            peer.name().to_owned(),
            format!("{:.0}", median(&rps[i])),
            format!("{:.3}×", median(&ratios)),
            format!(
                "{:.3}–{:.3}",
                quantile(&ratios, 0.25),
                quantile(&ratios, 0.75)
            ),
            format!("{:.1}", median(&cpu[i])),
            format!("{:.3}×", median(&cpu_ratios)),
        ]);
    }
    let mut text = format!(
        "\n## P2 — throughput: {P2_TASKS} concurrent tasks, GET 200 OK\n\n{} rounds × {} \
         requests per peer, interleaved, after a warm-up. Ratio = median over rounds of \
         (peer ÷ bare in the same round). Client CPU as in P1.\n\n",
        plan.p2_rounds, plan.p2_per_round
    );
    text.push_str(&table(
        &[
            " peer",
            "requests/s",
            "req/s ratio",
            "req/s ratio p25–p75",
            "client CPU µs / request",
            "CPU ratio",
        ],
        &rows,
    ));
    report.section(&text);
    report.summary.p2 = Some(ours.0);
    report.target(
        "P2",
        "≥ 0.97× bare (req/s)".into(),
        format!("{:.3}× (client CPU per request {:.3}×)", ours.0, ours.1),
        ours.0 >= 0.97,
    );
}

// ---------------------------------------------------------------------------------
// P3 — amplification in a total outage

async fn p3(server: &Server, plan: &Plan, report: &mut Report) {
    let url: Arc<str> = server.url("/down").into();
    let counters = server.counters();
    let mut rows = Vec::new();
    for peer in Peer::ALL {
        // A fresh client per peer: budgets start empty.
        let client = peers::build(peer, Settings::COMPARABLE);
        let requests_before = counters.down.load(Ordering::Relaxed);
        let connections_before = counters.connections.load(Ordering::Relaxed);
        let (tally, wall) = run_concurrent(
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

// ---------------------------------------------------------------------------------
// P4 — Retry-After adherence

async fn p4(server: &Server, plan: &Plan, report: &mut Report) {
    // Budgets off: 2 × N throttled intents at once on a fresh client would otherwise
    // exhaust reqwest-resilience's reserve (10 retries per 10 s) and reqwest's, and
    // the figure would count refusals instead of adherence.
    let clients = build_all(Settings {
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

// ---------------------------------------------------------------------------------
// P5 — deadline overshoot

async fn p5(server: &Server, report: &mut Report) {
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
            Peer::Bare | Peer::BareTimeout => (
                "none (no retries)",
                "one 150 ms attempt: the deadline never binds",
            ),
            Peer::Resilient | Peer::ResilientNoTimer => (
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

// ---------------------------------------------------------------------------------
// P6 — Brooker's contention simulation

fn p6(plan: &Plan, report: &mut Report) {
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

// ---------------------------------------------------------------------------------
// P7 — memory

async fn p7(server: &Server, plan: &Plan, report: &mut Report) {
    let url: Arc<str> = server.url("/ok").into();
    let client = peers::build(Peer::Resilient, Settings::COMPARABLE);
    let limit = Duration::from_secs(300);
    let warmup = (plan.p7_intents / 20).max(5_000);
    run_concurrent(client.clone(), url.clone(), warmup, P7_CONCURRENCY, limit).await;
    let before = vm_rss_kib().unwrap_or(0);
    let mut samples = Vec::new();
    let mut done = 0usize;
    let started = Instant::now();
    for _ in 0..P7_CHUNKS {
        let chunk = plan.p7_intents / P7_CHUNKS;
        let (tally, _) =
            run_concurrent(client.clone(), url.clone(), chunk, P7_CONCURRENCY, limit).await;
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

// ---------------------------------------------------------------------------------
// P8 — allocations per intent (in the `p8_allocs` binary: its own global allocator)

fn p8(report: &mut Report) {
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

// ---------------------------------------------------------------------------------

fn summary_line(s: &Summary) -> String {
    fn or_na<T>(value: Option<T>, f: impl Fn(T) -> String) -> String {
        value.map_or_else(|| "na".to_owned(), f)
    }
    format!(
        "SUMMARY p1={} p2={} p3={} p4_early={} p5_ms={} p6_full={} p6_decorrelated={} \
         p7_kib={} p8_allocs={}",
        or_na(s.p1, |v| format!("{v:.3}")),
        or_na(s.p2, |v| format!("{v:.3}")),
        or_na(s.p3, |v| format!("{v:.3}")),
        or_na(s.p4_early, |v| v.to_string()),
        or_na(s.p5_ms, |v| format!("{v:.1}")),
        or_na(s.p6_full, |v| format!("{v:.0}")),
        or_na(s.p6_decorrelated, |v| format!("{v:.0}")),
        or_na(s.p7_kib, |v| v.to_string()),
        or_na(s.p8_allocs, |v| format!("{v:.1}")),
    )
}

fn render_svg(report: &Report, mode: &str) -> String {
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

const USAGE: &str = "usage: bench [--quick] [--write] [--only p1,p2,…,p8] \
                     [--profile bare|bare-timeout|resilience|resilience-no-timer|\
                     reqwest-retry|builtin|backon N]";

struct Args {
    quick: bool,
    write: bool,
    only: Option<Vec<String>>,
    /// `--profile PEER N`: only N sequential GETs through one peer (for callgrind).
    profile: Option<(Peer, usize)>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        quick: false,
        write: false,
        only: None,
        profile: None,
    };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--quick" => args.quick = true,
            "--write" => args.write = true,
            "--only" => {
                let list = iter.next().ok_or("--only needs a list such as p1,p6")?;
                args.only = Some(list.split(',').map(|s| s.trim().to_lowercase()).collect());
            }
            "--profile" => {
                let name = iter.next().ok_or("--profile needs a peer and a count")?;
                let peer = Peer::ALL
                    .into_iter()
                    .chain(Peer::REFERENCES)
                    .find(|p| p.short() == name)
                    .ok_or_else(|| format!("unknown peer {name:?}"))?;
                let count = iter
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or("--profile needs a count")?;
                args.profile = Some((peer, count));
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(args)
}

/// N sequential GETs through one peer and nothing else, so that a profiler's
/// totals are that peer's (run under `valgrind --tool=callgrind`).
fn profile(peer: Peer, count: usize) {
    let server = Server::start().expect("loopback server");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let url = server.url("/ok");
    runtime.block_on(async {
        let client = peers::build(peer, Settings::COMPARABLE);
        // Large futures are moved (memcpy) on every poll boundary that boxes or wraps.
        let send_future = match &*client {
            Client::Resilient { client, .. } => std::mem::size_of_val(&client.get(&url).send()),
            Client::Bare { client, .. } => std::mem::size_of_val(&client.get(&url).send()),
            _ => 0,
        };
        if send_future > 0 {
            println!("size of the send() future: {send_future} bytes");
        }
        let (started, cpu_started) = (Instant::now(), thread_cpu());
        for _ in 0..count.min(10_000_000) {
            let status = client.get(&url).await.status;
            assert_eq!(status, Some(StatusCode::OK));
        }
        let n = count.max(1) as f64;
        println!(
            "{}: {count} GETs, {:.1} µs wall and {:.1} µs client CPU per request",
            peer.name(),
            started.elapsed().as_secs_f64() * 1e6 / n,
            (thread_cpu() - cpu_started).as_secs_f64() * 1e6 / n
        );
    });
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    server::self_check();
    if let Some((peer, count)) = args.profile {
        profile(peer, count);
        return;
    }
    let plan = Plan::new(args.quick);
    let wanted = |figure: &str| {
        args.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|f| f == figure))
    };
    let mode = if args.quick { "quick" } else { "full" };
    let started = Instant::now();
    let mut report = Report::default();
    report.section(&format!(
        "# reqwest-resilience benchmarks\n\nGenerated by `cargo run -p \
         reqwest-resilience-bench --release{}` ({mode} run) on {} CPU(s). Server: hyper 1, HTTP/1.1 on 127.0.0.1, own \
         thread and single-threaded runtime; clients on a single-threaded tokio runtime. \
         All reqwest clients: `.no_proxy()`, `TCP_NODELAY`, same pool settings; reqwest's \
         retry layer off (`retry::never()`) for every client except the `for_host` peer, \
         the bare baseline included. All peers compile against the same reqwest 0.13 \
         (reqwest-retry 0.9 and reqwest-middleware 0.5 require it; backon is \
         client-agnostic).\n\nPeers and their comparable settings (4 attempts, base 10 ms, \
         cap 100 ms):\n\n",
        match (args.quick, args.write) {
            (true, true) => " -- --quick --write",
            (true, false) => " -- --quick",
            (false, true) => " -- --write",
            (false, false) => "",
        },
        std::thread::available_parallelism().map_or(0, |n| n.get()),
    ));
    let peers_rows: Vec<Vec<String>> = Peer::ALL
        .iter()
        .map(|p| vec![p.name().to_owned(), p.settings_note().to_owned()])
        .collect();
    report.section(&table(&[" peer", " retry settings"], &peers_rows));

    let mut server = Server::start().expect("loopback server");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    runtime.block_on(async {
        if wanted("p1") {
            p1(&server, &plan, &mut report).await;
        }
        if wanted("p2") {
            p2(&server, &plan, &mut report).await;
        }
        if wanted("p3") {
            p3(&server, &plan, &mut report).await;
        }
        if wanted("p4") {
            p4(&server, &plan, &mut report).await;
        }
        if wanted("p5") {
            p5(&server, &mut report).await;
        }
        if wanted("p7") {
            p7(&server, &plan, &mut report).await;
        }
    });
    drop(runtime);
    server.stop();
    if wanted("p6") {
        p6(&plan, &mut report);
    }
    if wanted("p8") {
        p8(&mut report);
    }

    let rows: Vec<Vec<String>> = report
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
    let _ = writeln!(
        text,
        "\nTotal wall time: {:.0} s.\n",
        started.elapsed().as_secs_f64()
    );
    report.section(&text);
    let summary = summary_line(&report.summary);
    println!("{summary}");

    if args.write {
        // The workspace root's docs/, one level above this member.
        let member = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let dir = member.parent().unwrap_or(member).join("docs/bench");
        std::fs::create_dir_all(&dir).expect("create docs/bench");
        let mut markdown = report.markdown.clone();
        let _ = writeln!(markdown, "```text\n{summary}\n```");
        std::fs::write(dir.join("results.md"), markdown).expect("write results.md");
        std::fs::write(dir.join("bench.svg"), render_svg(&report, mode)).expect("write bench.svg");
        eprintln!("wrote {} and bench.svg", dir.join("results.md").display());
    }
}
