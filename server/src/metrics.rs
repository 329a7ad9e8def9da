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
    /// Keys freed after a 5xx ([`ServerErrors::Release`](crate::ServerErrors::Release))
    /// or a handler error.
    pub released: u64,
    /// Results that arrived after their claim lapsed and was taken over.
    pub lost_claims: u64,
    /// Store calls that failed.
    pub store_errors: u64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
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
        bump(&self.claims);
        if reclaimed {
            bump(&self.reclaims);
        }
    }

    pub(crate) fn replayed(&self) {
        bump(&self.replays);
    }

    pub(crate) fn refused(&self, kind: RefusalKind) {
        match kind {
            RefusalKind::InProgress => bump(&self.conflicts),
            RefusalKind::Mismatch => bump(&self.mismatches),
            _ => bump(&self.other_refusals),
        }
    }

    pub(crate) fn not_stored(&self) {
        bump(&self.not_stored);
    }

    pub(crate) fn released(&self) {
        bump(&self.released);
    }

    pub(crate) fn lost_claim(&self) {
        bump(&self.lost_claims);
    }

    pub(crate) fn store_error(&self) {
        bump(&self.store_errors);
    }
}
