//! `--profile PEER N`: one peer alone, for a profiler.

use std::time::Instant;

use reqwest::StatusCode;
use reqwest_resilience_bench::cpu::thread_cpu;
use reqwest_resilience_bench::peers::{self, Client, Peer, Settings};
use reqwest_resilience_bench::server::Server;

/// N sequential GETs through one peer and nothing else, so that a profiler's
/// totals are that peer's (run under `valgrind --tool=callgrind`).
pub fn profile(peer: Peer, count: usize) {
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
