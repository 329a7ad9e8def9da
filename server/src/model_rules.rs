//! The crate's pure rules, for the workspace's model checker (`model/`) only.
//!
//! Behind the `unstable-model-rules` feature and hidden from the docs: no part of the
//! crate's API, no promise of stability. Everything here calls the same function the
//! crate itself runs; the crate passes [`Guards::ALL`], the model checker switches one
//! [`Guard`] off to show the counterexample its property depends on.

use std::time::{Duration, SystemTime};

use http::{HeaderValue, Method};

use crate::decision::{self, Answer, InProgressPace};
use crate::fingerprint::Fingerprint;
use crate::key::parse_key;
use crate::principal::Principal;
use crate::record::{Existing, StoredResponse};
use crate::refusal::RefusalKind;
use crate::scope::ScopeId;
use crate::store::rules::{self, Found, Seen};

pub use crate::decision::{Guard, Guards};

/// The route every modelled request is sent to.
pub const PATH: &str = "/payments";

/// The lease the modelled claims are given.
pub const LEASE: Duration = Duration::from_secs(60);

/// The scope of `key` for `principal` on `POST /payments` (as the layer's admission
/// computes it).
///
/// # Panics
///
/// `key` is not a valid `Idempotency-Key`.
pub fn scope_id(principal: &str, key: &str, guards: Guards) -> ScopeId {
    let value = HeaderValue::from_str(key).expect("a modelled key is visible ASCII");
    let key = parse_key(&value, 255).expect("a modelled key is valid");
    ScopeId::guarded(
        &Principal::new(principal),
        &Method::POST,
        PATH,
        &key,
        guards,
    )
}

/// The claim rule: `None` when the key is taken, `Some(reclaimed)` when the claim
/// takes it. `record` is the key's `(expires_at, completed)`, if it has one.
pub fn claim(record: Option<(SystemTime, bool)>, now: SystemTime, guards: Guards) -> Option<bool> {
    let seen = record.map(|(expires_at, completed)| Seen {
        expires_at,
        completed,
    });
    match rules::claim_rule(seen, now, guards) {
        Found::Free { reclaimed } => Some(reclaimed),
        Found::Taken => None,
    }
}

/// The fence: whether the holder of `token` may complete or release a key whose record
/// is `(generation, completed)`.
pub fn token_holds(record: Option<(u64, bool)>, token: u64, guards: Guards) -> bool {
    rules::token_holds(record, token, guards)
}

/// The answer for a key another request claimed or finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// The stored response, replayed.
    Replay(StoredResponse),
    /// 409: the key is in progress.
    InProgress,
    /// 422: the key was used with another payload.
    Mismatch,
    /// 410: finished, but its response was not kept.
    NotStored,
}

/// The layer's answer for `existing` (`decision::answer_existing`), its `Retry-After`
/// left out.
pub fn answer_existing(
    existing: &Existing,
    fingerprint: &Fingerprint,
    now: SystemTime,
    guards: Guards,
) -> Answered {
    let pace = InProgressPace {
        lease: LEASE,
        typical_run: None,
        extra_second: false,
    };
    match decision::answer_existing(existing, fingerprint, now, pace, guards) {
        Answer::Replay(stored) => Answered::Replay(stored),
        Answer::Refuse(refusal) => match refusal.kind() {
            RefusalKind::InProgress => Answered::InProgress,
            RefusalKind::Mismatch => Answered::Mismatch,
            RefusalKind::NotStored(_) => Answered::NotStored,
            other => unreachable!("answer_existing refused with {other:?}"),
        },
    }
}

/// A stored `201` whose body is `body` (the model's mark of whom it was made for).
pub fn stored_response(body: &[u8]) -> StoredResponse {
    StoredResponse {
        status: http::StatusCode::CREATED,
        headers: Vec::new(),
        body: bytes::Bytes::copy_from_slice(body),
    }
}
