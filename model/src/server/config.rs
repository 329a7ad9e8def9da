//! What one check covers: the mode, the clients' intents, the workers and the bounds.

/// Which path a request takes through the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The layer (`service.rs::handle`): claim, handler, complete or release.
    Layer,
    /// The strong mode (`transactional/`): claim, effect and response in one transaction.
    Strong(Db),
}

/// The database under the strong mode (the layer's store is modelled as one atomic
/// claim, which all three stores give; see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Db {
    /// PostgreSQL, READ COMMITTED: a duplicate's upsert waits on the holder's row lock
    /// (then sees its commit), or gives up after the lock timeout (409); a dropped
    /// request's transaction rolls back.
    Postgres,
    /// SQLite: one writer for the whole file; a read-only connection answers a key
    /// with a committed record first; a busy writer answers 503; a dropped request's
    /// transaction still commits.
    Sqlite,
}

/// One client's intent: who sends which key with which payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Intent {
    /// The principal (index into [`PRINCIPALS`]).
    pub principal: u8,
    /// The key (index into [`KEYS`]).
    pub key: u8,
    /// The payload (index into [`PAYLOADS`]).
    pub payload: u8,
}

/// The principals' names.
pub const PRINCIPALS: [&str; 2] = ["alice", "bob"];
/// The keys' names.
pub const KEYS: [&str; 2] = ["k1", "k2"];
/// The payloads' names.
pub const PAYLOADS: [&str; 2] = ["A", "B"];

impl Intent {
    /// `principal`, `key`, `payload` as indices.
    pub const fn new(principal: u8, key: u8, payload: u8) -> Self {
        Self {
            principal,
            key,
            payload,
        }
    }
}

/// A check's configuration. Every bound is explicit.
#[derive(Debug, Clone)]
pub struct Config {
    /// The layer or the strong mode.
    pub mode: Mode,
    /// One intent per client.
    pub clients: Vec<Intent>,
    /// Server instances over the one store.
    pub workers: u8,
    /// Attempts each client sends at most.
    pub max_attempts: u8,
    /// Worker crashes at most.
    pub max_crashes: u8,
    /// Lease expiries at most (the layer only: the strong mode commits no claim).
    pub max_lease_expiries: u8,
    /// Retention expiries at most.
    pub max_retention_expiries: u8,
    /// Whether a client may reuse its key once with the other payload.
    pub key_reuse: bool,
    /// Whether generations are renumbered densely after each step (the search's
    /// canonical form); off, a claim's generation stays as it was made, which lets a
    /// replay follow each token through a path.
    pub canonical_generations: bool,
}

impl Config {
    /// The bounds (attempts ≤ 3, crashes ≤ 2, expiries ≤ 2 each) for `clients`
    /// over `workers`, every guard on.
    pub fn new(mode: Mode, clients: Vec<Intent>, workers: u8) -> Self {
        Self {
            mode,
            clients,
            workers,
            max_attempts: 3,
            max_crashes: 2,
            max_lease_expiries: 2,
            max_retention_expiries: 2,
            key_reuse: true,
            canonical_generations: true,
        }
    }

    /// The clients of a check: alice sends k1 with A; bob, a second principal, sends
    /// his own k1 with A; a third client is alice again with the same intent (a
    /// duplicate, symmetric with the first). Any client may reuse its key once with
    /// the other payload (B).
    pub fn intents(clients: usize) -> Vec<Intent> {
        let mut intents = vec![
            Intent::new(0, 0, 0),
            Intent::new(1, 0, 0),
            Intent::new(0, 0, 0),
        ];
        intents.truncate(clients);
        intents
    }
}
