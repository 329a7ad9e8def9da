//! The properties, each named as the promise it checks in the docs (README,
//! `decision.rs`, `hedge/mod.rs`, `write_ahead.rs`, the breaker's docs).

use stateright::Property;

use super::model::ClientModel;
use super::state::{Broken, Seen, State};

/// The next attempt is never sent earlier than the server asked (`Retry-After`).
pub const NOT_BEFORE_RETRY_AFTER: &str = "no attempt earlier than the Retry-After asked for";
/// No attempt starts once the deadline has passed.
pub const NO_ATTEMPT_AFTER_DEADLINE: &str = "no attempt after the deadline";
/// Each attempt's timeout is `min(attempt timeout, remaining)`.
pub const NO_ATTEMPT_OUTLIVES_DEADLINE: &str = "no attempt outlives the deadline";
/// No pause is started that would end at or after the deadline.
pub const NO_PAUSE_PAST_DEADLINE: &str = "no pause ends at or after the deadline";
/// The key is generated once; every attempt has a fresh request id.
pub const SAME_KEY_FRESH_REQUEST_ID: &str =
    "every attempt carries the intent's key and a fresh request id";
/// RFC 9110 §9.2.2: a POST without a key goes again only if it provably was not processed.
pub const UNKEYED_POST_NEVER_RETRIED: &str =
    "a POST without a key is never retried after it may have been processed";
/// At most `max_copies` copies in flight, every copy counted toward `max_attempts`.
pub const COPIES_WITHIN_CAPS: &str = "hedged copies within max_copies and max_attempts";
/// Refused by the write-ahead: nothing was sent, and nothing will be.
pub const REFUSED_NOTHING_SENT: &str =
    "write-ahead refused, nothing was sent: never followed by a send";
/// An open circuit admits nothing but its half-open probe; a hedge only while closed.
pub const OPEN_BREAKER_ADMITS_ONLY_PROBE: &str =
    "an open breaker admits no attempt but the half-open probe, and a hedge only while closed";
/// A hedge or a copy after a failure goes only with its useful window left.
pub const COPY_HAS_ITS_WINDOW: &str =
    "no hedged copy without its useful window before the deadline";
/// Every intent ends within the bounds.
pub const EVERY_INTENT_ENDS: &str = "every intent ends";

/// The properties of `model`'s configuration: every `always`, the `eventually`, and
/// the `sometimes` its intents can reach.
pub fn of(model: &ClientModel) -> Vec<Property<ClientModel>> {
    let config = &model.config;
    let mut properties = vec![
        Property::always(NOT_BEFORE_RETRY_AFTER, |_, s: &State| {
            !s.ghost.has_broken(Broken::EarlierThanRetryAfter)
        }),
        Property::always(NO_ATTEMPT_AFTER_DEADLINE, |_, s: &State| {
            !s.ghost.has_broken(Broken::AttemptAfterDeadline)
        }),
        Property::always(NO_ATTEMPT_OUTLIVES_DEADLINE, |_, s: &State| {
            !s.ghost.has_broken(Broken::AttemptOutlivesDeadline)
        }),
        Property::always(NO_PAUSE_PAST_DEADLINE, |_, s: &State| {
            !s.ghost.has_broken(Broken::PausePastDeadline)
        }),
        Property::always(SAME_KEY_FRESH_REQUEST_ID, |_, s: &State| {
            !s.ghost.has_broken(Broken::KeyOrRequestId)
        }),
        Property::always(UNKEYED_POST_NEVER_RETRIED, |_, s: &State| {
            !s.ghost.has_broken(Broken::UnkeyedPostRetried)
        }),
        Property::always(COPIES_WITHIN_CAPS, |_, s: &State| {
            !s.ghost.has_broken(Broken::CopiesOverCap)
        }),
        Property::always(REFUSED_NOTHING_SENT, |_, s: &State| {
            !s.ghost.has_broken(Broken::SentAfterRefusal)
        }),
        Property::always(OPEN_BREAKER_ADMITS_ONLY_PROBE, |_, s: &State| {
            !s.ghost.has_broken(Broken::AdmittedWhileOpen)
        }),
        Property::always(COPY_HAS_ITS_WINDOW, |_, s: &State| {
            !s.ghost.has_broken(Broken::CopyTooLate)
        }),
        Property::eventually(EVERY_INTENT_ENDS, |_, s: &State| s.is_done()),
        Property::sometimes(SOMETIMES_RETRY_AFTER, |_, s: &State| {
            s.ghost.has_seen(Seen::RetryAfterRetry)
        }),
        Property::sometimes(SOMETIMES_DEADLINE, |_, s: &State| {
            s.ghost.has_seen(Seen::DeadlineGiveUp)
        }),
    ];
    if config.hedging.is_some() {
        properties.extend([
            Property::sometimes(SOMETIMES_HEDGE_FIRED, |_, s: &State| {
                s.ghost.has_seen(Seen::HedgeFired)
            }),
            Property::sometimes(SOMETIMES_HEDGE_WON, |_, s: &State| {
                s.ghost.has_seen(Seen::HedgeWon)
            }),
        ]);
    } else {
        if config.kinds.iter().any(|kind| kind.keyed) {
            properties.push(Property::sometimes(SOMETIMES_CONFLICT, |_, s: &State| {
                s.ghost.has_seen(Seen::ConflictWaitedOut)
            }));
        }
        if config.kinds.iter().any(|kind| kind.write_ahead) {
            properties.push(Property::sometimes(SOMETIMES_REFUSED, |_, s: &State| {
                s.ghost.has_seen(Seen::WriteAheadRefused)
            }));
        }
    }
    if config.breaker.is_some() {
        properties.push(Property::sometimes(SOMETIMES_PROBE, |_, s: &State| {
            s.ghost.has_seen(Seen::Probe)
        }));
    }
    properties
}

/// `sometimes`: a retry after the server's `Retry-After`.
pub const SOMETIMES_RETRY_AFTER: &str = "sometimes a retry after Retry-After";
/// `sometimes`: the intent gives up on its deadline.
pub const SOMETIMES_DEADLINE: &str = "sometimes a deadline give-up";
/// `sometimes`: a hedge goes out.
pub const SOMETIMES_HEDGE_FIRED: &str = "sometimes a hedge fired";
/// `sometimes`: a hedge's answer wins.
pub const SOMETIMES_HEDGE_WON: &str = "sometimes a hedge wins";
/// `sometimes`: a keyed 409 is waited out.
pub const SOMETIMES_CONFLICT: &str = "sometimes a 409 waited out";
/// `sometimes`: the write-ahead refuses.
pub const SOMETIMES_REFUSED: &str = "sometimes the write-ahead refuses";
/// `sometimes`: an attempt is the breaker's half-open probe.
pub const SOMETIMES_PROBE: &str = "sometimes an attempt is the breaker's probe";
