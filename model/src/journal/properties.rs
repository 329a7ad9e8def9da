//! The properties, each named as the promise it checks in the journal's docs.

use stateright::Property;

use super::model::JournalModel;
use super::state::{Client, RunAt, Seen, State, Visibility};

/// "refused, nothing was sent" is never followed by a send (of the row that
/// refused write-ahead would have made). Judges `commit_verdict::verdict`.
pub const NOTHING_SENT: &str = "refused, nothing was sent: never followed by a send";
/// At most one sender of an open intent at a time, holding its live lease. Judges
/// `join::step_for`, `resume::plan_run` and `Journal::lease_for` (called), and the
/// copied take-over and claim. A lease may end under a send whose deadline reaches
/// into the part of the lease the journal promises to keep free
/// ([`Config::lease_kept_free`](super::Config::lease_kept_free)), so a run plan or a
/// lease without its margin fails here.
pub const ONE_SENDER: &str = "at most one live-lease sender per intent";
/// A write under a fenced-off lease never changes the row.
pub const FENCED: &str = "a fenced write is never recorded";
/// A rolled-back outbox enqueue is never sent.
pub const ROLLED_BACK: &str = "nothing is sent for a rolled-back enqueue";
/// The application applies each result exactly once: never twice, and an
/// acknowledged result was applied (judges `delivery::settle`, called at every
/// acknowledgement).
pub const APPLIED_ONCE: &str = "a result is applied exactly once, by the first acknowledgement";
/// The outcome a send records is what that send saw (judges `run_outcome` and
/// `durable::first_run_outcome_of`, called at every response, against
/// [`Response::recorded_as`](super::state::Response::recorded_as)).
pub const RECORDED_AS_SEEN: &str = "a recorded outcome is what its send saw";
/// Once the server's retention of a key has ended, a send would run the request
/// again: a join is refused and a resumed run abandoned (judges `join::step_for`'s
/// retention arm and `resume::plan_run`, called with the retention's end).
pub const NOT_PAST_RETENTION: &str = "nothing is sent for a key whose retention has ended";
/// Every committed intent is terminal at the end of every path within the bounds.
pub const TERMINAL: &str = "every committed intent is terminal within the bounds";
/// Every terminal result is acknowledged at the end of every path.
pub const DELIVERED: &str = "every terminal result is delivered and acknowledged";

/// The `sometimes` properties: each must be reached, or the model is too weak.
pub const SOMETIMES: [(&str, Seen); 9] = [
    ("sometimes: a lease taken over", Seen::TakeOver),
    ("sometimes: a run given back", Seen::GivenBack),
    ("sometimes: an ambiguous commit", Seen::AmbiguousCommit),
    ("sometimes: a crash mid-send", Seen::CrashMidSend),
    ("sometimes: a rolled-back enqueue", Seen::RolledBackEnqueue),
    ("sometimes: a late result fenced off", Seen::LeaseLost),
    (
        "sometimes: abandoned after too many runs",
        Seen::AbandonedAfterRuns,
    ),
    (
        "sometimes: a joining send sent again unjournaled",
        Seen::SentUnjournaled,
    ),
    (
        "sometimes: a join refused, the key's retention over",
        Seen::RetentionRefused,
    ),
];

fn nothing_sent(_: &JournalModel, s: &State) -> bool {
    s.history.told_nothing_sent & s.history.sent == 0
}

fn rolled_back(_: &JournalModel, s: &State) -> bool {
    s.history.rolled_back & s.history.sent == 0
}

fn one_sender(m: &JournalModel, s: &State) -> bool {
    (0..s.rows.len()).all(|k| {
        let Some(row) = s.rows[k].filter(|r| !r.state.is_terminal()) else {
            return true;
        };
        let mut fences = Vec::new();
        for (c, client) in s.clients.iter().enumerate() {
            if let Client::Sending(fence) = client {
                if usize::from(m.config.clients[c].1) == k {
                    fences.push(*fence);
                }
            }
        }
        for worker in &s.workers {
            for run in &worker.runs {
                if usize::from(run.key) == k && run.at == RunAt::Sending {
                    fences.push(Some(run.fence));
                }
            }
        }
        match fences.as_slice() {
            [] => true,
            [Some(fence)] => *fence == row.fence && row.lease_live,
            _ => false,
        }
    })
}

fn applied_once(_: &JournalModel, s: &State) -> bool {
    s.rows
        .iter()
        .zip(&s.history.applied)
        .all(|(row, &applied)| {
            let acked = row.is_some_and(|r| r.acked);
            applied <= 1 && (!acked || applied == 1)
        })
}

fn terminal(_: &JournalModel, s: &State) -> bool {
    s.clients.iter().all(|c| matches!(c, Client::Done(_)))
        && s.workers.iter().all(|w| w.runs.is_empty())
        && s.rows
            .iter()
            .flatten()
            .all(|r| r.visibility == Visibility::Committed && r.state.is_terminal())
}

fn delivered(m: &JournalModel, s: &State) -> bool {
    terminal(m, s) && s.rows.iter().flatten().all(|r| r.acked)
}

/// Every property of the journal model.
pub fn all() -> Vec<Property<JournalModel>> {
    let mut all = vec![
        Property::always(NOTHING_SENT, nothing_sent),
        Property::always(ONE_SENDER, one_sender),
        Property::always(FENCED, |_: &JournalModel, s: &State| {
            !s.history.fenced_write_recorded
        }),
        Property::always(ROLLED_BACK, rolled_back),
        Property::always(NOT_PAST_RETENTION, |_: &JournalModel, s: &State| {
            !s.history.sent_past_retention
        }),
        Property::always(APPLIED_ONCE, applied_once),
        Property::always(RECORDED_AS_SEEN, |_: &JournalModel, s: &State| {
            !s.history.outcome_differs
        }),
        Property::eventually(TERMINAL, terminal),
        Property::eventually(DELIVERED, delivered),
    ];
    all.push(Property::sometimes(
        SOMETIMES[0].0,
        |_: &JournalModel, s: &State| s.saw(Seen::TakeOver),
    ));
    all.push(Property::sometimes(
        SOMETIMES[1].0,
        |_: &JournalModel, s: &State| s.saw(Seen::GivenBack),
    ));
    all.push(Property::sometimes(
        SOMETIMES[2].0,
        |_: &JournalModel, s: &State| s.saw(Seen::AmbiguousCommit),
    ));
    all.push(Property::sometimes(
        SOMETIMES[3].0,
        |_: &JournalModel, s: &State| s.saw(Seen::CrashMidSend),
    ));
    all.push(Property::sometimes(
        SOMETIMES[4].0,
        |_: &JournalModel, s: &State| s.saw(Seen::RolledBackEnqueue),
    ));
    all.push(Property::sometimes(
        SOMETIMES[5].0,
        |_: &JournalModel, s: &State| s.saw(Seen::LeaseLost),
    ));
    all.push(Property::sometimes(
        SOMETIMES[6].0,
        |_: &JournalModel, s: &State| s.saw(Seen::AbandonedAfterRuns),
    ));
    all.push(Property::sometimes(
        SOMETIMES[7].0,
        |_: &JournalModel, s: &State| s.saw(Seen::SentUnjournaled),
    ));
    all.push(Property::sometimes(
        SOMETIMES[8].0,
        |_: &JournalModel, s: &State| s.saw(Seen::RetentionRefused),
    ));
    all
}
