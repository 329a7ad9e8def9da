//! The properties, each named as the promise it checks in the docs (`always`), and
//! the `sometimes` discoveries that show the model reaches the cases it is about.

use stateright::{Model, Property};

use super::config::{Db, Mode};
use super::state::{Client, Origin, Phase, Reply, State};

/// The strong mode's promise: the effect happens once per key (within a retention: a
/// key whose record expired is a new key). Judges the stores' `claim_rule` and
/// `token_holds` (called), and the model's copy of the strong-mode transaction.
pub const ONE_EFFECT: &str = "one effect per key in the strong mode";
/// Keys are scoped to the principal: a stored response is never replayed to another.
/// Judges `ScopeId::new` (called for every client).
pub const OWN_PRINCIPAL: &str = "never a stored response to another principal";
/// A key reused with another payload is refused, never answered with the first's response.
/// Judges `decision::answer_existing` and the generation fence (`token_holds`).
pub const SAME_PAYLOAD: &str = "never a replay for another payload";
/// A 409's `Retry-After` is a poll within bounds: at least 1 s, at most 10 s (and
/// never past the holder's lease) — judges `decision::answer_existing` and
/// `in_progress_retry_after`, called for every duplicate.
pub const RETRY_AFTER_BOUNDED: &str = "a 409's Retry-After is within 1 s ..= 10 s";
/// The most a 409 asks a duplicate to wait, from the crate's docs (independent of
/// its constant, so that a change to either shows).
const MOST_RETRY_AFTER_SECS: u8 = 10;
/// A key reused with another payload is refused (422) even while the first request
/// is still in progress, never told to come back (judges `decision::answer_existing`).
pub const MISMATCH_IN_PROGRESS: &str = "a key in progress reused with another payload is refused";
/// A key still in progress reused with another payload gets 422.
pub const MISMATCH_WHILE_RUNNING: &str =
    "sometimes: 422 for a key in progress reused with another payload";
/// A claim whose holder's lease lapsed is taken over.
pub const RECLAIM: &str = "sometimes: a lapsed claim is reclaimed";
/// A finished key's response is replayed.
pub const REPLAY: &str = "sometimes: a stored response is replayed";
/// A duplicate of a key in progress gets 409.
pub const IN_PROGRESS: &str = "sometimes: 409 for a key in progress";
/// A key reused with another payload gets 422.
pub const MISMATCH: &str = "sometimes: 422 for a key reused with another payload";
/// SQLite's one writer is busy past `writer_wait`: 503, nothing runs.
pub const BUSY: &str = "sometimes: 503 while SQLite's writer is busy";
/// A worker dies under a running handler (or an open effect's transaction).
pub const CRASH: &str = "sometimes: a crash mid-handler";
/// The layer's documented boundary: an outside effect may repeat after a crash.
pub const BOUNDARY: &str =
    "sometimes: the layer's boundary, an outside effect repeated after a crash";

/// The properties of a model in `mode`.
pub fn for_mode<M: Model<State = State>>(mode: Mode) -> Vec<Property<M>> {
    let mut properties = vec![
        Property::always(OWN_PRINCIPAL, |_, s: &State| {
            replays_hold(s, |client, _, origin| {
                origin.principal == client.intent.principal
            })
        }),
        Property::always(SAME_PAYLOAD, |_, s: &State| {
            replays_hold(s, |_, payload, origin| origin.payload == payload)
        }),
        Property::sometimes(REPLAY, |_, s| {
            answered(s, |r| matches!(r, Reply::Replayed(_)))
        }),
        Property::sometimes(MISMATCH, |_, s| {
            answered(s, |r| matches!(r, Reply::Mismatch { in_progress: false }))
        }),
        Property::always(RETRY_AFTER_BOUNDED, |_, s: &State| {
            s.clients.iter().all(|c| {
                c.last.is_none_or(|last| match last.reply {
                    Reply::InProgress {
                        retry_after_secs, ..
                    } => (1..=MOST_RETRY_AFTER_SECS).contains(&retry_after_secs),
                    _ => true,
                })
            })
        }),
        Property::always(MISMATCH_IN_PROGRESS, |_, s: &State| {
            s.clients.iter().all(|c| {
                c.last.is_none_or(|last| {
                    !matches!(
                        last.reply,
                        Reply::InProgress {
                            same_payload: false,
                            ..
                        }
                    )
                })
            })
        }),
    ];
    match mode {
        // SQLite's strong mode cannot see a key in progress (nothing is committed yet):
        // the duplicate waits for the writer, or gets 503.
        Mode::Strong(Db::Sqlite) => properties.push(Property::sometimes(BUSY, |_, s: &State| {
            answered(s, |r| r == Reply::Unavailable)
        })),
        _ => properties.push(Property::sometimes(IN_PROGRESS, |_, s: &State| {
            answered(s, |r| matches!(r, Reply::InProgress { .. }))
        })),
    }
    match mode {
        // Only the layer commits a claim, so only there is the other payload of a key
        // in progress readable (PostgreSQL's strong mode sees an uncommitted row).
        Mode::Layer => properties.extend([
            Property::sometimes(MISMATCH_WHILE_RUNNING, |_, s: &State| {
                answered(s, |r| matches!(r, Reply::Mismatch { in_progress: true }))
            }),
            Property::sometimes(RECLAIM, |_, s: &State| {
                s.clients.iter().flat_map(|c| &c.runs).any(|r| {
                    matches!(
                        r.phase,
                        Phase::Claimed {
                            reclaimed: true,
                            ..
                        }
                    )
                })
            }),
            Property::sometimes(CRASH, |_, s: &State| {
                s.ledgers.iter().any(|l| l.crashed_mid_handler)
            }),
            Property::sometimes(BOUNDARY, |_, s: &State| {
                s.ledgers
                    .iter()
                    .any(|l| l.effects >= 2 && l.crashed_after_effect)
            }),
        ]),
        Mode::Strong(_) => properties.extend([
            Property::always(ONE_EFFECT, |_, s: &State| {
                s.ledgers
                    .iter()
                    .all(|l| l.effects <= 1 + l.retention_expiries)
            }),
            // After its writes, before the commit: they roll back with it.
            Property::sometimes(CRASH, |_, s: &State| {
                s.ledgers.iter().any(|l| l.crashed_after_effect)
            }),
        ]),
    }
    properties
}

/// Whether every replay a client received holds `holds(client, the payload its attempt
/// carried, the replayed response's origin)`.
fn replays_hold(state: &State, holds: impl Fn(&Client, u8, Origin) -> bool) -> bool {
    state.clients.iter().all(|client| {
        client.last.is_none_or(|last| {
            last.reply
                .replayed()
                .is_none_or(|origin| holds(client, last.payload, origin))
        })
    })
}

fn answered(state: &State, is: impl Fn(Reply) -> bool) -> bool {
    state
        .clients
        .iter()
        .any(|c| c.last.is_some_and(|last| is(last.reply)))
}
