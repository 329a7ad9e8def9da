//! P8: allocations and bytes allocated per successful single-attempt intent, bare
//! reqwest against each client, counted on the client's thread only.
//!
//! ```text
//! cargo run -p reqwest-resilience-bench --release --bin p8_allocs
//! cargo run -p reqwest-resilience-bench --release --bin p8_allocs -- --requests 2000 --warmup 500
//! ```
//!
//! A binary of its own because a global allocator applies to a whole binary: here
//! it is [`CountingAllocator`], in `bench` (P1–P7) the system allocator. The
//! clients run on a current-thread runtime on the main thread, the loopback server
//! (127.0.0.1 only) on its own thread; only the main thread counts. Every row gets
//! its own client, a warm-up (connection open, pool and timer wheel grown), then
//! two counted batches; the second repeats the first to show the count is
//! deterministic. Prints a markdown section, then one `P8_VALUES …` line that
//! `bench` reads when it runs this binary as a child.

use std::fmt::Write as _;

use metrics_exporter_prometheus::PrometheusBuilder;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::StatusCode;
use reqwest_resilience::{Backoff, Hedging, Metrics, ResilientClient, RetryPolicy};
use reqwest_resilience_bench::alloc_count::{count, Counting, CountingAllocator, Counts};
use reqwest_resilience_bench::floor::{self, Step};
use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::{self, Client, Peer, Settings};
use reqwest_resilience_bench::server::Server;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The clients in table order: bare first (the baseline), the careful bare user,
/// the defaults' work by hand (the floor), the peers, then ours, ours on a prebuilt
/// client, and ours without its timer.
const PEERS: [Peer; 10] = [
    Peer::Bare,
    Peer::BareTimeout,
    Peer::Floor,
    Peer::Builtin,
    Peer::Backon,
    Peer::ReqwestRetry,
    Peer::Resilient,
    Peer::ResilientFromParts,
    Peer::ResilientObserved,
    Peer::ResilientNoTimer,
];

const MAX_REQUESTS: usize = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    Peer(Peer),
    Floor(Step),
    Metrics(Recorder),
    /// reqwest-resilience with hedging on, its delay (1 s) far above every answer
    /// here: the first copy always wins, so the row is the hedged path's own cost.
    Hedged,
}

/// reqwest-resilience with the `Metrics` observer attached, recording into this
/// recorder (set for the client's thread only while its row runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recorder {
    /// None installed: the facade's no-op; what the observer itself costs.
    None,
    /// `metrics-exporter-prometheus`'s recorder (no HTTP listener).
    Prometheus,
}

impl Recorder {
    const ALL: [Recorder; 2] = [Recorder::None, Recorder::Prometheus];
}

impl Row {
    fn name(self) -> &'static str {
        match self {
            Row::Peer(peer) => peer.name(),
            Row::Floor(step) => step.name(),
            Row::Metrics(Recorder::None) => "reqwest-resilience + `Metrics`, no recorder",
            Row::Metrics(Recorder::Prometheus) => {
                "reqwest-resilience + `Metrics`, Prometheus recorder"
            }
            Row::Hedged => "reqwest-resilience, hedging on (the first copy wins)",
        }
    }

    /// The key in the `P8_VALUES` line.
    fn short(self) -> &'static str {
        match self {
            Row::Peer(peer) => peer.short(),
            Row::Floor(step) => step.short(),
            Row::Metrics(Recorder::None) => "resilience-metrics",
            Row::Metrics(Recorder::Prometheus) => "resilience-metrics-prometheus",
            Row::Hedged => "resilience-hedged",
        }
    }
}

/// The client a row sends through.
enum RowClient {
    Peer(std::sync::Arc<Client>),
    Floor(reqwest::Client, Step),
}

impl RowClient {
    fn build(row: Row) -> RowClient {
        match row {
            Row::Peer(peer) => RowClient::Peer(peers::build(peer, Settings::COMPARABLE)),
            Row::Floor(step) => RowClient::Floor(peers::bare_reqwest(), step),
            // `Peer::Resilient`'s client (builder defaults but the attempts and the
            // backoff) with the observer, or with hedging on.
            Row::Metrics(_) | Row::Hedged => {
                let policy = RetryPolicy::builder()
                    .max_attempts(Settings::COMPARABLE.max_attempts)
                    .backoff(Backoff::full_jitter(peers::BASE, peers::CAP));
                let policy = if row == Row::Hedged {
                    policy.hedging(Hedging::fixed(std::time::Duration::from_secs(1)))
                } else {
                    policy.observer(Metrics::new())
                };
                let policy = policy.build().expect("valid policy");
                let client = ResilientClient::from_builder(peers::bare_reqwest_builder(), policy)
                    .expect("reqwest client");
                RowClient::Peer(std::sync::Arc::new(Client::Resilient {
                    client,
                    deadline: None,
                }))
            }
        }
    }

    /// `n` sequential GETs; how many came back 200.
    async fn run(&self, url: &str, n: usize) -> usize {
        let mut ok = 0;
        for serial in 0..n {
            let outcome = match self {
                RowClient::Peer(client) => client.get(url).await,
                RowClient::Floor(client, step) => {
                    floor::get(client, url, *step, serial as u64).await
                }
            };
            ok += usize::from(outcome.status == Some(StatusCode::OK));
        }
        ok
    }
}

struct Measured {
    row: Row,
    first: Counts,
    repeat: Counts,
}

struct Args {
    requests: usize,
    warmup: usize,
}

const USAGE: &str = "usage: p8_allocs [--requests N (2000)] [--warmup N (500)]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        requests: 2_000,
        warmup: 500,
    };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            iter.next()
                .and_then(|n| n.parse().ok())
                .filter(|n| (1..=MAX_REQUESTS).contains(n))
                .ok_or_else(|| format!("{name} needs a count from 1 to {MAX_REQUESTS}"))
        };
        match arg.as_str() {
            "--requests" => args.requests = number("--requests")?,
            "--warmup" => args.warmup = number("--warmup")?,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(args)
}

fn measure(runtime: &tokio::runtime::Runtime, url: &str, args: &Args, row: Row) -> Measured {
    let prometheus = PrometheusBuilder::new().build_recorder();
    let _recorder = (row == Row::Metrics(Recorder::Prometheus))
        .then(|| metrics::set_default_local_recorder(&prometheus));
    let client = RowClient::build(row);
    runtime.block_on(async {
        let ok = client.run(url, args.warmup).await;
        assert_eq!(ok, args.warmup, "{}: warm-up", row.name());
        let mut batches = [Counts::default(); 2];
        for batch in &mut batches {
            let counting = Counting::start();
            let ok = client.run(url, args.requests).await;
            *batch = counting.finish();
            assert_eq!(
                ok,
                args.requests,
                "{}: every request should succeed",
                row.name()
            );
        }
        Measured {
            row,
            first: batches[0],
            repeat: batches[1],
        }
    })
}

/// The pieces of a request copy, each counted on its own (no I/O).
fn components(url: &str) -> Vec<(&'static str, Counts)> {
    let client = peers::bare_reqwest();
    let request = client.get(url).build().expect("a valid request");
    let parsed = request.url().clone();
    let value = HeaderValue::from_static("0123456789abcdef0123456789abcdef0123");
    let mut one_header = HeaderMap::new();
    one_header.insert(HeaderName::from_static("idempotency-key"), value.clone());
    let mut without_extensions = floor::copy_by_hand(&request);
    let mut keyed = client.get(url).build().expect("a valid request");
    *keyed.headers_mut() = one_header.clone();
    vec![
        ("`Url::clone`", count(|| parsed.clone()).1),
        (
            "`HeaderMap::clone`, empty",
            count(|| HeaderMap::new().clone()).1,
        ),
        (
            "`HeaderMap::clone`, one header",
            count(|| one_header.clone()).1,
        ),
        (
            "`Request::try_clone`, GET without headers or body",
            count(|| request.try_clone()).1,
        ),
        (
            "`Request::try_clone`, GET with one header",
            count(|| keyed.try_clone()).1,
        ),
        (
            "copy by hand (method, URL, headers, version), GET without headers",
            count(|| floor::copy_by_hand(&request)).1,
        ),
        (
            "`Request::timeout_mut()` on a request without extensions",
            count(move || {
                *without_extensions.timeout_mut() = None;
                without_extensions
            })
            .1,
        ),
        (
            "`HeaderValue::from_bytes`, 36 bytes",
            count(|| HeaderValue::from_bytes(&[b'a'; 36])).1,
        ),
        (
            "`HeaderMap::insert`, first header",
            count(|| {
                let mut map = HeaderMap::new();
                map.insert(HeaderName::from_static("x-request-id"), value.clone());
                map
            })
            .1,
        ),
        (
            "`Extensions::insert`, first value",
            count(|| {
                let mut extensions = http::Extensions::new();
                extensions.insert(1u64);
                extensions
            })
            .1,
        ),
    ]
}

fn per_request(counts: Counts, requests: usize) -> (f64, f64) {
    let n = requests as f64;
    (counts.allocations as f64 / n, counts.bytes as f64 / n)
}

fn render(measured: &[Measured], parts: &[(&'static str, Counts)], args: &Args) -> String {
    let n = args.requests;
    let bare = per_request(measured[0].first, n);
    let mut text = format!(
        "\n## P8 — allocations per successful single-attempt intent\n\n{n} sequential \
         GETs (`/ok`, 200, body read) per row after {} warm-up requests, counted by a \
         counting global allocator on the client's thread only (current-thread runtime; \
         the server runs on its own thread and is not counted), in a binary of its own \
         (`p8_allocs`). *Allocations* counts `alloc`, `alloc_zeroed` and `realloc`; \
         *bytes* are the sizes asked for (for `realloc`, the new size). *Repeat* is a second batch of {n} on the same \
         client: the figure is deterministic when it equals the first.\n\n",
        args.warmup
    );
    let rows: Vec<Vec<String>> = measured
        .iter()
        .map(|m| {
            let (allocs, bytes) = per_request(m.first, n);
            let (repeat, _) = per_request(m.repeat, n);
            vec![
                m.row.name().to_owned(),
                format!("{allocs:.1}"),
                format!("{:+.1}", allocs - bare.0),
                format!("{bytes:.0}"),
                format!("{:+.0}", bytes - bare.1),
                format!("{:.1}", m.first.reallocs as f64 / n as f64),
                format!("{:.1}", m.first.frees as f64 / n as f64),
                format!("{repeat:.1}"),
            ]
        })
        .collect();
    text.push_str(&table(
        &[
            " client",
            "allocations / request",
            "vs bare",
            "bytes / request",
            "bytes vs bare",
            "of which realloc",
            "frees / request",
            "repeat: allocations / request",
        ],
        &rows,
    ));
    text.push_str(
        "\nThrough `from_parts` the crate wraps a client it did not build and cannot read \
         that client's timeout, so every attempt carries a per-request timeout, which \
         reqwest keeps in the request's extension map (`Request::timeout_mut()` below); \
         through `from_builder` the attempt timeout is the client's own.\n",
    );
    text.push_str(
        "\nThe pieces of a request copy and of the headers a layer adds, each counted \
         on its own:\n\n",
    );
    let part_rows: Vec<Vec<String>> = parts
        .iter()
        .map(|(name, counts)| {
            vec![
                (*name).to_owned(),
                counts.allocations.to_string(),
                counts.bytes.to_string(),
            ]
        })
        .collect();
    text.push_str(&table(&[" operation", "allocations", "bytes"], &part_rows));
    let mut values = String::from("P8_VALUES");
    for m in measured {
        let (allocs, bytes) = per_request(m.first, n);
        let _ = write!(values, " {}={allocs:.2}/{bytes:.0}", m.row.short());
    }
    let _ = writeln!(text, "\n{values}");
    text
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let server = Server::start().expect("loopback server");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("client runtime");
    let url = server.url("/ok");
    let rows = PEERS
        .into_iter()
        .map(Row::Peer)
        .chain(Step::ALL.into_iter().map(Row::Floor))
        .chain(Recorder::ALL.into_iter().map(Row::Metrics))
        .chain([Row::Hedged]);
    let measured: Vec<Measured> = rows
        .map(|row| measure(&runtime, &url, &args, row))
        .collect();
    let parts = components(&url);
    print!("{}", render(&measured, &parts, &args));
}
