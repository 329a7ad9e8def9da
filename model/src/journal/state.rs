//! The journal model's state: the store's rows, each caller's and each
//! worker's place in its code, and the history the properties read.

use reqwest_resilience_journal::IntentState;

use super::group::Symmetries;

/// A client (a caller sending one intent), by its index in the configuration.
pub type ClientId = u8;
/// A worker (a fleet member sharing the store), by index.
pub type WorkerId = u8;
/// An intent's key, by index.
pub type KeyId = u8;

/// Where a row stands: the journal's [`IntentState`], ordered for the checker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RowState {
    /// `queued`.
    Queued,
    /// `in_flight`.
    InFlight,
    /// `unknown`.
    Unknown,
    /// `succeeded`.
    Succeeded,
    /// `failed`.
    Failed,
    /// `abandoned`.
    Abandoned,
}

impl RowState {
    /// The journal's state of the same name.
    pub fn journal(self) -> IntentState {
        match self {
            Self::Queued => IntentState::Queued,
            Self::InFlight => IntentState::InFlight,
            Self::Unknown => IntentState::Unknown,
            Self::Succeeded => IntentState::Succeeded,
            Self::Failed => IntentState::Failed,
            Self::Abandoned => IntentState::Abandoned,
        }
    }

    /// The model's state for the journal's.
    pub fn of(state: IntentState) -> Self {
        match state {
            IntentState::Queued => Self::Queued,
            IntentState::InFlight => Self::InFlight,
            IntentState::Unknown => Self::Unknown,
            IntentState::Succeeded => Self::Succeeded,
            IntentState::Failed => Self::Failed,
            _ => Self::Abandoned,
        }
    }

    /// Never resumed again.
    pub fn is_terminal(self) -> bool {
        self.journal().is_terminal()
    }
}

/// How far the transaction that inserted a row has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Visibility {
    /// Inserted, not committed: invisible to every other session, and its key
    /// blocks other inserts until the transaction ends.
    Uncommitted,
    /// `COMMIT` reached the database, which has not finished it (a synchronous
    /// standby): still invisible, and it will commit.
    Committing,
    /// Committed: every session sees it.
    Committed,
}

/// One row of `journal_intents`, as the model keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Row {
    /// The row's state.
    pub state: RowState,
    /// How far its inserting transaction has gone.
    pub visibility: Visibility,
    /// The lease holder (worker, incarnation), if the row was ever leased.
    pub owner: Option<(WorkerId, u8)>,
    /// `in_flight` with a lease that has not ended.
    pub lease_live: bool,
    /// The fencing counter.
    pub fence: u8,
    /// Runs, as the store counts them.
    pub runs: u8,
    /// The client whose write made the row (history, for the properties).
    pub origin: ClientId,
    /// The result was acknowledged.
    pub acked: bool,
}

/// How a send's response came back, as the model chooses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Response {
    /// `201 Created`.
    Created,
    /// `422`: a definite failure.
    Unprocessable,
    /// `409`: the server is still running another request with the key.
    InProgress,
    /// Gave up after the request may have reached the server.
    Lost,
    /// Gave up before anything happened at the server (a gate, a refused
    /// connection): the run is given back.
    NotPerformed,
}

impl Response {
    /// Whether recording `to` (with `given_back` runs given back) says what this
    /// response showed, as the journal's docs promise it, written here from the
    /// responses themselves and not from the crate's `run_outcome`: a 2xx is
    /// `succeeded`, a definite 4xx `failed`; a 409 "in progress" and a give-up that
    /// may have reached the server leave the outcome `unknown`; a give-up before
    /// anything happened at the server gives a resumed run back, still due, while
    /// the first run's caller was told it failed: that is final (`first_run`).
    pub fn recorded_as(self, to: RowState, given_back: u8, first_run: bool) -> bool {
        match self {
            Self::NotPerformed if first_run => to == RowState::Failed && given_back == 0,
            Self::Created => to == RowState::Succeeded && given_back == 0,
            Self::Unprocessable => to == RowState::Failed && given_back == 0,
            Self::InProgress | Self::Lost => to == RowState::Unknown && given_back == 0,
            Self::NotPerformed => {
                matches!(
                    to,
                    RowState::Queued | RowState::InFlight | RowState::Unknown
                ) && given_back > 0
            }
        }
    }

    /// Every response the model tries.
    pub const ALL: [Response; 5] = [
        Self::Created,
        Self::Unprocessable,
        Self::InProgress,
        Self::Lost,
        Self::NotPerformed,
    ];

    /// The final status, if one came.
    pub fn status(self) -> Option<u16> {
        match self {
            Self::Created => Some(201),
            Self::Unprocessable => Some(422),
            Self::InProgress => Some(409),
            Self::Lost | Self::NotPerformed => None,
        }
    }

    /// Whether a give-up may have reached the server.
    pub fn outcome_unknown(self) -> bool {
        self == Self::Lost
    }
}

/// What the database did with a write-ahead whose `COMMIT` answer was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fate {
    /// Committed.
    Committed,
    /// Rolled back.
    Aborted,
    /// Still committing (waiting for a synchronous standby); it will commit.
    Committing,
}

/// How a client's send ended, as its caller was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum End {
    /// A response (or an error after the intent was sent).
    Answered,
    /// Refused: nothing was sent (the write-ahead provably did not commit).
    RefusedNothingSent,
    /// Refused as outcome unknown (the write-ahead may have committed).
    RefusedOutcomeUnknown,
    /// Refused: the key names an intent this send cannot join.
    KeyInUse,
    /// The outbox enqueue committed.
    Enqueued,
    /// The outbox enqueue found the key journaled already.
    AlreadyEnqueued,
    /// The outbox enqueue's transaction rolled back.
    RolledBack,
    /// The caller's process crashed.
    Crashed,
}

/// Where a client (a caller of a durable send or an outbox enqueue) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Client {
    /// Not started.
    Start,
    /// Durable: the write-ahead's `INSERT` ran in its transaction; `COMMIT` next.
    Committing,
    /// Durable: `COMMIT`'s answer was lost; the transaction's status next.
    AskingStatus,
    /// Durable: the key is journaled; the join looks the intent up next.
    Joining,
    /// Durable: the join step said take over or wait; `take_over` next.
    TakingOver,
    /// Durable: holds the lease of this fence (`None`: sends unjournaled).
    Ready(Option<u8>),
    /// Durable: the request is on the wire.
    Sending(Option<u8>),
    /// Durable: the result is known; recording it under the lease of this fence
    /// leads to this state, giving back this many runs.
    Recording(u8, RowState, u8),
    /// Outbox: the `INSERT` ran in the caller's transaction; commit or roll back next.
    Enqueued,
    /// Finished.
    Done(End),
}

/// Where one resumed run of a worker's relay is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunAt {
    /// Claimed: the run's plan next.
    Claimed,
    /// Planned: the send next.
    Ready,
    /// On the wire.
    Sending,
    /// Recording this state, giving back this many runs.
    Recording(RowState, u8),
}

/// One resumed run: the intent, the fence of its lease, and where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Run {
    /// The intent.
    pub key: KeyId,
    /// The fence of the claim's lease.
    pub fence: u8,
    /// The intent's runs as the claim left them (counting this one).
    pub runs: u8,
    /// Where the run is.
    pub at: RunAt,
}

/// One fleet member: its process's incarnation, its relay's runs, and which
/// results its catch-up has settled since it started.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Worker {
    /// Raised by every crash (a restart is a new incarnation of the same name).
    pub incarnation: u8,
    /// The relay's runs of the current pass, by key.
    pub runs: Vec<Run>,
    /// Keys whose result this incarnation's catch-up acknowledged (or found acknowledged).
    pub caught_up: u8,
}

/// Things that happened, for the properties (`told_*`, `sent`, …: client bit masks).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct History {
    /// Clients told "refused, nothing was sent".
    pub told_nothing_sent: u8,
    /// Clients whose row was sent at least once.
    pub sent: u8,
    /// Clients whose outbox enqueue rolled back.
    pub rolled_back: u8,
    /// A write under a fenced-off lease was recorded.
    pub fenced_write_recorded: bool,
    /// An outcome to record differed from what its send saw.
    pub outcome_differs: bool,
    /// Keys whose retention at the server has ended (a bit per key).
    pub retention_over: u8,
    /// A join or a resumed run's plan let a send go for a key whose retention had
    /// ended.
    pub sent_past_retention: bool,
    /// Per key: how often its result was applied by an acknowledgement.
    pub applied: Vec<u8>,
    /// Per key: runs that did nothing at the server (bounded by the configuration).
    pub not_performed: Vec<u8>,
    /// The `sometimes` events seen (bits of [`Seen`]).
    pub seen: u16,
}

/// The `sometimes` events, as bits of [`History::seen`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Seen {
    /// A lease taken over (a claim or take-over of an `in_flight` row).
    TakeOver = 1,
    /// A run given back.
    GivenBack = 2,
    /// A write-ahead whose `COMMIT` answer was lost.
    AmbiguousCommit = 4,
    /// A crash while a request was on the wire.
    CrashMidSend = 8,
    /// An outbox enqueue rolled back.
    RolledBackEnqueue = 16,
    /// A late result dropped: its lease was fenced off.
    LeaseLost = 32,
    /// An intent abandoned after too many runs.
    AbandonedAfterRuns = 64,
    /// A joining send sent again without a journal row.
    SentUnjournaled = 128,
    /// A join refused because the server's retention of the key had ended.
    RetentionRefused = 256,
}

/// The whole model state.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct State {
    /// The store: a row per key, or none.
    pub rows: Vec<Option<Row>>,
    /// Each client's place.
    pub clients: Vec<Client>,
    /// Each worker.
    pub workers: Vec<Worker>,
    /// Crashes so far.
    pub crashes: u8,
    /// Expiries of a live holder's lease so far.
    pub expiries: u8,
    /// What happened.
    pub history: History,
    /// The configuration's symmetries (not part of the state: equal in every state).
    pub symmetries: Symmetries,
}

impl State {
    /// Whether `event` happened.
    pub fn saw(&self, event: Seen) -> bool {
        self.history.seen & event as u16 != 0
    }
}
