//! Times and durations as the stores' columns hold them: whole milliseconds in
//! an `i64` (SQLite's `INTEGER`, PostgreSQL's `BIGINT`), times counted from the
//! Unix epoch.
//!
//! Every conversion saturates instead of failing or panicking: a column is
//! compared with others (a lease's end with "now", a retention's end with a
//! prune's cutoff), and a clamped value keeps those comparisons in the right
//! order where an error would stop a store over a clock it cannot fix.
//!
//! * Before the epoch a time is stored as 0: a clock set before 1970 is a
//!   broken clock, and both stores compare columns as non-negative counts. A
//!   negative column (never written through this module) reads as the epoch.
//! * Beyond `i64::MAX` milliseconds (about 292 million years) a time or
//!   duration is stored as `i64::MAX`, which reads back as the latest time the
//!   platform's `SystemTime` holds at or below it ("never", for a lease or a
//!   retention).
//! * Sub-millisecond parts are dropped (rounded toward the epoch / zero).

use std::time::{Duration, SystemTime};

/// `time` as milliseconds since the Unix epoch: 0 before the epoch, `i64::MAX`
/// beyond it.
pub fn from_time(time: SystemTime) -> i64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(since) => from_duration(since),
        Err(_) => 0,
    }
}

/// The time a [`from_time`] column holds: the epoch for a negative value; for
/// a value beyond what `SystemTime` holds on this platform (none on Linux or
/// macOS, past the year 30828 on Windows), the latest time it does hold.
pub fn to_time(millis: i64) -> SystemTime {
    let millis = u64::try_from(millis).unwrap_or(0);
    if let Some(time) = at(millis) {
        return time;
    }
    // The largest count that fits: found by halving the gap, in at most 64 tries.
    let (mut fits, mut too_far) = (0_u64, millis);
    while too_far - fits > 1 {
        let middle = fits + (too_far - fits) / 2;
        match at(middle) {
            Some(_) => fits = middle,
            None => too_far = middle,
        }
    }
    at(fits).unwrap_or(SystemTime::UNIX_EPOCH)
}

fn at(millis: u64) -> Option<SystemTime> {
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_millis(millis))
}

/// `duration` in whole milliseconds, `i64::MAX` beyond it.
pub fn from_duration(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The duration a [`from_duration`] column holds: zero for a negative value.
pub fn to_duration(millis: i64) -> Duration {
    Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPOCH: SystemTime = SystemTime::UNIX_EPOCH;
    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn times_to_columns() {
        let table: [(&str, SystemTime, i64); 8] = [
            ("the epoch", EPOCH, 0),
            ("one ms after", EPOCH + MS, 1),
            (
                "under a ms rounds down",
                EPOCH + Duration::from_micros(1_999),
                1,
            ),
            ("a ms before the epoch", EPOCH - MS, 0),
            ("a µs before the epoch", EPOCH - Duration::from_micros(1), 0),
            (
                "2024-01-01",
                EPOCH + Duration::from_secs(1_704_067_200),
                1_704_067_200_000,
            ),
            (
                "i64::MAX ms",
                EPOCH + Duration::from_millis(i64::MAX as u64),
                i64::MAX,
            ),
            (
                "a ms past i64::MAX ms",
                EPOCH + Duration::from_millis(i64::MAX as u64) + MS,
                i64::MAX,
            ),
        ];
        for (case, time, millis) in table {
            assert_eq!(from_time(time), millis, "{case}");
        }
    }

    #[test]
    fn columns_to_times() {
        let table: [(&str, i64, SystemTime); 5] = [
            ("zero", 0, EPOCH),
            ("one", 1, EPOCH + MS),
            ("negative", -1, EPOCH),
            ("i64::MIN", i64::MIN, EPOCH),
            (
                "2024-01-01",
                1_704_067_200_000,
                EPOCH + Duration::from_secs(1_704_067_200),
            ),
        ];
        for (case, millis, time) in table {
            assert_eq!(to_time(millis), time, "{case}");
        }
    }

    #[test]
    fn the_largest_column_reads_back_without_panicking() {
        let latest = to_time(i64::MAX);
        assert!(latest > EPOCH + Duration::from_secs(365 * 24 * 3600 * 10_000));
        // Where SystemTime holds it (Unix), it round-trips exactly; elsewhere it
        // reads as the latest time that fits, far in the future still.
        #[cfg(unix)]
        assert_eq!(from_time(latest), i64::MAX);
        #[cfg(not(unix))]
        assert!(from_time(latest) > from_time(EPOCH + Duration::from_secs(1 << 40)));
    }

    #[test]
    fn a_stored_time_reads_back_to_the_millisecond() {
        for millis in [0, 1, 999, 1_000, 1_704_067_200_123, i64::MAX / 2] {
            assert_eq!(from_time(to_time(millis)), millis, "{millis}");
        }
    }

    #[test]
    fn durations_both_ways() {
        let table: [(&str, Duration, i64); 5] = [
            ("zero", Duration::ZERO, 0),
            ("under a ms", Duration::from_micros(999), 0),
            ("a lease", Duration::from_secs(60), 60_000),
            (
                "i64::MAX ms",
                Duration::from_millis(i64::MAX as u64),
                i64::MAX,
            ),
            ("Duration::MAX", Duration::MAX, i64::MAX),
        ];
        for (case, duration, millis) in table {
            assert_eq!(from_duration(duration), millis, "{case}");
        }
        assert_eq!(to_duration(-5), Duration::ZERO, "negative");
        assert_eq!(to_duration(60_000), Duration::from_secs(60));
        assert_eq!(
            to_duration(i64::MAX),
            Duration::from_millis(i64::MAX as u64)
        );
    }
}
