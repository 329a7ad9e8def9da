//! The model's copies of the store's SQL rules — the same conditions as
//! `journal/src/postgres/queries.rs` and `journal/src/sqlite/queries.rs`,
//! replayed against both stores by `model/tests/journal_conformance.rs`.
//!
//! Each function is one statement, atomic: PostgreSQL READ COMMITTED, where an
//! `UPDATE … WHERE key = $1` locks the row and re-checks its condition on the
//! newest committed version, and a claim's `FOR UPDATE SKIP LOCKED` passes over
//! rows another claim holds; SQLite, one writer at a time.

use super::config::{Config, CopyMutation};
use super::state::{Row, RowState, Visibility, WorkerId};

/// What an `INSERT … ON CONFLICT (key) DO NOTHING` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    /// No row: inserted (uncommitted).
    Inserted,
    /// A committed row: nothing inserted (`DuplicateKey`).
    Duplicate,
    /// Another transaction's insert of the key is not finished: this one waits
    /// on the unique index until it ends.
    Blocked,
}

/// The insert's answer for the row under its key.
pub fn insert(row: Option<&Row>) -> Insert {
    match row.map(|r| r.visibility) {
        None => Insert::Inserted,
        Some(Visibility::Committed) => Insert::Duplicate,
        Some(_) => Insert::Blocked,
    }
}

/// Whether a statement of another session sees the row.
pub fn visible(row: &Row, config: &Config) -> bool {
    row.visibility == Visibility::Committed
        || config.mutated(CopyMutation::ClaimSeesUncommitted)
            && row.visibility == Visibility::Uncommitted
}

/// The claim's condition (`claimable!`): due `unknown` and `queued` rows (due
/// times are taken as passed), ended leases, and leases of `worker`'s name
/// under another incarnation.
pub fn claimable(row: &Row, worker: WorkerId, incarnation: u8, config: &Config) -> bool {
    visible(row, config)
        && match row.state {
            RowState::Unknown | RowState::Queued => true,
            RowState::InFlight => {
                !row.lease_live
                    || row
                        .owner
                        .is_some_and(|(w, i)| w == worker && i != incarnation)
            }
            _ => false,
        }
}

/// `take_over`'s condition (`TAKE_OVER`): `unknown` or `queued` due or not,
/// ended leases, and leases of `worker`'s name under another incarnation.
pub fn can_take_over(row: &Row, worker: WorkerId, incarnation: u8, config: &Config) -> bool {
    claimable(row, worker, incarnation, config)
}

/// The row after a claim or take-over by `worker`: `in_flight`, leased, fence
/// and runs raised by one.
pub fn taken(row: &Row, worker: WorkerId, incarnation: u8) -> Row {
    Row {
        state: RowState::InFlight,
        owner: Some((worker, incarnation)),
        lease_live: true,
        fence: row.fence + 1,
        runs: row.runs + 1,
        ..*row
    }
}

/// `record`'s condition (`RECORD`): the lease's fence is the row's and the row
/// is `in_flight`.
pub fn records(row: &Row, fence: u8, config: &Config) -> bool {
    row.visibility == Visibility::Committed
        && row.state == RowState::InFlight
        && (row.fence == fence || config.mutated(CopyMutation::RecordIgnoresFence))
}

/// The row after `record`: the outcome's state, runs given back, no lease.
pub fn recorded(row: &Row, state: RowState, given_back: u8) -> Row {
    Row {
        state,
        lease_live: false,
        runs: row.runs - given_back,
        ..*row
    }
}
