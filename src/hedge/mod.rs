//! Hedged requests: a second copy of a slow request, to cut the tail latency.
//!
//! A request that is slow because of the one server, queue or connection it met
//! (a GC pause, a cold cache, a packet lost) is usually fast on a second try. "The
//! Tail at Scale" (Dean and Barroso, 2013) sends a backup request once the first has
//! waited longer than the 95th-percentile latency: the tail shrinks a lot, and the
//! extra load stays near 5 %. gRPC's hedging policy (A6), Finagle's
//! `BackupRequestFilter` and Polly's hedging strategy do the same.
//!
//! Here a hedge is one more attempt of the same intent, with everything an attempt
//! has: its own request id, its timeout cut to the time left, the gates (a hedge is
//! [`RetryCause::Hedge`](crate::RetryCause::Hedge): the budget charges it like a
//! retry, a breaker admits it only while closed), a line in the attempt log and a
//! span. On top of the gates a cap of its own bounds hedges to a share of the
//! hedge-eligible intents (see [`Hedging::cap`]).
//!
//! **Only for requests that are safe to send twice at once**: GET, HEAD and
//! OPTIONS by default, PUT and DELETE when you list them
//! ([`Hedging::methods`]). Never an intent with an idempotency key (a POST or
//! PATCH, or any request given a key) and never a durable intent (one with a
//! write-ahead): against a server that deduplicates keys, the second copy meets
//! `409 Conflict` while the first still runs, and holds a server connection for
//! nothing; a key is for retries in sequence, not for copies in parallel. Such
//! intents run as if hedging were off.
//!
//! How the copies race:
//! - a copy goes out when the hedge delay passes without an answer (at most
//!   [`max_copies`](Hedging::max_copies) in flight, every copy counted toward
//!   `max_attempts`, as gRPC A6 counts them);
//! - a transient failure without `Retry-After` sends the next copy at once; one
//!   with `Retry-After` holds new copies until then;
//! - a failure never beats a copy still running: the intent waits for the others;
//! - a final answer (a success, or a status the classifier calls final: 400, 404,
//!   422…) wins at once, and the other copies are cancelled without waiting (their
//!   futures are dropped; the gates hear [`Gate::attempt_cancelled`](crate::Gate::attempt_cancelled)).
//!
//! The rules are pure functions in `rules.rs`; the shared state (the cap and the
//! latency samples per authority) is in `hedger.rs`; the race is in
//! `intent/hedged.rs`, a path of its own that intents without hedging never enter.

mod hedger;
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
pub(crate) mod rules;
mod settings;

pub(crate) use hedger::Hedger;
pub(crate) use rules::{after_copy, eligible, hold, may_hedge, HedgeFacts, NoHedge, Step};
pub use settings::Hedging;
