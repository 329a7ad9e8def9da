//! When an open intent (its outcome unknown, or a 409 "in progress") is due again:
//! a pure rule over its runs so far and what the server said.

use std::time::Duration;

/// The pause after an intent's first run when the server gave no `Retry-After`.
pub(crate) const FIRST_PAUSE: Duration = Duration::from_secs(1);

/// How long an open intent waits after its `runs`-th run (1 for the caller's own
/// send) before it is due again: 1 s after the first run, doubling with each run
/// up to `longest` (the journal's `unknown_retry_after`), and never less than the
/// server's or a gate's `hint` (`Retry-After`), however long.
///
/// Why a schedule rather than one fixed pause: a short outage (a database
/// restarting behind the server, a deploy) is over within seconds, and an intent
/// that waited a fixed 30 s after it would settle long after its server was back;
/// the doubling still spaces the runs of a long outage out, so `max_runs` covers
/// minutes of it, and the server's own word on when to come back wins.
pub(crate) fn pause_before_next_run(
    runs: i64,
    hint: Option<Duration>,
    longest: Duration,
) -> Duration {
    // 2^(runs - 1) seconds; sixteen doublings are past any sensible `longest`.
    let doublings = runs.saturating_sub(1).clamp(0, 16) as u32;
    let schedule = FIRST_PAUSE.saturating_mul(1 << doublings).min(longest);
    schedule.max(hint.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_per_run_up_to_the_longest_and_the_servers_word_wins() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        // (runs so far, hint, longest) -> pause
        let table = [
            (1, None, s(30), s(1)),
            (2, None, s(30), s(2)),
            (3, None, s(30), s(4)),
            (5, None, s(30), s(16)),
            (6, None, s(30), s(30)),
            (40, None, s(30), s(30)),
            (i64::MAX, None, s(30), s(30)),
            // Nonsense run counts read as a first run, never as a panic.
            (0, None, s(30), s(1)),
            (-3, None, s(30), s(1)),
            // A longest pause below the first one holds from the start.
            (1, None, ms(500), ms(500)),
            (9, None, ms(500), ms(500)),
            // The server's Retry-After is a lower bound, above the longest too.
            (1, Some(s(5)), s(30), s(5)),
            (3, Some(s(1)), s(30), s(4)),
            (9, Some(s(90)), s(30), s(90)),
            (1, Some(Duration::ZERO), s(30), s(1)),
        ];
        for (runs, hint, longest, want) in table {
            assert_eq!(
                pause_before_next_run(runs, hint, longest),
                want,
                "after {runs} runs, hint {hint:?}, longest {longest:?}"
            );
        }
    }
}
