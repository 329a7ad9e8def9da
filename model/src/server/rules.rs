//! The crate's rules as the model calls them: the model's discrete records turned into
//! the crate's types (an expired record's end is `now` itself, the boundary the crate
//! counts as expired; a live one's is a lease later), and the answers turned back.

use std::time::{Duration, SystemTime};

use tower_idempotency::model_rules::{self, Answered, Guards};
use tower_idempotency::{Completion, Existing, ExistingState, Fingerprint};

use super::state::{Origin, Record, Reply};

/// The one instant every modelled step happens at: time moves only through the
/// expiry events, which mark a record expired.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)
}

fn expires_at(record: &Record) -> SystemTime {
    match record.expired {
        true => now(),
        false => now() + model_rules::LEASE,
    }
}

/// The claim rule (the memory store's, called): `None` when the key is taken,
/// `Some(reclaimed)` when the claim takes it.
pub fn claim(record: Option<&Record>, guards: Guards) -> Option<bool> {
    let seen = record.map(|r| (expires_at(r), r.response.is_some()));
    model_rules::claim(seen, now(), guards)
}

/// The fence (the memory store's, called): whether `token` may complete or release.
pub fn holds(record: Option<&Record>, token: u8, guards: Guards) -> bool {
    let seen = record.map(|r| (u64::from(r.generation), r.response.is_some()));
    model_rules::token_holds(seen, u64::from(token), guards)
}

fn fingerprint(payload: u8) -> Fingerprint {
    Fingerprint::from_bytes(vec![payload])
}

/// The layer's answer (`decision::answer_existing`, called) to a request with
/// `payload` for a key whose committed record is `record`.
pub fn answer(record: &Record, payload: u8, guards: Guards) -> Reply {
    let state = match record.response {
        None => ExistingState::InProgress {
            lease_until: expires_at(record),
        },
        Some(origin) => {
            ExistingState::Completed(Completion::Stored(model_rules::stored_response(&[
                origin.principal,
                origin.payload,
            ])))
        }
    };
    let existing = Existing {
        fingerprint: fingerprint(record.fingerprint),
        state,
    };
    reply(model_rules::answer_existing(
        &existing,
        &fingerprint(payload),
        now(),
        guards,
    ))
}

/// The answer when a strong-mode claim gave up waiting for another transaction's row
/// lock (PostgreSQL): the holder's row is not readable, so `Uncommitted` with the
/// request's own fingerprint (as `transact_on` reports it).
pub fn answer_uncommitted(payload: u8, guards: Guards) -> Reply {
    let existing = Existing {
        fingerprint: fingerprint(payload),
        state: ExistingState::Uncommitted,
    };
    reply(model_rules::answer_existing(
        &existing,
        &fingerprint(payload),
        now(),
        guards,
    ))
}

fn reply(answered: Answered) -> Reply {
    match answered {
        Answered::Replay(stored) => match stored.body[..] {
            [principal, payload] => Reply::Replayed(Origin { principal, payload }),
            _ => unreachable!("every modelled response names its origin"),
        },
        Answered::InProgress => Reply::InProgress,
        Answered::Mismatch => Reply::Mismatch,
        Answered::NotStored => Reply::NotStored,
    }
}
