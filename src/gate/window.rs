//! A sliding window of time slots, shared by the retry budget, the circuit breaker
//! and the adaptive throttle.
//!
//! Each counts events over a recent window. `SLOTS` slots of `window / SLOTS` each
//! keep memory constant whatever the traffic, and old counts fall out a slot at a
//! time. A slot remembers its epoch, so a stale slot is reset when written and
//! skipped when read: no timer has to sweep them.

use std::time::Duration;

use crate::clock::Instant;

/// Slots in a window.
pub(crate) const SLOTS: u64 = 10;

/// Numbers time in slots: epoch `n` is the `n`-th slot since `origin`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Epochs {
    origin: Instant,
    /// At most an hour / `SLOTS` in practice, so it fits a `u64` (u64 division is
    /// several times cheaper than u128 on the budget's hot path).
    slot_nanos: u64,
}

impl Epochs {
    pub(crate) fn new(origin: Instant, window: Duration) -> Self {
        let slot_nanos = u64::try_from(window.as_nanos() / u128::from(SLOTS))
            .unwrap_or(u64::MAX)
            .max(1);
        Epochs { origin, slot_nanos }
    }

    /// The epoch of `now`; times before the origin are epoch 0.
    pub(crate) fn of(&self, now: Instant) -> u64 {
        let nanos = u64::try_from(now.saturating_duration_since(self.origin).as_nanos())
            .unwrap_or(u64::MAX);
        nanos / self.slot_nanos
    }
}

/// The counters one slot holds.
pub(crate) trait Counts: Copy + Default {
    /// Field by field, saturating: a sum must never wrap to a small number.
    fn saturating_add(self, other: Self) -> Self;
}

/// Declares a slot's counters: a struct of `u64` counts, added field by field.
macro_rules! counts {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($(#[$field_meta:meta])* $field:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
        $vis struct $name {
            $($(#[$field_meta])* $vis $field: u64),+
        }

        impl $crate::gate::window::Counts for $name {
            fn saturating_add(self, other: Self) -> Self {
                $name {
                    $($field: self.$field.saturating_add(other.$field)),+
                }
            }
        }
    };
}
pub(crate) use counts;

/// A plain count.
impl Counts for u64 {
    fn saturating_add(self, other: u64) -> u64 {
        u64::saturating_add(self, other)
    }
}

#[derive(Clone, Copy, Default)]
struct Slot<C> {
    epoch: u64,
    counts: C,
}

/// Counts over the last `SLOTS` epochs. Time never goes backwards inside a window:
/// an epoch earlier than one already seen counts as that later one, so reordered
/// callers join the newest slot and can never revive an old one.
pub(crate) struct Window<C> {
    latest: u64,
    slots: [Slot<C>; SLOTS as usize],
}

impl<C: Counts> Default for Window<C> {
    fn default() -> Self {
        Window {
            latest: 0,
            slots: [Slot::default(); SLOTS as usize],
        }
    }
}

impl<C: Counts> Window<C> {
    /// Moves the window to `epoch` unless it is already later; returns the epoch in use.
    pub(crate) fn advance(&mut self, epoch: u64) -> u64 {
        self.latest = self.latest.max(epoch);
        self.latest
    }

    /// The counts of the slot for `epoch` (advanced first), reset if they are stale.
    pub(crate) fn slot(&mut self, epoch: u64) -> &mut C {
        let epoch = self.advance(epoch);
        let slot = &mut self.slots[(epoch % SLOTS) as usize];
        if slot.epoch != epoch {
            *slot = Slot {
                epoch,
                counts: C::default(),
            };
        }
        &mut slot.counts
    }

    /// The counts summed over the slots still live at `epoch` (or at the latest seen).
    pub(crate) fn sum(&self, epoch: u64) -> C {
        self.sum_before(epoch, u64::MAX)
    }

    /// Like [`sum`](Self::sum), over the live slots of epochs before `before` only.
    pub(crate) fn sum_before(&self, epoch: u64, before: u64) -> C {
        let epoch = epoch.max(self.latest);
        self.slots
            .iter()
            .filter(|s| epoch.saturating_sub(s.epoch) < SLOTS && s.epoch < before)
            .fold(C::default(), |sum, s| sum.saturating_add(s.counts))
    }

    /// The counts of the slot for `epoch` if it is still the one written for that
    /// epoch and live: for taking back what was counted there, never creating or
    /// reviving a slot.
    pub(crate) fn live_slot(&mut self, epoch: u64) -> Option<&mut C> {
        let latest = self.latest;
        let slot = &mut self.slots[(epoch % SLOTS) as usize];
        (slot.epoch == epoch && latest.saturating_sub(epoch) < SLOTS).then_some(&mut slot.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn sums_the_live_slots() {
        // A 10 s window: slots of 1 s. Each write adds 1; times in ms.
        #[rustfmt::skip]
        let rows: [(&str, &[u64], u64, u64); 12] = [
            ("one slot",                           &[0, 300, 999],             999,       3),
            ("every slot live",                    &[0, 1_000, 5_000, 9_000],  9_999,     4),
            ("wrap-around after a full window",    &[0, 1_000, 5_000, 10_000], 10_000,    3),
            ("stale slot reset on write",          &[2_500, 12_500],           12_500,    1),
            ("stale slot skipped on read",         &[2_500],                   12_000,    0),
            ("last moment a slot is live",         &[2_500],                   11_999,    1),
            ("write exactly at a slot boundary",   &[999, 1_000],              10_000,    1),
            ("read exactly at a slot boundary",    &[1_000],                   11_000,    0),
            ("read long after everything expired", &[0, 4_000, 9_000],         1_000_000, 0),
            ("clock did not advance",              &[5_000, 5_000, 5_000],     5_000,     3),
            ("late write joins the newest slot",   &[5_000, 3_000],            14_999,    2),
            ("early read counts as the latest",    &[20_000],                  0,         1),
        ];
        let base = Instant::now();
        let epochs = Epochs::new(base, Duration::from_secs(10));
        for (name, writes, read, expected) in rows {
            let mut window = Window::<u64>::default();
            for &at in writes {
                *window.slot(epochs.of(base + ms(at))) += 1;
            }
            assert_eq!(window.sum(epochs.of(base + ms(read))), expected, "{name}");
        }
    }

    #[test]
    fn older_slots_and_live_slots() {
        // Slots of 1 s; one write at each of 0, 1, 2, 3 s.
        let base = Instant::now();
        let epochs = Epochs::new(base, Duration::from_secs(10));
        let mut window = Window::<u64>::default();
        for at in [0, 1_000, 2_000, 3_000] {
            *window.slot(epochs.of(base + ms(at))) += 1;
        }
        #[rustfmt::skip]
        let rows = [
            ("before epoch 2",       3,  2,        2),
            ("before epoch 0",       3,  0,        0),
            ("before anything later", 3, u64::MAX, 4),
            ("epoch 0 expired",      10, 2,        1),
        ];
        for (name, now, before, expected) in rows {
            assert_eq!(window.sum_before(now, before), expected, "{name}");
        }
        // Taking back: only from the slot written for that epoch, while live.
        *window.live_slot(1).expect("live") -= 1;
        assert_eq!(window.sum(3), 3);
        assert!(window.live_slot(5).is_none(), "never written");
        assert!(
            window.live_slot(11).is_none(),
            "slot 1 holds epoch 1, not 11"
        );
        window.advance(11);
        assert!(window.live_slot(1).is_none(), "expired");
        assert!(window.live_slot(2).is_some());
    }

    #[test]
    fn epochs_count_slots_from_the_origin() {
        let base = Instant::now() + ms(1_000);
        #[rustfmt::skip]
        let rows = [
            ("before the origin",      Duration::from_secs(10), base - ms(500), 0),
            ("a tenth of the window",  Duration::from_secs(1),  base + ms(250), 2),
            ("slots of at least 1 ns", Duration::from_nanos(5), base + ms(1),   1_000_000),
        ];
        for (name, window, now, expected) in rows {
            assert_eq!(Epochs::new(base, window).of(now), expected, "{name}");
        }
    }
}
