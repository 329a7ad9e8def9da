//! What one check covers: the clients, workers and keys, the bounds, and the
//! mutation of one of the model's copies of a SQL rule, if any.

use std::time::Duration;

use super::rules as model_rules;

/// A mutation of one of the model's *copies* of a rule that is SQL in the crate
/// (no crate function exists to switch): only to show that the property
/// depending on it can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyMutation {
    /// `record` without `fence = $lease_fence`.
    RecordIgnoresFence,
    /// A claim that sees other transactions' uncommitted rows (as READ UNCOMMITTED would).
    ClaimSeesUncommitted,
    /// `unacknowledged` listing only `succeeded` rows (`state IN (…)` missing `failed`
    /// and `abandoned`): those results are never delivered.
    UnacknowledgedSkipsFailures,
}

/// The configuration of one check.
#[derive(Debug, Clone)]
pub struct Config {
    /// Each client's worker and key (indices). Clients on one key send the same request.
    pub clients: Vec<(u8, u8)>,
    /// Workers sharing the store.
    pub workers: u8,
    /// Keys.
    pub keys: u8,
    /// Crashes (of any worker) at most.
    pub max_crashes: u8,
    /// Expiries of a lease whose holder is still alive, at most. A lease whose
    /// holder is gone ends without counting: time passes.
    pub max_expiries: u8,
    /// The journal's `max_runs`.
    pub max_runs: i64,
    /// Runs that did nothing at the server (given back), per key, at most.
    pub max_not_performed: u8,
    /// Keys whose retention at the server may end, at most.
    pub max_retention_ends: u8,
    /// A mutation of a copied rule, if any.
    pub copy_mutation: Option<CopyMutation>,
    /// The intents' deadline.
    pub deadline: Duration,
    /// The journal's resume lease.
    pub resume_lease: Duration,
    /// The journal's lease margin.
    pub lease_margin: Duration,
    /// The journal's delay before an unknown intent is due again.
    pub unknown_retry_after: Duration,
}

impl Config {
    /// `clients` on `workers` workers and `keys` keys, with the journal's
    /// defaults, a 10-minute deadline (longer than the resume lease, so the
    /// resumed run's deadline is cut to its lease), and the given bounds.
    pub fn new(clients: Vec<(u8, u8)>, workers: u8, keys: u8) -> Self {
        Self {
            clients,
            workers,
            keys,
            max_crashes: 2,
            max_expiries: 2,
            max_runs: 3,
            max_not_performed: 1,
            max_retention_ends: 1,
            copy_mutation: None,
            deadline: Duration::from_secs(600),
            resume_lease: Duration::from_secs(300),
            lease_margin: Duration::from_secs(30),
            unknown_retry_after: Duration::from_secs(30),
        }
    }

    /// The part at the end of a lease that a send must leave free, from the
    /// journal's docs (the margin, or half the lease when the margin is longer):
    /// the time a response takes to be recorded, and the clocks' skew. Written here
    /// from the promise, not read from the crate's code, so that a run plan or a
    /// lease that forgets it lets the lease end under a send in the model.
    pub fn lease_kept_free(&self) -> Duration {
        self.lease_margin.min(self.resume_lease / 2)
    }

    /// Whether a resumed run may still be on the wire when its lease is no longer
    /// safe (within [`lease_kept_free`](Self::lease_kept_free) of its end), by the
    /// crate's own run plan (`plan_run`: the deadline cut to the lease less its
    /// margin).
    pub fn resumed_send_outlives_lease(&self) -> bool {
        let plan = model_rules::plan_run(
            1,
            Some(self.deadline),
            Duration::from_secs(23 * 3600),
            self.resume_lease,
            self.max_runs,
            self.lease_margin,
            self.resume_lease,
        );
        plan.is_ok_and(|deadline| deadline + self.lease_kept_free() > self.resume_lease)
    }

    /// Whether a durable send's first run may still be on the wire when its
    /// lease is no longer safe, by the crate's own `lease_for` (the deadline plus
    /// the margin).
    pub fn first_send_outlives_lease(&self) -> bool {
        self.deadline + self.lease_margin
            > model_rules::lease_for(Some(self.deadline), self.resume_lease, self.lease_margin)
    }

    /// The runs past which a relay no longer claims an intent: more than any
    /// path reaches while the crate abandons an intent after `max_runs` (each
    /// take-up past it is abandoned unless a joining send, a crash or a lease
    /// end interrupts it). Without that guard, the intent is left open here
    /// and the `eventually` property fails instead of the search never ending.
    pub fn claim_cap(&self) -> i64 {
        self.max_runs
            + self.clients.len() as i64
            + i64::from(self.max_crashes)
            + i64::from(self.max_expiries)
            + 1
    }

    /// Whether the copy mutation `m` is on.
    pub fn mutated(&self, m: CopyMutation) -> bool {
        self.copy_mutation == Some(m)
    }
}
