//! Trace validation of the client crate's real attempt loop.
//!
//! The model above explores the crate's rules in a copy of the loop; what it cannot
//! see is a bug in the loop itself (a retry that reuses a request id, one attempt
//! too many, a retry of a request that may have been processed). Here the crate's
//! own client (`RequestBuilder::send`) runs against a small HTTP server on
//! 127.0.0.1 that follows a seeded script, and the server writes down what it
//! received: the [`Trace`]. Each property below is a pure function of one trace,
//! written from the crate's documented promises and the RFCs, not from its code:
//! it judges what the crate's loop did, as the server saw it.
//!
//! `model/tests/client_traces.rs` runs the scenarios and checks every trace.

use std::time::Duration;

use http::Method;

/// What the server does with one request it received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Answers `status`, with `Retry-After: <secs>` when given.
    Status {
        /// The status.
        status: u16,
        /// `Retry-After`, in seconds.
        retry_after: Option<u64>,
    },
    /// Reads the whole request, then closes the connection without an answer.
    Drop,
    /// Reads the whole request and answers only long after the attempt's timeout.
    Hang,
}

/// The intent one scenario sends.
#[derive(Debug, Clone)]
pub struct Intent {
    /// Its method.
    pub method: Method,
    /// Whether it carries an idempotency key.
    pub keyed: bool,
    /// The policy's `max_attempts`.
    pub max_attempts: u32,
    /// The intent's deadline.
    pub deadline: Duration,
    /// Whether hedging is on for it.
    pub hedged: bool,
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// When it arrived, since the intent was sent (on the test's virtual clock,
    /// which the crate's pauses move forward).
    pub at: Duration,
    /// Its request id header.
    pub request_id: Option<String>,
    /// Its idempotency key header.
    pub key: Option<String>,
    /// What the server did with it.
    pub act: Act,
    /// When the server's answer left, if one did.
    pub answered_at: Option<Duration>,
}

/// What one run of the crate's loop did, as the server saw it.
#[derive(Debug, Clone)]
pub struct Trace {
    /// The scenario's seed.
    pub seed: u64,
    /// The intent.
    pub intent: Intent,
    /// Every request received for it, in order of arrival.
    pub received: Vec<Received>,
}

/// `max_attempts` bounds every intent, plain or hedged: the server never receives
/// more requests for it (judges the attempt loop and the hedged race's count).
pub fn within_max_attempts(t: &Trace) -> Result<(), String> {
    let n = t.received.len();
    match n <= t.intent.max_attempts as usize {
        true => Ok(()),
        false => Err(format!(
            "{n} requests received, max_attempts {}",
            t.intent.max_attempts
        )),
    }
}

/// Every attempt carries a request id of its own (judges the request id each
/// attempt is given on the wire).
pub fn fresh_request_id_per_attempt(t: &Trace) -> Result<(), String> {
    let mut seen = Vec::new();
    for (i, r) in t.received.iter().enumerate() {
        let Some(id) = &r.request_id else {
            return Err(format!("request {i} has no request id"));
        };
        if seen.contains(id) {
            return Err(format!("request {i} repeats request id {id}"));
        }
        seen.push(id.clone());
    }
    Ok(())
}

/// A keyed intent carries one key on every attempt; an unkeyed one none (judges the
/// key put on the intent's template once).
pub fn same_key_on_every_attempt(t: &Trace) -> Result<(), String> {
    let keys: Vec<_> = t.received.iter().map(|r| r.key.as_deref()).collect();
    match (t.intent.keyed, keys.first()) {
        (_, None) => Ok(()),
        (false, _) if keys.iter().all(Option::is_none) => Ok(()),
        (false, _) => Err(format!("an unkeyed intent carried keys {keys:?}")),
        (true, Some(Some(first))) if keys.iter().all(|k| k == &Some(*first)) => Ok(()),
        (true, _) => Err(format!("keys differ or are missing: {keys:?}")),
    }
}

/// RFC 9110 §9.2.1–9.2.2: the idempotent methods, which a client may repeat after
/// a failure (safe ones included). Written from the RFC, not the crate's table.
pub fn rfc_idempotent(method: &Method) -> bool {
    [
        Method::GET,
        Method::HEAD,
        Method::OPTIONS,
        Method::TRACE,
        Method::PUT,
        Method::DELETE,
    ]
    .contains(method)
}

/// Whether what the server did leaves the request possibly processed. Only a
/// `425 Too Early` says it was not (RFC 8470 §5.2); any other answer is an
/// answer about a processed request, and a connection closed (or left hanging)
/// after the whole request arrived proves nothing.
pub fn may_have_been_processed(act: Act) -> bool {
    !matches!(act, Act::Status { status: 425, .. })
}

/// RFC 9110 §9.2.2: a non-idempotent request without an idempotency key is never
/// sent again once the server may have processed it (judges the loop's retry
/// decision end to end: classification, the failure taxonomy and the decision).
pub fn unkeyed_unsafe_never_repeated(t: &Trace) -> Result<(), String> {
    if t.intent.keyed || rfc_idempotent(&t.intent.method) {
        return Ok(());
    }
    match t
        .received
        .iter()
        .position(|r| may_have_been_processed(r.act))
    {
        Some(i) if i + 1 < t.received.len() => Err(format!(
            "unkeyed {} sent again after request {i} ({:?}) may have been processed",
            t.intent.method, t.received[i].act
        )),
        _ => Ok(()),
    }
}

/// No request arrives earlier than a `Retry-After` the server sent before it asked
/// (judges the loop's pause: `decision::after_attempt` as the loop applies it, and
/// the sleeper it sleeps on). Checked for the plain loop: in a hedged race, a copy
/// sent before the answer reached the client may arrive after it.
pub fn not_before_retry_after(t: &Trace) -> Result<(), String> {
    if t.intent.hedged {
        return Ok(());
    }
    for (i, r) in t.received.iter().enumerate() {
        let (
            Act::Status {
                retry_after: Some(secs),
                ..
            },
            Some(answered),
        ) = (r.act, r.answered_at)
        else {
            continue;
        };
        let earliest = answered + Duration::from_secs(secs);
        for (j, later) in t.received.iter().enumerate().skip(i + 1) {
            if later.at < earliest {
                return Err(format!(
                    "request {j} arrived at {:?}, before request {i}'s Retry-After ({secs} s from {answered:?})",
                    later.at
                ));
            }
        }
    }
    Ok(())
}

/// Nothing is sent once the intent's deadline has passed (judges the attempt
/// timeout cut to the time left and the loop's deadline checks).
pub fn nothing_after_deadline(t: &Trace) -> Result<(), String> {
    match t.received.iter().position(|r| r.at >= t.intent.deadline) {
        Some(i) => Err(format!(
            "request {i} arrived at {:?}, deadline {:?}",
            t.received[i].at, t.intent.deadline
        )),
        None => Ok(()),
    }
}

/// A property of one trace: `Err` says how the trace breaks it.
pub type TraceProperty = fn(&Trace) -> Result<(), String>;

/// Every trace property, by name.
pub const PROPERTIES: [(&str, TraceProperty); 6] = [
    ("max_attempts bounds every intent", within_max_attempts),
    (
        "a fresh request id per attempt",
        fresh_request_id_per_attempt,
    ),
    ("the same key on every attempt", same_key_on_every_attempt),
    (
        "an unkeyed POST/PATCH is never repeated once it may have been processed",
        unkeyed_unsafe_never_repeated,
    ),
    (
        "no attempt earlier than Retry-After",
        not_before_retry_after,
    ),
    ("nothing after the deadline", nothing_after_deadline),
];

/// The properties `t` breaks, each with why.
pub fn check(t: &Trace) -> Vec<String> {
    PROPERTIES
        .iter()
        .filter_map(|(name, property)| property(t).err().map(|why| format!("{name}: {why}")))
        .collect()
}
