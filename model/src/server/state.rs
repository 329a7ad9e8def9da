//! The model's state: the clients with their requests in flight, the store's records,
//! and what happened to each key (the ledger the properties read).

use stateright::Representative;

use super::config::Intent;

/// Everything the checker explores.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    /// One per client; symmetric (see [`Representative`]).
    pub clients: Vec<Client>,
    /// The store's committed record for each scope (index: the scope).
    pub records: Vec<Option<Record>>,
    /// What happened to each scope's key.
    pub ledgers: Vec<Ledger>,
    /// Worker crashes so far.
    pub crashes: u8,
    /// Lease expiries so far.
    pub lease_expiries: u8,
    /// Retention expiries so far.
    pub retention_expiries: u8,
    /// Whether a client has sent its key with another payload (once at most).
    pub reused: bool,
}

/// A client, its intent and its attempts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Client {
    /// What it sends.
    pub intent: Intent,
    /// Its key's scope (the crate's `ScopeId`, numbered).
    pub scope: u8,
    /// Attempts sent so far.
    pub sent: u8,
    /// The last answer it received.
    pub last: Option<Received>,
    /// Its requests still running on a worker, sorted (their order means nothing).
    pub runs: Vec<Run>,
}

impl Client {
    /// Whether it waits for an answer (one of its requests is still its attempt).
    pub fn awaiting(&self) -> bool {
        self.runs.iter().any(|run| run.live)
    }

    /// Whether it has its final answer and sends nothing more.
    pub fn done(&self) -> bool {
        self.last.is_some_and(|last| {
            matches!(
                last.reply,
                Reply::Executed(_) | Reply::Replayed(_) | Reply::Mismatch { .. } | Reply::NotStored
            )
        })
    }
}

/// One request on a worker: `handle`'s future (the layer) or the strong mode's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Run {
    /// The worker it runs on.
    pub worker: u8,
    /// Whether its client still waits for it (false: the attempt timed out; the layer
    /// runs it to its end anyway).
    pub live: bool,
    /// The payload it carries: its client's, or the other one for a key reused.
    pub payload: u8,
    /// Where it is.
    pub phase: Phase,
}

/// A request's await point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Admitted (key, principal, body, fingerprint): the claim is next.
    Admitted,
    /// The strong mode on SQLite: the reader found no committed record; the writer's
    /// transaction is next.
    ToWriter,
    /// The layer: the key is claimed with this generation; the handler starts next.
    Claimed {
        /// The claim's generation (its token).
        generation: u8,
        /// The key was taken over from a lapsed holder.
        reclaimed: bool,
    },
    /// The layer: the handler runs.
    Running {
        /// The claim's generation.
        generation: u8,
    },
    /// The layer: the handler has had its outside effect; completing is next.
    Effected {
        /// The claim's generation.
        generation: u8,
    },
    /// The layer: the handler failed before any effect; releasing is next.
    Failed {
        /// The claim's generation.
        generation: u8,
    },
    /// The strong mode: the claim is made in an open transaction; the effect is next.
    InTx,
    /// The strong mode: the effect's writes are in the open transaction; the commit
    /// (response stored, then commit) is next.
    TxEffected,
    /// The answer is on its way to the client (which may time out first).
    Replying(Reply),
}

impl Phase {
    /// Whether the handler (or the effect's transaction) has started.
    pub fn mid_handler(self) -> bool {
        matches!(
            self,
            Phase::Running { .. }
                | Phase::Effected { .. }
                | Phase::Failed { .. }
                | Phase::InTx
                | Phase::TxEffected
        )
    }

    /// Whether the effect happened and was not yet recorded.
    pub fn after_effect(self) -> bool {
        matches!(self, Phase::Effected { .. } | Phase::TxEffected)
    }

    /// Whether it holds an open strong-mode transaction with a claimed row.
    pub fn in_tx(self) -> bool {
        matches!(self, Phase::InTx | Phase::TxEffected)
    }

    /// The generation of its claim, if it holds one in the layer.
    pub fn generation(self) -> Option<u8> {
        match self {
            Phase::Claimed { generation, .. }
            | Phase::Running { generation }
            | Phase::Effected { generation }
            | Phase::Failed { generation } => Some(generation),
            _ => None,
        }
    }

    fn with_generation(self, new: u8) -> Self {
        match self {
            Phase::Claimed { reclaimed, .. } => Phase::Claimed {
                generation: new,
                reclaimed,
            },
            Phase::Running { .. } => Phase::Running { generation: new },
            Phase::Effected { .. } => Phase::Effected { generation: new },
            Phase::Failed { .. } => Phase::Failed { generation: new },
            other => other,
        }
    }
}

/// An answer a client received, with the payload of the attempt it answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Received {
    /// The payload the answered attempt carried.
    pub payload: u8,
    /// The answer.
    pub reply: Reply,
}

/// Who a response was made for: the principal and the payload of the request whose
/// handler produced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    /// The producing request's principal.
    pub principal: u8,
    /// The producing request's payload.
    pub payload: u8,
}

/// What a client received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reply {
    /// Its own handler's response.
    Executed(Origin),
    /// A stored response, replayed.
    Replayed(Origin),
    /// 409: the key is in progress.
    InProgress {
        /// Its `Retry-After`, in whole seconds.
        retry_after_secs: u8,
        /// The request carried the payload the key was claimed with.
        same_payload: bool,
    },
    /// 422: the key was used with another payload.
    Mismatch {
        /// The key was still in progress (not finished).
        in_progress: bool,
    },
    /// 410: finished, the response not kept.
    NotStored,
    /// 503: the store (SQLite's writer) was busy; nothing ran.
    Unavailable,
    /// The handler failed; the key was released.
    HandlerFailed,
    /// The strong mode's effect asked for a rollback; nothing was kept.
    RolledBack,
    /// The worker crashed under the request.
    ConnectionLost,
}

impl Reply {
    /// A replay's origin.
    pub fn replayed(self) -> Option<Origin> {
        match self {
            Reply::Replayed(origin) => Some(origin),
            _ => None,
        }
    }
}

/// A store's record of a key, as committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Record {
    /// The claimer's payload (what the crate's fingerprint compares).
    pub fingerprint: u8,
    /// The claim's generation.
    pub generation: u8,
    /// The stored response once finished.
    pub response: Option<Origin>,
    /// Its lease (in progress) or retention (finished) has run out.
    pub expired: bool,
}

/// What happened to one scope's key, for the properties.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Ledger {
    /// Effects: outside effects (the layer) or committed transactions (the strong mode).
    pub effects: u8,
    /// Retention expiries of its record.
    pub retention_expiries: u8,
    /// A worker crashed while a handler of this key ran.
    pub crashed_mid_handler: bool,
    /// A worker crashed after a handler of this key had its effect, before recording it.
    pub crashed_after_effect: bool,
}

impl State {
    /// Renumbers the generations densely, in order: only equality between a token and
    /// a record matters (a fresh one is above all), so this is the same state.
    pub fn normalise_generations(&mut self) {
        let mut seen: Vec<u8> = self
            .records
            .iter()
            .flatten()
            .map(|r| r.generation)
            .chain(
                self.clients
                    .iter()
                    .flat_map(|c| c.runs.iter().filter_map(|r| r.phase.generation())),
            )
            .collect();
        seen.sort_unstable();
        seen.dedup();
        let rank = |g: u8| seen.binary_search(&g).map_or(g, |i| i as u8 + 1);
        for record in self.records.iter_mut().flatten() {
            record.generation = rank(record.generation);
        }
        for client in &mut self.clients {
            for run in &mut client.runs {
                if let Some(g) = run.phase.generation() {
                    run.phase = run.phase.with_generation(rank(g));
                }
            }
            client.runs.sort_unstable();
        }
    }

    /// Sorts each client's requests (their order means nothing).
    pub fn sort_runs(&mut self) {
        for client in &mut self.clients {
            client.runs.sort_unstable();
        }
    }

    /// A generation no token or record holds.
    pub fn fresh_generation(&self) -> u8 {
        let records = self.records.iter().flatten().map(|r| r.generation);
        let runs = self
            .clients
            .iter()
            .flat_map(|c| c.runs.iter().filter_map(|r| r.phase.generation()));
        records.chain(runs).max().unwrap_or(0) + 1
    }
}

/// Symmetry over clients: clients are interchangeable (each carries its own intent,
/// and nothing else names a client), so the representative sorts them.
impl Representative for State {
    fn representative(&self) -> Self {
        let mut canonical = self.clone();
        canonical.clients.sort_unstable();
        canonical
    }
}
