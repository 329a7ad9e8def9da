//! Side-by-side benchmarks of reqwest-resilience and its peers.
//!
//! ```text
//! cargo run -p reqwest-resilience-bench --release -- --quick      # a few minutes on 2 cores
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
//! intent, P9 overload (budget, circuit breaker, adaptive throttle through an
//! outage), P10 durable throughput (the journal on SQLite and PostgreSQL against
//! the same database's raw rate), P11 idempotent endpoints (tower-idempotency's
//! layer on an axum route, in process and at 32 concurrent over HTTP), P12 the outbox
//! (what an enqueue adds to a business transaction, commit-to-first-byte with the
//! relay in another process — the `p12_relay` binary, started as a child — and the
//! relay's rate against the database's), P13 hedged requests (this crate's fixed and
//! adaptive hedging against its unhedged self and `tower::hedge`, on a seeded slow
//! tail, beside fast 503s and through an outage). P8 needs a counting global allocator, and a global allocator applies to
//! a whole binary, so it runs in a binary of its own (`p8_allocs`, see
//! `src/bin/p8_allocs.rs`) that this one builds and runs as a child process (P1–P7
//! keep the system allocator). The program prints one markdown table per figure and
//! a final `SUMMARY …` line.

mod load;
mod p10_durable;
mod p11_endpoints;
mod p12_outbox;
mod p13_hedging;
mod p1_overhead;
mod p2_throughput;
mod p3_amplification;
mod p4_retry_after;
mod p5_deadline;
mod p6_contention;
mod p7_memory;
mod p8_allocations;
mod p9_overload;
mod picture;
mod plan;
mod profile;
mod report;
mod stats;

use std::fmt::Write as _;
use std::time::Instant;

use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::Peer;
use reqwest_resilience_bench::server::{self, Server};

use plan::Plan;
use report::{summary_line, Report};

const USAGE: &str = "usage: bench [--quick] [--write] [--only p1,p2,…,p13] \
                     [--profile bare|bare-timeout|floor|resilience|\
                     resilience-no-timer|reqwest-retry|builtin|backon N]";

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
        profile::profile(peer, count);
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
            p1_overhead::run(&server, &plan, &mut report).await;
        }
        if wanted("p2") {
            p2_throughput::run(&server, &plan, &mut report).await;
        }
        if wanted("p3") {
            p3_amplification::run(&server, &plan, &mut report).await;
        }
        if wanted("p4") {
            p4_retry_after::run(&server, &plan, &mut report).await;
        }
        if wanted("p5") {
            p5_deadline::run(&server, &mut report).await;
        }
        if wanted("p7") {
            p7_memory::run(&server, &plan, &mut report).await;
        }
        if wanted("p9") {
            p9_overload::run(&plan, &mut report).await;
        }
        if wanted("p10") {
            p10_durable::run(&server, &plan, &mut report).await;
        }
        if wanted("p11") {
            p11_endpoints::run(&plan, &mut report).await;
        }
        if wanted("p12") {
            p12_outbox::run(&plan, &mut report).await;
        }
        if wanted("p13") {
            p13_hedging::run(&plan, &mut report).await;
        }
    });
    drop(runtime);
    server.stop();
    if wanted("p6") {
        p6_contention::run(&plan, &mut report);
    }
    if wanted("p8") {
        p8_allocations::run(&mut report);
    }

    let targets = report.targets_section(started.elapsed().as_secs_f64());
    report.section(&targets);
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
        std::fs::write(dir.join("bench.svg"), picture::render_svg(&report, mode))
            .expect("write bench.svg");
        eprintln!("wrote {} and bench.svg", dir.join("results.md").display());
    }
}
