//! When and whom the killer kills: a seeded schedule (a pure function, tested
//! beside it), followed as the producers' count of finished transactions grows.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::fleet::Fleet;

/// A kill lands up to this long (drawn) after its transaction count is reached.
const JITTER_MS: u64 = 30;

/// One SIGKILL of the schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kill {
    /// Once this many transactions have finished…
    pub after: u64,
    /// …and this much longer…
    pub jitter: Duration,
    /// …this relay is killed (and started again).
    pub victim: usize,
}

/// `kills` kills at moments drawn among `transactions`, in order, each on a
/// drawn relay of `relays`.
pub fn schedule(kills: u64, transactions: u64, relays: usize, seed: u64) -> Vec<Kill> {
    // "kill" in ASCII: the killer's draws are not the proxy's.
    let mut rng = StdRng::seed_from_u64(seed ^ 0x6b69_6c6c);
    let mut moments: Vec<u64> = (0..kills)
        .map(|_| rng.random_range(0..transactions.max(1)))
        .collect();
    moments.sort_unstable();
    moments
        .into_iter()
        .map(|after| Kill {
            after,
            jitter: Duration::from_millis(rng.random_range(0..=JITTER_MS)),
            victim: rng.random_range(0..relays.max(1)),
        })
        .collect()
}

/// Follows `schedule` against the count of `finished` transactions; the kills
/// still due when `producing` is cleared land at once.
pub fn kill_along(
    fleet: &mut Fleet,
    schedule: &[Kill],
    finished: &AtomicU64,
    producing: &AtomicBool,
) {
    for kill in schedule {
        while finished.load(Ordering::SeqCst) < kill.after && producing.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(kill.jitter);
        fleet.kill_and_restart(kill.victim);
    }
}

#[cfg(test)]
mod table {
    use super::*;

    #[test]
    fn a_schedule_is_the_seeds_in_order_within_the_run_and_the_fleet() {
        // (kills, transactions, relays)
        for (kills, transactions, relays) in [(3, 300, 2), (50, 10_000, 2), (5, 1, 3), (0, 10, 2)] {
            let drawn = schedule(kills, transactions, relays, 31);
            assert_eq!(drawn.len() as u64, kills);
            assert!(drawn.windows(2).all(|w| w[0].after <= w[1].after));
            assert!(drawn.iter().all(|k| k.after < transactions.max(1)
                && k.victim < relays
                && k.jitter <= Duration::from_millis(JITTER_MS)));
            assert_eq!(drawn, schedule(kills, transactions, relays, 31));
        }
        assert_ne!(schedule(50, 10_000, 2, 31), schedule(50, 10_000, 2, 32));
        let victims: std::collections::BTreeSet<usize> = schedule(50, 10_000, 2, 31)
            .iter()
            .map(|k| k.victim)
            .collect();
        assert_eq!(victims.len(), 2, "both relays are killed");
    }
}
