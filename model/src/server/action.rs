//! The model's actions: a client's send and its attempt's timeout, each request's next
//! await point, and the world's events (expiries, pruning, crashes).

/// One step of the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// The client sends an attempt to a worker, which admits it.
    Send {
        /// The client.
        client: u8,
        /// The worker.
        worker: u8,
        /// The attempt reuses the client's key with another payload (once in a check).
        reuse: bool,
    },
    /// The client's attempt times out: it stops waiting (the request runs on in the
    /// layer and on SQLite's writer; PostgreSQL rolls its transaction back).
    Timeout {
        /// The client.
        client: u8,
    },
    /// A request takes its next await point.
    Step {
        /// The client whose request it is.
        client: u8,
        /// Which of its requests in flight.
        run: u8,
        /// The await point.
        step: Step,
    },
    /// An in-progress record's lease runs out (the layer).
    LeaseExpires {
        /// The key's scope.
        scope: u8,
    },
    /// A finished record's retention runs out.
    RetentionExpires {
        /// The key's scope.
        scope: u8,
    },
    /// `prune` deletes every expired record (the layer).
    Prune,
    /// A worker dies: its requests vanish with it (their claims stay in the layer;
    /// their transactions roll back in the strong mode).
    Crash {
        /// The worker.
        worker: u8,
    },
}

/// An await point of `service.rs::handle` (the layer) or of a strong-mode `transact`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// Layer: `store.claim(&claim).await`: take the key, or answer for it.
    Claim,
    /// Layer: `inner.call(request)`: the handler starts.
    StartHandler,
    /// Layer: the handler's outside effect (a charge sent, an email).
    Effect,
    /// Layer: the handler returns an error before any effect.
    FailHandler,
    /// Layer: the response captured and `store.complete(token, …).await`, then the reply.
    Complete,
    /// Layer: `store.release(token).await`, then the reply.
    Release,
    /// Strong, SQLite: the reader answers a key with a committed, unexpired record.
    ReadCommitted,
    /// Strong: the claim's upsert in the transaction.
    ClaimInTx,
    /// Strong: the claim waited too long (PostgreSQL's lock timeout: 409; SQLite's
    /// `writer_wait`: 503).
    LockTimeout,
    /// Strong: the effect's writes in the transaction.
    EffectInTx,
    /// Strong: the effect returns `Err(Rollback)`: nothing is kept.
    RollBack,
    /// Strong: `complete_in` and the commit: claim, effect and response at once.
    Commit,
    /// The answer reaches the client.
    Reply,
}
