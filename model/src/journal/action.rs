//! The model's actions: one per statement or await point of the write-ahead,
//! the join, the send, the record, the outbox enqueue, the relay's claim and
//! run, the acknowledgement — and the environment's crashes and lease ends.

use super::state::{ClientId, Fate, KeyId, Response, WorkerId};

/// How the write-ahead's `COMMIT` came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommitEnd {
    /// Answered: committed.
    Answered,
    /// Failed before `COMMIT` was sent (or `COMMIT` answered with an error):
    /// nothing committed.
    Failed,
    /// The answer was lost; the database did this.
    Lost(Fate),
}

/// One step of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Durable send: the write-ahead's `INSERT … ON CONFLICT DO NOTHING` in its transaction.
    WriteAhead(ClientId),
    /// Durable send: the write-ahead's `COMMIT`.
    Commit(ClientId, CommitEnd),
    /// Durable send: `pg_xact_status` after a lost `COMMIT` answer (`false`: no answer).
    AskStatus(ClientId, bool),
    /// The database finishes a commit it was still making.
    CommitSettles(KeyId),
    /// Durable send joining a journaled key: `get` and the join step.
    JoinLook(ClientId),
    /// Durable send joining: `take_over`.
    TakeOver(ClientId),
    /// Durable send: the request leaves.
    Send(ClientId),
    /// Durable send: the response (or the give-up) comes back.
    Respond(ClientId, Response),
    /// Durable send: `record` under the lease.
    Record(ClientId),
    /// Outbox: the enqueue's `INSERT` in the caller's transaction.
    Enqueue(ClientId),
    /// Outbox: the caller's transaction commits.
    EnqueueCommit(ClientId),
    /// Outbox: the caller's transaction rolls back.
    EnqueueRollback(ClientId),
    /// Relay: a claim of every intent claimable by this worker.
    Claim(WorkerId),
    /// Relay: the run's plan (abandon, or the deadline).
    Plan(WorkerId, KeyId),
    /// Relay: the resend leaves.
    RunSend(WorkerId, KeyId),
    /// Relay: the resend's response comes back.
    RunRespond(WorkerId, KeyId, Response),
    /// Relay: `record` under the claim's lease.
    RunRecord(WorkerId, KeyId),
    /// The worker's catch-up acknowledges a terminal result in the
    /// application's transaction, applying it when the acknowledgement is the first.
    Acknowledge(WorkerId, KeyId),
    /// The worker's process dies; it restarts as a new incarnation.
    Crash(WorkerId),
    /// The intent's lease ends.
    LeaseEnds(KeyId),
    /// The server's retention of the key ends (it would run the request again).
    RetentionEnds(KeyId),
}
