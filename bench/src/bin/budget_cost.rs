//! What the retry budget costs an intent on the success path: one `deposit` per
//! intent (a retry adds one `try_withdraw`). Measured single-threaded and with every
//! core hammering one shared budget. A policy with `no_budget()` has no budget gate,
//! so it calls nothing at all.
//!
//! Run: `cargo run -p reqwest-resilience-bench --release --bin budget_cost`

use std::hint::black_box;
use std::time::Instant;

use reqwest_resilience::RetryBudget;

const OPERATIONS: u32 = 2_000_000;

/// Wall time ÷ operations, in nanoseconds.
fn per_operation(budget: &RetryBudget, threads: usize) -> f64 {
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                for _ in 0..OPERATIONS {
                    budget.deposit(black_box("api.example"));
                }
            });
        }
    });
    started.elapsed().as_secs_f64() * 1e9 / (f64::from(OPERATIONS) * threads as f64)
}

fn main() {
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    println!("| budget | threads | ns per deposit (wall / operations) |");
    println!("|---|---:|---:|");
    for (name, budget) in [
        ("default (10 %, 10 s, reserve 10)", RetryBudget::default()),
        (
            "per host",
            RetryBudget::builder()
                .per_host(true)
                .build()
                .expect("valid"),
        ),
    ] {
        for n in [1, threads] {
            println!("| {name} | {n} | {:.1} |", per_operation(&budget, n));
        }
    }
}
