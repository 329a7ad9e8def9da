//! A claim's generation, chosen before the claim is sent.
//!
//! A claim whose answer is lost (the backend terminated, the database crashing
//! after its commit) may hold the key with nobody running its handler: every
//! retry would be told "in progress" until the lease lapses. Knowing the
//! generation it wrote, the store can find that claim and release it once the
//! database is back, and only that claim: the generation fences every other.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A generation no other claim has, with overwhelming likelihood: a counter
/// hashed under keys random to this process, so two processes (a fleet on one
/// database) draw from unrelated sequences. Positive, as the sequence the
/// schema also holds gave.
pub(super) fn fresh() -> i64 {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut hasher = KEYS.get_or_init(RandomState::new).build_hasher();
    hasher.write_u64(NEXT.fetch_add(1, Ordering::Relaxed));
    (hasher.finish() >> 1).max(1) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_are_positive_and_distinct() {
        let drawn: std::collections::HashSet<i64> = (0..10_000).map(|_| fresh()).collect();
        assert_eq!(drawn.len(), 10_000);
        assert!(drawn.iter().all(|&g| g > 0));
    }
}
