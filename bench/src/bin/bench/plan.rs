//! How many iterations each figure runs: `--quick` runs the same figures with fewer.

use std::time::Duration;

/// Iteration counts: `--quick` runs the same figures with fewer iterations.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub p1_warmup: usize,
    pub p1_rounds: usize,
    pub p1_per_round: usize,
    pub p2_rounds: usize,
    pub p2_per_round: usize,
    pub p3_intents: usize,
    pub p3_limit: Duration,
    pub p4_intents: usize,
    pub p6_runs: u32,
    pub p7_intents: usize,
    /// P9 runs its short phases.
    pub p9_quick: bool,
    pub p10_rounds: usize,
    pub p10_round: Duration,
    pub p10_latency_pairs: usize,
    pub p11_rounds: usize,
    pub p11_round: Duration,
    /// P11 in process: request-body bytes per round and size, capped in requests.
    pub p11_bytes_per_round: usize,
    pub p11_max_per_round: usize,
    pub p11_db_rounds: usize,
    /// P12: rounds (and length per kind) of the enqueue cost and of the relay rate.
    pub p12_rounds: usize,
    pub p12_round: Duration,
    /// P12: intents sent one at a time to an idle relay.
    pub p12_idle_intents: usize,
    /// P12: how long 32 producers commit for the latency at load.
    pub p12_load: Duration,
    /// P12: queued intents each relay-rate round drains.
    pub p12_backlog: usize,
    /// P13: runs (each figure is the worst of them), measured intents per row,
    /// warm-up intents before them, measured intents in the outage rows.
    /// Seeds, and rounds per seed (every row once per round).
    pub p13_runs: usize,
    pub p13_rounds: usize,
    pub p13_intents: usize,
    pub p13_warmup: usize,
    pub p13_outage_intents: usize,
}

impl Plan {
    pub fn new(quick: bool) -> Plan {
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
                p9_quick: true,
                p10_rounds: 3,
                p10_round: Duration::from_secs(2),
                p10_latency_pairs: 200,
                p11_rounds: 5,
                p11_round: Duration::from_secs(1),
                p11_bytes_per_round: 20_000_000,
                p11_max_per_round: 2_000,
                p11_db_rounds: 3,
                p12_rounds: 3,
                p12_round: Duration::from_secs(1),
                p12_idle_intents: 100,
                p12_load: Duration::from_secs(2),
                p12_backlog: 1_000,
                p13_runs: 1,
                p13_rounds: 1,
                p13_intents: 2_000,
                p13_warmup: 3_000,
                p13_outage_intents: 6_000,
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
                p9_quick: false,
                p10_rounds: 7,
                p10_round: Duration::from_secs(4),
                p10_latency_pairs: 1_000,
                p11_rounds: 11,
                p11_round: Duration::from_secs(2),
                p11_bytes_per_round: 50_000_000,
                p11_max_per_round: 5_000,
                p11_db_rounds: 7,
                p12_rounds: 7,
                p12_round: Duration::from_secs(2),
                p12_idle_intents: 500,
                p12_load: Duration::from_secs(5),
                p12_backlog: 3_000,
                p13_runs: 3,
                p13_rounds: 3,
                p13_intents: 10_000,
                p13_warmup: 3_000,
                p13_outage_intents: 12_000,
            }
        }
    }
}
