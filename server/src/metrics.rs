//! Counters for what the layer decided, readable at any time (export them to your
//! metrics system from [`Counters::snapshot`]).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::refusal::RefusalKind;

/// What the layer has decided since it was built.
#[derive(Debug, Default)]
pub struct Counters {
    claims: AtomicU64,
    reclaims: AtomicU64,
    replays: AtomicU64,
    conflicts: AtomicU64,
    mismatches: AtomicU64,
    other_refusals: AtomicU64,
    not_stored: AtomicU64,
    released: AtomicU64,
    lost_claims: AtomicU64,
    store_errors: AtomicU64,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CounterSnapshot {
    /// Keys claimed: the handler ran.
    pub claims: u64,
    /// Of those, keys taken over from a holder whose lease lapsed.
    pub reclaims: u64,
    /// Stored responses replayed.
    pub replays: u64,
    /// 409s: the key was in progress.
    pub conflicts: u64,
    /// 422s: the key was used with another payload.
    pub mismatches: u64,
    /// Every other refusal (missing or invalid key, no principal, body too large, …).
    pub other_refusals: u64,
    /// Finished responses not kept (too large, streamed, failed).
    pub not_stored: u64,
    /// Keys freed after a 5xx ([`ServerErrors::Release`](crate::ServerErrors::Release)),
    /// an answer that says it was not processed (`408`, `425`, `429`, `503`), or a
    /// handler error.
    pub released: u64,
    /// Results that arrived after their claim lapsed and was taken over.
    pub lost_claims: u64,
    /// Store calls that failed.
    pub store_errors: u64,
}

/// The name each counter is exported under through the `metrics` facade (feature
/// `metrics`), the facade reqwest-resilience's `Metrics` records through. Every one is
/// a monotonic counter of requests, incremented as the snapshot's field is:
///
/// | name | counts |
/// |---|---|
/// | `tower_idempotency.claims` | keys claimed: the handler ran |
/// | `tower_idempotency.reclaims` | of those, keys taken over from a lapsed holder |
/// | `tower_idempotency.replays` | stored responses replayed |
/// | `tower_idempotency.conflicts` | 409s: the key was in progress |
/// | `tower_idempotency.mismatches` | 422s (or the format's status): the key was used with another payload |
/// | `tower_idempotency.other_refusals` | every other refusal |
/// | `tower_idempotency.not_stored` | finished responses not kept |
/// | `tower_idempotency.released` | keys freed without a result |
/// | `tower_idempotency.lost_claims` | results that arrived after their claim was taken over |
/// | `tower_idempotency.store_errors` | store calls that failed |
///
/// Install a recorder (an exporter such as `metrics-exporter-prometheus`) in the
/// application; without one, recording costs a load and a branch.
pub const METRIC_NAMES: [&str; 10] = [
    CLAIMS,
    RECLAIMS,
    REPLAYS,
    CONFLICTS,
    MISMATCHES,
    OTHER_REFUSALS,
    NOT_STORED,
    RELEASED,
    LOST_CLAIMS,
    STORE_ERRORS,
];

const CLAIMS: &str = "tower_idempotency.claims";
const RECLAIMS: &str = "tower_idempotency.reclaims";
const REPLAYS: &str = "tower_idempotency.replays";
const CONFLICTS: &str = "tower_idempotency.conflicts";
const MISMATCHES: &str = "tower_idempotency.mismatches";
const OTHER_REFUSALS: &str = "tower_idempotency.other_refusals";
const NOT_STORED: &str = "tower_idempotency.not_stored";
const RELEASED: &str = "tower_idempotency.released";
const LOST_CLAIMS: &str = "tower_idempotency.lost_claims";
const STORE_ERRORS: &str = "tower_idempotency.store_errors";

fn bump(counter: &AtomicU64, name: &'static str) {
    counter.fetch_add(1, Ordering::Relaxed);
    #[cfg(feature = "metrics")]
    metrics::counter!(name).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = name;
}

impl Counters {
    /// The counters now.
    pub fn snapshot(&self) -> CounterSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CounterSnapshot {
            claims: get(&self.claims),
            reclaims: get(&self.reclaims),
            replays: get(&self.replays),
            conflicts: get(&self.conflicts),
            mismatches: get(&self.mismatches),
            other_refusals: get(&self.other_refusals),
            not_stored: get(&self.not_stored),
            released: get(&self.released),
            lost_claims: get(&self.lost_claims),
            store_errors: get(&self.store_errors),
        }
    }

    pub(crate) fn claimed(&self, reclaimed: bool) {
        bump(&self.claims, CLAIMS);
        if reclaimed {
            bump(&self.reclaims, RECLAIMS);
        }
    }

    pub(crate) fn replayed(&self) {
        bump(&self.replays, REPLAYS);
    }

    pub(crate) fn refused(&self, kind: RefusalKind) {
        match kind {
            RefusalKind::InProgress => bump(&self.conflicts, CONFLICTS),
            RefusalKind::Mismatch => bump(&self.mismatches, MISMATCHES),
            _ => bump(&self.other_refusals, OTHER_REFUSALS),
        }
    }

    pub(crate) fn not_stored(&self) {
        bump(&self.not_stored, NOT_STORED);
    }

    pub(crate) fn released(&self) {
        bump(&self.released, RELEASED);
    }

    pub(crate) fn lost_claim(&self) {
        bump(&self.lost_claims, LOST_CLAIMS);
    }

    pub(crate) fn store_error(&self) {
        bump(&self.store_errors, STORE_ERRORS);
    }
}
