//! Trace validation of the client crate's real attempt loop.
//!
//! The model above explores the crate's rules in a copy of the loop; what it cannot
//! see is a bug in the loop itself (a retry that reuses a request id, one attempt
//! too many, a retry of a request that may have been processed). Here the crate's
//! own client (`RequestBuilder::send`) runs against a small HTTP server on
//! 127.0.0.1 that follows a seeded script, and the server writes down what it
//! received: the [`Trace`]. Around it, a resolver refuses the first connections,
//! a write-ahead, a gate and a retry budget may refuse, and the caller's answer is
//! kept. Each property below is a pure function of one trace, written from the
//! crate's documented promises and the RFCs, not from its code: it judges what the
//! crate's loop did, as the server and the world around it saw it.
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
    /// Connection attempts refused before the server comes up (nothing sent).
    pub refuse_connects: u32,
    /// A write-ahead in front of the intent (`Some(true)`: it refuses).
    pub write_ahead: Option<bool>,
    /// A gate (standing for a circuit breaker) refusing the intent's n-th attempt
    /// (1: the first).
    pub gate_refuses: Option<u32>,
    /// The reserve of a fresh retry budget of ratio 10 %, if the intent has one.
    pub budget_reserve: Option<u32>,
    /// A hedged race whose order the server forces: the first copy is answered
    /// (with `Retry-After`) only once the hedge arrived, and the hedge fails without
    /// one only once the client has started to wait the first one out.
    pub held_race: bool,
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

/// What the caller was told at the end of the intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told {
    /// A response with this status.
    Response(u16),
    /// An error.
    Error {
        /// `Error::is_outcome_unknown`.
        outcome_unknown: bool,
        /// `Error::is_write_ahead_unconfirmed`.
        write_ahead_unconfirmed: bool,
    },
}

/// What one run of the crate's loop did, as the server, the resolver in front of
/// it, the write-ahead and the caller saw it.
#[derive(Debug, Clone)]
pub struct Trace {
    /// The scenario's seed.
    pub seed: u64,
    /// The intent.
    pub intent: Intent,
    /// Every request received for it, in order of arrival.
    pub received: Vec<Received>,
    /// Connection attempts refused (all before the first request received).
    pub refused: u32,
    /// Connection attempts pointed at the server (the resolver's other answers):
    /// zero only if no byte of the intent can have reached it. A request cut off
    /// before the server read it whole is in this count, not in `received`.
    pub opened: u32,
    /// For each call of the write-ahead's `before_first_byte`, the attempts made
    /// before it (refused connections and requests received).
    pub write_ahead_asked: Vec<u32>,
    /// Calls of the write-ahead's `after_end`.
    pub write_ahead_ends: u32,
    /// What the caller got.
    pub told: Told,
    /// The request ids of the attempts whose answer the client read (its attempt
    /// log shows a status): an attempt that timed out before it read the answer
    /// never saw that answer's `Retry-After`.
    pub statuses_read: Vec<String>,
}

impl Trace {
    /// Attempts that went to the network: refused connections and requests received.
    pub fn attempts(&self) -> usize {
        self.refused as usize + self.received.len()
    }
}

/// `max_attempts` bounds every intent, plain or hedged: the attempts that reach the
/// network (refused connections included) are never more, less the keyed 409s
/// waited out, which `max_attempts`' docs leave uncounted (judges the attempt loop,
/// `decision::waits_out` as it applies it, and the hedged race's count).
pub fn within_max_attempts(t: &Trace) -> Result<(), String> {
    let n = t.attempts() - keyed_409s_waited_out(t);
    match n <= t.intent.max_attempts as usize {
        true => Ok(()),
        false => Err(format!(
            "{n} counted attempts ({} refused at connect), max_attempts {}",
            t.refused, t.intent.max_attempts
        )),
    }
}

/// The keyed 409s "in progress" that another attempt followed.
fn keyed_409s_waited_out(t: &Trace) -> usize {
    let followed = t.received.len().saturating_sub(1);
    t.received
        .iter()
        .take(followed)
        .filter(|r| t.intent.keyed && matches!(r.act, Act::Status { status: 409, .. }))
        .count()
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
        // An answer the client never read (its attempt timed out first, on a
        // starved host) asked nothing of it.
        let read = r
            .request_id
            .as_ref()
            .is_some_and(|id| t.statuses_read.contains(id));
        if !read {
            continue;
        }
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

/// A hedged race keeps every copy's `Retry-After` (DESIGN: "the next attempt is
/// never sent earlier than the server asked"): in the held race, no copy after the
/// first two arrives before the first copy's `Retry-After` ends, though the hedge
/// failed without one meanwhile and the hedge delay passed. The server forces the
/// order (see [`Intent::held_race`]): both copies were in flight, so any third one
/// went after the client read the first answer. Judges `hedge::hold`,
/// `hedge::after_copy` and `hedge::may_hedge` as the race applies them.
pub fn hedged_race_keeps_retry_after(t: &Trace) -> Result<(), String> {
    if !t.intent.held_race {
        return Ok(());
    }
    let Some(first) = t.received.first() else {
        return Ok(());
    };
    let (
        Act::Status {
            retry_after: Some(secs),
            ..
        },
        Some(answered),
    ) = (first.act, first.answered_at)
    else {
        return Ok(());
    };
    let earliest = answered + Duration::from_secs(secs);
    match t.received.iter().skip(2).position(|r| r.at < earliest) {
        None => Ok(()),
        Some(j) => Err(format!(
            "request {} arrived at {:?}, before the first copy's Retry-After ({secs} s from {answered:?})",
            j + 2,
            t.received[j + 2].at
        )),
    }
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

/// A refused connection proves nothing was sent (DESIGN, "never left, transient"):
/// the intent goes on, whatever its method and key, while attempts and time are
/// left (judges the failure taxonomy's connect arm and the loop's retry of it).
/// The scenarios keep every pause short of the deadline; a gate, a budget or a
/// refusing write-ahead may end the intent first and are left out.
pub fn refused_connection_retried(t: &Trace) -> Result<(), String> {
    let i = &t.intent;
    let free =
        i.gate_refuses.is_none() && i.budget_reserve.is_none() && i.write_ahead != Some(true);
    if !free || i.refuse_connects == 0 || i.refuse_connects >= i.max_attempts {
        return Ok(());
    }
    match t.opened {
        0 => Err(format!(
            "{} refused connections, max_attempts {}, and no attempt after them",
            t.refused, i.max_attempts
        )),
        _ => Ok(()),
    }
}

/// A gate that refuses an attempt ends the intent: that attempt and none after it
/// goes out (judges the loop's gate step: `admit_all` before every attempt).
pub fn nothing_past_a_gate_refusal(t: &Trace) -> Result<(), String> {
    match t.intent.gate_refuses {
        Some(n) if t.attempts() >= n as usize => Err(format!(
            "the gate refused attempt {n}, yet {} attempts went out",
            t.attempts()
        )),
        _ => Ok(()),
    }
}

/// A fresh budget of ratio 10 % and reserve `r` grants, after the intent's first
/// attempt, `r` retries: `withdrawals + 1 ≤ 0.1 × 1 + r` (the budget's documented
/// rule). A pause after a keyed 409 is not charged (`conflict_delay`'s docs). Judges
/// `RetryBudget`'s gate as the loop asks it.
pub fn retries_within_the_budget(t: &Trace) -> Result<(), String> {
    let Some(reserve) = t.intent.budget_reserve else {
        return Ok(());
    };
    let charged = t.attempts().saturating_sub(1 + keyed_409s_waited_out(t));
    match charged <= reserve as usize {
        true => Ok(()),
        false => Err(format!(
            "{charged} retries charged to a budget that grants {reserve}"
        )),
    }
}

/// The write-ahead runs once, before the intent's first byte (and after the gates
/// admitted the first attempt: never when they refused it), and hears the end once;
/// when it refuses, nothing is sent and the caller is told so, outcome known
/// (judges the loop's write-ahead step, `write_ahead::before_first_byte`).
pub fn write_ahead_before_first_byte(t: &Trace) -> Result<(), String> {
    let Some(refuses) = t.intent.write_ahead else {
        return Ok(());
    };
    let first_refused = t.intent.gate_refuses == Some(1);
    let (asked, ends) = (&t.write_ahead_asked, t.write_ahead_ends);
    match (first_refused, asked.as_slice()) {
        (true, []) if ends == 0 && t.attempts() == 0 => return Ok(()),
        (true, _) => return Err(format!("gate refused the first attempt, yet the write-ahead ran {asked:?} and heard {ends} ends")),
        (false, [0]) if ends == 1 => {}
        (false, _) => return Err(format!("write-ahead asked {asked:?} (attempts before each), heard {ends} ends")),
    }
    match (refuses, t.attempts(), t.told) {
        (false, _, _) => Ok(()),
        (
            true,
            0,
            Told::Error {
                outcome_unknown: false,
                write_ahead_unconfirmed: false,
            },
        ) => Ok(()),
        (true, n, told) => Err(format!(
            "the write-ahead refused, yet {n} attempts went out and the caller was told {told:?}"
        )),
    }
}

/// Whether an answer proves the request was not processed: `408` and `429` (the
/// crate's docs, `Error::is_outcome_unknown`) and `425 Too Early` (RFC 8470 §5.2).
pub fn proves_not_processed(act: Act) -> bool {
    matches!(
        act,
        Act::Status {
            status: 408 | 425 | 429,
            ..
        }
    )
}

/// Ambiguity is unknown, never known: an error that says the outcome is known
/// comes only when every request the server received was answered with a status
/// that proves it was not processed (judges the loop's outcome bookkeeping over
/// every attempt, not only the last).
pub fn known_outcome_only_when_proven(t: &Trace) -> Result<(), String> {
    let Told::Error {
        outcome_unknown: false,
        ..
    } = t.told
    else {
        return Ok(());
    };
    match t.received.iter().position(|r| !proves_not_processed(r.act)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "told the outcome is known, yet request {i} ({:?}) may have been processed",
            t.received[i].act
        )),
    }
}

/// Nothing sent, nothing unknown: an intent that a gate or its write-ahead
/// refused before any connection was tried says its outcome is known, unless the
/// write-ahead could not confirm its own write (judges the loop's refusals before
/// the first byte). Refused connections are left out: a runtime too slow to see
/// the refusal before the attempt's timeout may cautiously call it unknown.
pub fn known_outcome_when_nothing_sent(t: &Trace) -> Result<(), String> {
    match (t.opened == 0 && t.refused == 0, t.told) {
        (
            true,
            Told::Error {
                outcome_unknown: true,
                write_ahead_unconfirmed: false,
            },
        ) => Err(format!(
            "nothing reached the server ({} refused at connect), yet the outcome is unknown",
            t.refused
        )),
        _ => Ok(()),
    }
}

/// Whether DESIGN's default classification retries an answer with `status`: the
/// transient statuses 408, 429, 502, 503, 504 (500 is opt-in), a `425 Too Early`,
/// and a 409 on a keyed request. Written from the contract, not the crate's table.
pub fn design_retries_status(status: u16, keyed: bool) -> bool {
    matches!(status, 408 | 425 | 429 | 502 | 503 | 504) || (keyed && status == 409)
}

/// A final answer ends the intent: after a status DESIGN does not retry (any 2xx,
/// a 400, a 500 by default, a 409 without a key), nothing more is sent. Checked for
/// the plain loop: a hedged copy already on its way may arrive after a final answer.
/// Judges `classify::classify` and `decision::after_attempt` as the loop applies them.
pub fn final_answer_ends_the_intent(t: &Trace) -> Result<(), String> {
    if t.intent.hedged {
        return Ok(());
    }
    let last = t.received.len().saturating_sub(1);
    for (i, r) in t.received.iter().enumerate().take(last) {
        if let Act::Status { status, .. } = r.act {
            if !design_retries_status(status, t.intent.keyed) {
                return Err(format!(
                    "request {i} was answered {status}, a final answer, yet {} more followed",
                    last - i
                ));
            }
        }
    }
    Ok(())
}

/// A property of one trace: `Err` says how the trace breaks it.
pub type TraceProperty = fn(&Trace) -> Result<(), String>;

/// Every trace property, by name.
pub const PROPERTIES: [(&str, TraceProperty); 14] = [
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
    (
        "a hedged race keeps the first copy's Retry-After",
        hedged_race_keeps_retry_after,
    ),
    (
        "a refused connection is retried, whatever the method",
        refused_connection_retried,
    ),
    (
        "nothing goes past a gate's refusal",
        nothing_past_a_gate_refusal,
    ),
    (
        "retries within the budget's grants",
        retries_within_the_budget,
    ),
    (
        "the write-ahead runs once before the first byte and hears the end",
        write_ahead_before_first_byte,
    ),
    (
        "a known outcome only when every request was proven not processed",
        known_outcome_only_when_proven,
    ),
    (
        "a known outcome when nothing reached the server",
        known_outcome_when_nothing_sent,
    ),
    (
        "a final answer ends the intent",
        final_answer_ends_the_intent,
    ),
];

/// The properties `t` breaks, each with why.
pub fn check(t: &Trace) -> Vec<String> {
    PROPERTIES
        .iter()
        .filter_map(|(name, property)| property(t).err().map(|why| format!("{name}: {why}")))
        .collect()
}
