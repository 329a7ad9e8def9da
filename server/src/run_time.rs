//! How long this server's handlers typically run: what a 409's `Retry-After` is
//! estimated from (`decision::in_progress_retry_after`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A moving average of finished runs, in milliseconds (0: none yet).
///
/// Each new run moves the average an eighth of the way towards it: recent enough to
/// follow a slowing database, steady enough that one outlier does not send every
/// duplicate away for long. Updates from concurrent runs may overwrite each other;
/// an estimate loses nothing by that.
#[derive(Debug, Default)]
pub(crate) struct RunTimes {
    average_ms: AtomicU64,
}

impl RunTimes {
    pub(crate) fn record(&self, run: Duration) {
        // At least 1 ms, so that a recorded run is never read back as "none yet".
        let run_ms = u64::try_from(run.as_millis()).unwrap_or(u64::MAX).max(1);
        let old = self.average_ms.load(Ordering::Relaxed);
        let new = if old == 0 {
            run_ms
        } else {
            (old.saturating_mul(7).saturating_add(run_ms) / 8).max(1)
        };
        self.average_ms.store(new, Ordering::Relaxed);
    }

    pub(crate) fn typical(&self) -> Option<Duration> {
        match self.average_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_average_follows_the_runs() {
        let runs = RunTimes::default();
        assert_eq!(runs.typical(), None);
        runs.record(2000 * MS);
        assert_eq!(runs.typical(), Some(2000 * MS));
        runs.record(10 * MS);
        assert_eq!(runs.typical(), Some(1751 * MS));
        runs.record(Duration::ZERO);
        assert_eq!(runs.typical(), Some(1532 * MS), "a zero run counts as 1 ms");
    }
}
