//! The one conversion of a ratio into exact integers, shared by every gate.
//!
//! Gates compare ratios of counts (`failures / attempts >= 0.5`, `withdrawals <=
//! 0.1 × deposits`). Done in floats, a 60 % budget can grant 100 % (tower issue
//! 857); done here, a setting becomes a whole number of millionths once, at build
//! time, and every comparison is a `u128` product that cannot round or overflow.

/// Millionths in one.
pub(crate) const SCALE: u64 = 1_000_000;

/// A non-negative ratio in millionths, rounded down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Millionths(u64);

impl Millionths {
    /// The largest `n` with `n / 10^6 <= ratio`, capped at `max` whole units.
    ///
    /// This is `floor(ratio × 10^6)`, except that the float product may land one
    /// ulp below an integer (so `floor` would lose a millionth of what the user
    /// wrote); comparing `n / 10^6` against `ratio` in `f64` undoes that. Callers
    /// validate `ratio` first (finite, not negative).
    pub(crate) fn floor(ratio: f64, max: u64) -> Self {
        let scale = SCALE as f64;
        let top = (max * SCALE) as f64;
        let mut n = (ratio * scale).floor().clamp(0.0, top);
        while n > 0.0 && n / scale > ratio {
            n -= 1.0;
        }
        while n < top && (n + 1.0) / scale <= ratio {
            n += 1.0;
        }
        Millionths(n as u64)
    }

    /// A ratio given in millionths, capped at one.
    pub(crate) fn from_millionths(n: u64) -> Self {
        Millionths(n.min(SCALE))
    }

    /// The ratio itself, in millionths.
    pub(crate) fn get(self) -> u64 {
        self.0
    }

    /// `self × count`, in millionths, exactly.
    pub(crate) fn of(self, count: u64) -> u128 {
        u128::from(self.0) * u128::from(count)
    }
}

/// `count` in millionths, exactly: the other side of a comparison with [`Millionths::of`].
pub(crate) fn whole(count: u64) -> u128 {
    u128::from(count) * u128::from(SCALE)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::mpsc;
    use std::time::Duration;

    /// Runs `check` on a thread of its own and fails if it has not finished within a
    /// bound far above its run time: a correction loop that no longer converges is a
    /// failure of this test, not a hung test binary.
    fn finishes(check: impl FnOnce() + Send + 'static) {
        let (done, finished) = mpsc::channel();
        let checking = std::thread::spawn(move || {
            check();
            let _ = done.send(());
        });
        match finished.recv_timeout(Duration::from_secs(60)) {
            Ok(()) => checking.join().expect("the check passed"),
            // The check panicked: report its failure.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                if let Err(panic) = checking.join() {
                    std::panic::resume_unwind(panic);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("the conversion did not finish"),
        }
    }

    #[test]
    fn decimal_ratios_scale_exactly() {
        finishes(|| {
            for n in 1..=SCALE {
                assert_eq!(Millionths::floor(n as f64 / 1e6, 1).get(), n);
            }
        });
        #[rustfmt::skip]
        let rows = [
            ("below a millionth",   1e-9,        1,    0),
            ("digits past the 6th", 0.123_456_9, 1,    123_456),
            ("capped at max",       1.5,         1,    SCALE),
            ("above one when allowed", 2.5,      1000, 2_500_000),
            ("zero",                0.0,         1,    0),
            // The float just below 0.000218: its product rounds up to 218.0, and
            // 218 millionths would be more than the ratio written.
            ("a product rounded up", 0.000_217_999_999_999_999_99, 1, 217),
            // 0.000493 × 10^6 lands just below 493.0: its floor loses a millionth.
            ("a product rounded down", 0.000_493, 1, 493),
        ];
        finishes(move || {
            for (name, ratio, max, expected) in rows {
                assert_eq!(Millionths::floor(ratio, max).get(), expected, "{name}");
            }
        });
        assert_eq!(Millionths::floor(0.5, 1).of(3), 1_500_000);
        assert_eq!(whole(3), 3_000_000);
    }
}
