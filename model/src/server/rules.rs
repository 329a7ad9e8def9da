//! The crate's rules as the model calls them: the model's discrete records turned into
//! the crate's types (an expired record's end is `now` itself, the boundary the crate
//! counts as expired; a live one's is a lease later), and the answers turned back.

use std::time::{Duration, SystemTime};

use http::{HeaderValue, Method};
use tower_idempotency::model_rules::{self, Answer, InProgressPace, Seen};
use tower_idempotency::{
    Completion, Existing, ExistingState, Fingerprint, Principal, RefusalKind, ScopeId,
    StoredResponse,
};

use super::state::{Origin, Record, Reply};

/// The one instant every modelled step happens at: time moves only through the
/// expiry events, which mark a record expired.
/// The route every modelled request is sent to.
pub const PATH: &str = "/payments";

/// The lease the modelled claims are given.
pub const LEASE: Duration = Duration::from_secs(60);

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)
}

fn expires_at(record: &Record) -> SystemTime {
    match record.expired {
        true => now(),
        false => now() + LEASE,
    }
}

/// The claim rule (the memory store's, called): `None` when the key is taken,
/// `Some(reclaimed)` when the claim takes it.
pub fn claim(record: Option<&Record>) -> Option<bool> {
    let seen = record.map(|r| Seen {
        expires_at: expires_at(r),
        completed: r.response.is_some(),
    });
    match model_rules::claim_rule(seen, now()) {
        model_rules::Found::Free { reclaimed } => Some(reclaimed),
        model_rules::Found::Taken => None,
    }
}

/// The fence (the memory store's, called): whether `token` may complete or release.
pub fn holds(record: Option<&Record>, token: u8) -> bool {
    let seen = record.map(|r| (u64::from(r.generation), r.response.is_some()));
    model_rules::token_holds(seen, u64::from(token))
}

/// The scope of `key` for `principal` on `POST /payments` (`ScopeId::new`, called,
/// as the layer's admission computes it).
///
/// # Panics
///
/// `key` is not a valid `Idempotency-Key`.
pub fn scope_id(principal: &str, key: &str) -> ScopeId {
    let value = HeaderValue::from_str(key).expect("a modelled key is visible ASCII");
    let key = model_rules::parse_key(&value, 255).expect("a modelled key is valid");
    ScopeId::new(&Principal::new(principal), &Method::POST, PATH, &key)
}

/// A stored `201` whose body is `body` (the model's mark of whom it was made for).
pub fn stored_response(body: &[u8]) -> StoredResponse {
    StoredResponse {
        status: http::StatusCode::CREATED,
        headers: Vec::new(),
        body: bytes::Bytes::copy_from_slice(body),
    }
}

fn fingerprint(payload: u8) -> Fingerprint {
    Fingerprint::from_bytes(vec![payload])
}

/// The layer's answer (`decision::answer_existing`, called) to a request with
/// `payload` for a key whose committed record is `record`.
pub fn answer(record: &Record, payload: u8) -> Reply {
    let state = match record.response {
        None => ExistingState::InProgress {
            lease_until: expires_at(record),
        },
        Some(origin) => ExistingState::Completed(Completion::Stored(stored_response(&[
            origin.principal,
            origin.payload,
        ]))),
    };
    let existing = Existing {
        fingerprint: fingerprint(record.fingerprint),
        state,
    };
    reply(model_rules::answer_existing(
        &existing,
        &fingerprint(payload),
        now(),
        pace(),
    ))
}

/// The answer when a strong-mode claim gave up waiting for another transaction's row
/// lock (PostgreSQL): the holder's row is not readable, so `Uncommitted` with the
/// request's own fingerprint (as `transact_on` reports it).
pub fn answer_uncommitted(payload: u8) -> Reply {
    let existing = Existing {
        fingerprint: fingerprint(payload),
        state: ExistingState::Uncommitted,
    };
    reply(model_rules::answer_existing(
        &existing,
        &fingerprint(payload),
        now(),
        pace(),
    ))
}

/// The pace the modelled layer answers with: the model's lease, no handler
/// finished yet, no extra second.
fn pace() -> InProgressPace {
    InProgressPace {
        lease: LEASE,
        typical_run: None,
        extra_second: false,
    }
}

fn reply(answer: Answer) -> Reply {
    match answer {
        Answer::Replay(stored) => match stored.body[..] {
            [principal, payload] => Reply::Replayed(Origin { principal, payload }),
            _ => unreachable!("every modelled response names its origin"),
        },
        Answer::Refuse(refusal) => match refusal.kind() {
            RefusalKind::InProgress => Reply::InProgress,
            RefusalKind::Mismatch => Reply::Mismatch,
            RefusalKind::NotStored(_) => Reply::NotStored,
            other => unreachable!("answer_existing refused with {other:?}"),
        },
    }
}
