//! The pieces the benchmark binaries share: the loopback server, the clients
//! compared, the contention simulation, the SVG writer and the allocation counter.
//!
//! Binaries: `bench` (P1–P12, `src/bin/bench/`), `p8_allocs` (P8 on its own, with a
//! counting global allocator), `p12_relay` (P12's outbox relay in another process),
//! `budget_cost` (what a budget deposit costs).

pub mod alloc_count;
pub mod child;
pub mod cpu;
pub mod floor;
pub mod markdown;
pub mod p8_child;
pub mod peers;
pub mod row;
pub mod server;
pub mod sim;
pub mod svg;
