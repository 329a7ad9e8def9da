//! The floor's retry-budget deposit: one count per intent into a sliding window.
//!
//! Every intent the crate sends is a deposit into its retry budget, retried or not:
//! the budget needs to know how many ordinary requests there were to know how many
//! retries it may grant. The least a budget can do for that is this: the window of
//! the crate's default budget (10 s in 10 slots of 1 s), one atomic counter per
//! slot that also carries which second it counts, and an atomic add into the slot
//! of the intent's start. No lock, no map, no division; a slot left over from an
//! earlier turn of the window is restarted with a compare-and-swap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Slots in a window; each counts the deposits of one second.
const SLOTS: u64 = 10;
/// A slot's counter: the second it counts in the high bits, the count in the low.
const COUNT_BITS: u32 = 32;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// Deposits over the last 10 s, shared by every intent of a floor client.
#[derive(Debug)]
pub struct DepositWindow {
    origin: Instant,
    slots: [AtomicU64; SLOTS as usize],
}

impl DepositWindow {
    /// An empty window whose seconds are counted from `origin`.
    pub fn new(origin: Instant) -> Self {
        Self {
            origin,
            slots: Default::default(),
        }
    }

    /// The whole seconds from the origin to `now` (0 before it).
    fn second(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.origin).as_secs()
    }

    /// Counts one intent started at `now`.
    pub fn deposit(&self, now: Instant) {
        let second = self.second(now);
        let slot = &self.slots[(second % SLOTS) as usize];
        let stamp = second << COUNT_BITS;
        let seen = slot.load(Ordering::Relaxed);
        if seen & !COUNT_MASK == stamp {
            slot.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // The slot still counts a second one turn of the window ago: restart it. If
        // another intent restarted it first, this one counts in what it restarted.
        if slot
            .compare_exchange(seen, stamp | 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            slot.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The deposits of the 10 seconds ending at `now`.
    pub fn total(&self, now: Instant) -> u64 {
        let second = self.second(now);
        self.slots
            .iter()
            .map(|slot| slot.load(Ordering::Relaxed))
            .filter(|seen| second.saturating_sub(seen >> COUNT_BITS) < SLOTS)
            .map(|seen| seen & COUNT_MASK)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn counts_every_deposit_in_the_window() {
        let origin = Instant::now();
        let window = DepositWindow::new(origin);
        for _ in 0..3 {
            window.deposit(origin);
        }
        window.deposit(origin + Duration::from_millis(1_500));
        assert_eq!(window.total(origin + Duration::from_secs(2)), 4);
    }

    #[test]
    fn deposits_leave_the_window_after_ten_seconds() {
        let origin = Instant::now();
        let window = DepositWindow::new(origin);
        window.deposit(origin);
        window.deposit(origin + Duration::from_secs(5));
        assert_eq!(window.total(origin + Duration::from_secs(9)), 2);
        assert_eq!(window.total(origin + Duration::from_secs(10)), 1);
        // The first second's slot, reused ten seconds later, starts from zero.
        window.deposit(origin + Duration::from_secs(10));
        assert_eq!(window.total(origin + Duration::from_secs(10)), 2);
        assert_eq!(window.total(origin + Duration::from_secs(15)), 1);
        assert_eq!(window.total(origin + Duration::from_secs(20)), 0);
    }

    #[test]
    fn a_fresh_window_is_empty() {
        let origin = Instant::now();
        let window = DepositWindow::new(origin);
        assert_eq!(window.total(origin), 0);
        // Second 0 of a fresh window: a zero slot already carries its stamp.
        window.deposit(origin);
        assert_eq!(window.total(origin), 1);
    }
}
