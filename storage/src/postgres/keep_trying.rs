//! A write the database was away for, tried again until it lands: the loop
//! behind tower-idempotency's kept key ends and the journal's unsent leases.
//!
//! Such a write must not wait for the next request to need it (a key would stay
//! "in progress", an intent leased to nobody, until a lease lapses), and must
//! not hammer a database that is restarting: so it is tried on a pause that
//! starts short and doubles to a second, and given up when what it was for has
//! lapsed anyway.

use std::time::Duration;

/// The pause before the first try; it doubles up to [`MAX_PAUSE`].
pub const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// The longest pause: a database that is back is written to within it.
pub const MAX_PAUSE: Duration = Duration::from_secs(1);

/// The tries of one write: `while tries.next().await { … }` pauses before each
/// try as the module says, and ends once the time given has passed.
#[derive(Debug)]
pub struct KeepTrying {
    give_up: tokio::time::Instant,
    pause: Duration,
    at_once: bool,
}

impl KeepTrying {
    /// Tries for `for_` from now.
    pub fn for_(for_: Duration) -> Self {
        Self {
            give_up: tokio::time::Instant::now() + for_,
            pause: FIRST_PAUSE,
            at_once: false,
        }
    }

    /// Waits for the next try: true when it may go, false once the time has
    /// run out (no try starts past it).
    pub async fn next(&mut self) -> bool {
        if !std::mem::take(&mut self.at_once) {
            tokio::time::sleep(self.pause).await;
            self.pause = (self.pause * 2).min(MAX_PAUSE);
        }
        tokio::time::Instant::now() < self.give_up
    }

    /// The next try goes at once: one piece landed and more are to come.
    pub fn at_once(&mut self) {
        self.at_once = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Instant;

    /// What a try does: fail, land one piece of more, or land the last.
    #[derive(Clone, Copy)]
    enum Try {
        Fails,
        LandsOneOfMore,
        LandsTheLast,
    }

    /// Each try's instant from the start, for a script of tries (then failing
    /// ones), and whether the last landed.
    async fn tries(script: &[Try], for_: Duration) -> (Vec<Duration>, bool) {
        let start = Instant::now();
        let mut at = Vec::new();
        let mut script = script.iter().copied();
        let mut tries = KeepTrying::for_(for_);
        while tries.next().await {
            at.push(start.elapsed());
            match script.next().unwrap_or(Try::Fails) {
                Try::Fails => {}
                Try::LandsOneOfMore => tries.at_once(),
                Try::LandsTheLast => return (at, true),
            }
        }
        (at, false)
    }

    #[tokio::test]
    async fn pauses_double_to_a_second_and_a_next_piece_goes_at_once() {
        let ms = Duration::from_millis;
        let script = [
            Try::Fails,
            Try::Fails,
            Try::LandsOneOfMore,
            Try::Fails,
            Try::LandsTheLast,
        ];
        let (at, landed) = tries(&script, Duration::from_secs(60)).await;
        assert!(landed);
        assert_eq!(at.len(), 5, "{at:?}");
        // 200 ms, then 400, then 800 ms; at once after the piece; then 1 s.
        assert!(at[0] >= ms(200), "{at:?}");
        assert!(at[1] - at[0] >= ms(400), "{at:?}");
        assert!(at[2] - at[1] >= ms(800), "{at:?}");
        assert!(at[3] - at[2] < ms(200), "no pause after a piece: {at:?}");
        assert!(at[4] - at[3] >= ms(1000), "{at:?}");
    }

    #[tokio::test]
    async fn it_gives_up_when_the_time_runs_out_without_a_try_past_it() {
        let ms = Duration::from_millis;
        let start = Instant::now();
        // Tries at 200 ms; the next would be at 600 ms, past the 500.
        let (at, landed) = tries(&[], ms(500)).await;
        assert!(!landed);
        assert!(start.elapsed() >= ms(500));
        assert!(at.len() <= 1 && at.iter().all(|at| *at < ms(500)), "{at:?}");
    }
}
