//! The client's attempt loop, with hedging, checked in every interleaving of the
//! server's answers, the transport's outcomes, the gates and the clock.
//!
//! One intent per run, as fine as the loop's await points (`intent.rs`,
//! `intent/hedged.rs`): the gates on the first attempt; the write-ahead's
//! `before_first_byte` (done, refused, or out of time at the deadline); each attempt
//! or copy on the wire until it meets an answer or its timeout; the decision after
//! it; the gates on the retry; the pause; in a hedged race, the hedge delay and a
//! `Retry-After` hold. The code between two awaits is one step. The clock moves in
//! ticks of half a second up to one tick past the deadline; a timer never fires
//! early but may fire late (a loaded runtime). Around the intent, other intents may
//! trip the breaker, take its probe or end one, and drain the retry budget.
//!
//! Nondeterminism: each attempt's answer (200, 400, 409, 425, 429 and 503 with or
//! without `Retry-After`, one beyond the ceiling, a connect failure, a connection
//! lost after the request left, the attempt's own timeout) and the tick it comes
//! at; the backoff's jitter (either end of its range); whether a failure trips the
//! breaker; whether the budget refuses; late timers.
//!
//! Bounds (bounded form / full form): the intents are a keyed POST with a
//! write-ahead and an unkeyed POST (plus a keyed GET), or a hedged GET;
//! `max_attempts` 3; a deadline of 6 s / 10 s; the hedge delay 1 s, at most 2 copies
//! in flight, a hedge cap of 1 (and a run with 2, where `max_copies` binds); other
//! intents change the breaker once / three times. Symmetry: the copies in flight are one
//! sorted list, so copies that agree in every field (sent at the same tick for the
//! same cause) are one state whatever their order; nothing else is symmetric (one
//! intent per run, and the breaker and the budget are the world around it).
//!
//! # The rules the model calls (through `reqwest_resilience::model_rules`)
//! - `classify::classify` (with the crate's `Retry-After` parser): every answer's
//!   verdict — transient, safe, 409 in progress, 425, the `Retry-After` asked;
//! - `decision::after_attempt`, `waits_out`, `conflict_wait_limit`,
//!   `min_attempt_window`: deliver, give up or pause, after every attempt and copy;
//! - `attempt_timeout::AttemptTimeout::for_intent` and `attempt_timeout::of_attempt`,
//!   `Deadline::remaining`: each attempt's timeout cut to the time left;
//! - `Backoff::delay` (at either end of its jitter range);
//! - `hedge::after_copy`, `hedge::may_hedge` and `hedge::hold`: what a copy's end
//!   means, whether a copy may go, and the race's `Retry-After` hold;
//! - `gate::breaker::phases::step`: every admission, end, cancellation and refusal.
//!
//! # The rules the model copies
//! - the loop's order of steps (admission → write-ahead → attempts → end), and the
//!   race's bookkeeping (one timer, `nothing_left`): `intent.rs`, `intent/hedged.rs`
//!   are async code over reqwest, not pure functions;
//! - the request id made for each attempt (`RequestId::generate`) and the key put
//!   on the template once (`outgoing`): one key per intent, a new id per send (the
//!   model carries no key value; its property checks that no request id repeats);
//! - the hedge cap (`RetryBudget::try_withdraw` in the `Hedger`) as a count of
//!   grants, and the retry budget and the breaker's window (`is_tripped`) as the
//!   model's choices: their arithmetic is tested in `budget.rs` and `breaker/`;
//! - gate order (the breaker before the budget) and `not_sent` on a later refusal.
//!
//! The crate's rules are reached through [`rules`], which adapts the model's
//! hashable state to their types and calls them unchanged; what the tests are worth
//! against bugs in those rules is measured with cargo-mutants (`docs/mutants.md`).

mod actions;
mod answer;
mod attempts;
mod config;
mod gates;
mod intent;
mod model;
mod properties;
mod race;
pub mod rules;
mod state;

use std::time::{Duration, Instant};

use reqwest_resilience::Backoff;
use rules::BreakerRules;
use stateright::{Checker, Expectation, HasDiscoveries, Model};

use crate::report::{Report, Scope};

pub use actions::Action;
pub use answer::Answer;
pub use config::{Config, HedgeConfig};
pub use intent::IntentKind;
pub use model::ClientModel;
pub use properties::*;

/// Checks the client model at `scope`: the plain loop (`client`) and the hedged
/// race (`client-hedged`, a hedge cap of one: the cap binds); the full form adds a
/// race with a cap of two (`client-hedged-cap2`: `max_copies` binds).
pub fn check(scope: Scope) -> Vec<Report> {
    let mut reports = vec![run(config(scope, false)), run(config(scope, true))];
    if scope == Scope::Full {
        reports.push(run(wide_hedging(config(scope, true))));
    }
    reports
}

/// `config` with a hedge cap of two: two hedges may go, so `max_copies` binds.
pub fn wide_hedging(config: Config) -> Config {
    Config {
        name: "client-hedged-cap2",
        hedging: config
            .hedging
            .map(|hedging| HedgeConfig { cap: 2, ..hedging }),
        ..config
    }
}

/// The configuration checked at `scope`, plain or hedged.
pub fn config(scope: Scope, hedged: bool) -> Config {
    let full = scope == Scope::Full;
    let s = Duration::from_secs(1);
    let plain_kinds = vec![
        IntentKind {
            post: true,
            keyed: true,
            write_ahead: true,
        },
        IntentKind {
            post: true,
            keyed: false,
            write_ahead: false,
        },
    ];
    let mut kinds = plain_kinds;
    if full {
        kinds.push(IntentKind {
            post: false,
            keyed: true,
            write_ahead: false,
        });
    }
    let plain_answers = vec![
        Answer::Status(200, None),
        Answer::Status(400, None),
        Answer::Status(409, None),
        Answer::Status(425, None),
        Answer::Status(429, Some(1)),
        Answer::Status(503, None),
        Answer::Status(503, Some(2)),
        Answer::Status(503, Some(4)),
        Answer::ConnectFailed,
        Answer::ConnectionLost,
    ];
    let hedged_answers = vec![
        Answer::Status(200, None),
        Answer::Status(400, None),
        Answer::Status(503, None),
        Answer::Status(503, Some(1)),
        Answer::ConnectFailed,
        Answer::ConnectionLost,
    ];
    Config {
        name: if hedged { "client-hedged" } else { "client" },
        kinds: if hedged {
            vec![IntentKind {
                post: false,
                keyed: false,
                write_ahead: false,
            }]
        } else {
            kinds
        },
        answers: if hedged {
            hedged_answers
        } else {
            plain_answers
        },
        // In ticks of half a second.
        deadline: if full { 20 } else { 12 },
        max_attempts: 3,
        // Hedged: attempts as long as the deadline, so that a copy's useful window
        // (a tenth of it) is longer than a tick; plain: implied by the deadline.
        attempt_timeout: hedged.then_some(if full { 10 * s } else { 6 * s }),
        retry_after_ceiling: 6,
        conflict_delay: 2,
        backoff: Backoff::full_jitter(s, 2 * s),
        hedging: hedged.then_some(HedgeConfig {
            delay: 2,
            max_copies: 2,
            cap: 1,
        }),
        breaker: Some(BreakerRules {
            break_duration: 2 * s,
            probes: 1,
            probe_lease: 2 * s,
        }),
        breaker_events: if full { 3 } else { 1 },
        budget: true,
        first_attempt_from_send: false,
    }
}

/// Checks `config` exhaustively (breadth first) and reports its size and every
/// property that failed, with its trace.
pub fn run(config: Config) -> Report {
    check_config(config, None)
}

/// Checks `config` until `property` fails (or the whole space is explored): what a
/// mutation test asks.
pub fn run_until_fails(config: Config, property: &'static str) -> Report {
    check_config(config, Some(property))
}

fn check_config(config: Config, stop_at: Option<&'static str>) -> Report {
    let name = config.name.to_string();
    let model = ClientModel::new(config);
    let properties = model.properties();
    let started = Instant::now();
    let mut checker = model.checker().threads(threads());
    if let Some(property) = stop_at {
        checker = checker.finish_when(HasDiscoveries::AnyOf([property].into()));
    }
    let checker = checker.spawn_bfs().join();
    let elapsed = started.elapsed();
    let discoveries = checker.discoveries();
    let mut failures = Vec::new();
    for property in &properties {
        let found = discoveries.get(property.name);
        match (&property.expectation, found) {
            (Expectation::Always | Expectation::Eventually, Some(path)) => {
                failures.push(format!(
                    "{name}: `{}` fails:\n{}",
                    property.name,
                    trace(checker.model(), path)
                ));
            }
            (Expectation::Sometimes, None) => {
                failures.push(format!("{name}: `{}` is never reached", property.name));
            }
            _ => {}
        }
    }
    let exhaustive = checker.is_done() && discoveries.len() < properties.len();
    Report {
        name,
        states: checker.unique_state_count(),
        depth: checker.max_depth(),
        exhaustive,
        elapsed,
        failures,
    }
}

fn trace(model: &ClientModel, path: &stateright::Path<state::State, Action>) -> String {
    let _ = model;
    let mut out = String::new();
    for (state, action) in path.clone().into_vec() {
        out.push_str(&format!("  {state:?}\n"));
        if let Some(action) = action {
            out.push_str(&format!("    -> {action:?}\n"));
        }
    }
    out
}

fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
