//! When a claim may take a key, and whether a claim still holds it: the rule every
//! store follows, as pure functions the memory store runs.
//!
//! The SQL stores say the same in their statements (the upsert's `WHERE expires_at <=
//! now`, the fence's `WHERE generation = … AND NOT completed`); the model checker calls
//! these functions and replays its traces against all three stores to show they agree.

use std::time::SystemTime;

/// A key's record as a claim finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// The end of its lease (in progress) or of its retention (finished).
    pub expires_at: SystemTime,
    /// Whether its holder finished.
    pub completed: bool,
}

/// What a claim does with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The key is free: the claim takes it, taking it over if a lease lapsed.
    Free {
        /// A holder's lease lapsed before it finished.
        reclaimed: bool,
    },
    /// Someone holds or finished the key: the claim reports its record.
    Taken,
}

/// A record is kept until it expires (`expires_at <= now` is expired); an expired
/// record that never finished is taken over.
pub fn claim_rule(previous: Option<Seen>, now: SystemTime) -> Found {
    match previous {
        Some(seen) if seen.expires_at > now => Found::Taken,
        previous => Found::Free {
            reclaimed: previous.is_some_and(|seen| !seen.completed),
        },
    }
}

/// Whether the holder of `token_generation` still holds a key whose record is
/// `(generation, completed)`: the record is its own claim and has not finished. A
/// holder whose lease lapsed and was taken over is fenced out.
pub fn token_holds(record: Option<(u64, bool)>, token_generation: u64) -> bool {
    record.is_some_and(|(generation, completed)| !completed && generation == token_generation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn claims() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let seen = |expires_at, completed| {
            Some(Seen {
                expires_at,
                completed,
            })
        };
        let later = now + Duration::from_millis(1);
        #[rustfmt::skip]
        let rows = [
            ("no record", None, Found::Free { reclaimed: false }),
            ("in progress, lease running", seen(later, false), Found::Taken),
            ("finished, retention running", seen(later, true), Found::Taken),
            ("in progress, lease ends now: taken over", seen(now, false), Found::Free { reclaimed: true }),
            ("finished, retention ended", seen(now, true), Found::Free { reclaimed: false }),
        ];
        for (name, previous, want) in rows {
            assert_eq!(claim_rule(previous, now), want, "{name}");
        }
    }

    #[test]
    fn the_fence() {
        #[rustfmt::skip]
        let rows = [
            ("its own claim", Some((7, false)), 7, true),
            ("taken over by a later claim", Some((8, false)), 7, false),
            ("already finished", Some((7, true)), 7, false),
            ("released or pruned", None, 7, false),
        ];
        for (name, record, token, want) in rows {
            assert_eq!(token_holds(record, token), want, "{name}");
        }
    }
}
