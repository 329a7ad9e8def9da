//! What a crash run must come to, as a pure function of what the journal, the
//! server's database and the clients saw, with a table test beside it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use reqwest_resilience_journal::IntentState;

use crate::ledger::payment_body;

/// One journaled intent after the resume.
#[derive(Debug, Clone)]
pub struct Intent {
    pub key: String,
    /// The intent's distinct amount: how its payment row is found.
    pub amount: i64,
    pub state: IntentState,
    pub status: Option<u16>,
    /// Why it failed, is unknown or was abandoned (the journal's words).
    pub detail: Option<String>,
}

/// An answer a client received whole.
#[derive(Debug, Clone)]
pub struct Seen {
    pub key: String,
    pub status: u16,
    pub body: String,
    /// Marked `Idempotent-Replayed: true`.
    pub replay: bool,
}

/// A run's evidence and figures.
#[derive(Debug)]
pub struct Outcome {
    pub kills: u64,
    pub seed: u64,
    pub intents: Vec<Intent>,
    /// Payment row ids by amount, from the server's database.
    pub payments: BTreeMap<i64, Vec<i64>>,
    /// Answers the senders got (durable sends).
    pub seen: Vec<Seen>,
    /// Answers to one more send of each succeeded intent, faults off.
    pub replays: Vec<Seen>,
    pub send_errors: u64,
    pub resume_passes: usize,
    pub open_after_resume: usize,
    pub faults: String,
    pub killed_in: Duration,
    pub took: Duration,
}

/// What went wrong, by kind.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Problems {
    /// Amounts paid more than once, or paid with no intent journaled for them.
    pub double_effects: Vec<String>,
    /// Succeeded intents without their payment, failed ones with one.
    pub lost_effects: Vec<String>,
    /// Intents not terminal, abandoned, or without their one replayed result.
    pub unconverged: Vec<String>,
    /// A success body that does not name the key's one payment.
    pub wrong_bodies: Vec<String>,
}

impl Problems {
    fn is_empty(&self) -> bool {
        *self == Problems::default()
    }
}

/// The verdict: no double effect, no lost committed effect, every intent on one
/// result that every success answer names.
pub fn problems(
    intents: &[Intent],
    payments: &BTreeMap<i64, Vec<i64>>,
    seen: &[Seen],
    replays: &[Seen],
) -> Problems {
    let mut found = Problems::default();
    let mut journaled = BTreeSet::new();
    let mut row_of_key = BTreeMap::new();
    for intent in intents {
        journaled.insert(intent.amount);
        let rows = payments.get(&intent.amount).map_or(&[][..], Vec::as_slice);
        match (intent.state, rows) {
            (IntentState::Succeeded, [id]) => {
                row_of_key.insert(intent.key.as_str(), (*id, intent.amount));
            }
            (IntentState::Succeeded, []) => found
                .lost_effects
                .push(format!("{}: succeeded, no payment", intent.key)),
            (IntentState::Failed, []) => {}
            (IntentState::Failed, [_, ..]) => found.lost_effects.push(format!(
                "{}: failed (status {:?}, {:?}), yet paid",
                intent.key, intent.status, intent.detail
            )),
            (IntentState::Succeeded, _) => {}
            (state, _) => found.unconverged.push(format!(
                "{}: ended {state} ({:?})",
                intent.key, intent.detail
            )),
        }
    }
    for (amount, ids) in payments {
        if ids.len() > 1 {
            found
                .double_effects
                .push(format!("amount {amount} paid by rows {ids:?}"));
        }
        if !journaled.contains(amount) {
            found
                .double_effects
                .push(format!("amount {amount} paid, no intent journaled for it"));
        }
    }
    for answer in seen.iter().filter(|s| (200..300).contains(&s.status)) {
        match row_of_key.get(answer.key.as_str()) {
            Some(&(id, amount)) if answer.body == payment_body(id, amount) => {}
            _ => found.wrong_bodies.push(format!(
                "{}: answered {} {:?}",
                answer.key, answer.status, answer.body
            )),
        }
    }
    for (key, &(id, amount)) in &row_of_key {
        let replayed = replays.iter().any(|r| {
            r.key == *key && r.status == 201 && r.replay && r.body == payment_body(id, amount)
        });
        if !replayed {
            found
                .unconverged
                .push(format!("{key}: no replay of payment {id}"));
        }
    }
    found
}

impl Outcome {
    pub fn problems(&self) -> Problems {
        problems(&self.intents, &self.payments, &self.seen, &self.replays)
    }

    pub fn assert_converged(&self) {
        let found = self.problems();
        assert!(found.is_empty(), "seed {}: {found:#?}", self.seed);
        assert!(!self.intents.is_empty(), "no intent was sent");
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = |state| self.intents.iter().filter(|i| i.state == state).count();
        let found = self.problems();
        writeln!(
            f,
            "crash run, seed {}: {} SIGKILLs in {:.1?}, {:.1?} in all",
            self.seed, self.kills, self.killed_in, self.took
        )?;
        writeln!(
            f,
            "intents {}: succeeded {}, failed {}, other {}; sends that ended in an error {}",
            self.intents.len(),
            count(IntentState::Succeeded),
            count(IntentState::Failed),
            self.intents.len() - count(IntentState::Succeeded) - count(IntentState::Failed),
            self.send_errors
        )?;
        writeln!(
            f,
            "resume: {} passes, {} open after; replays {} of {} marked replayed",
            self.resume_passes,
            self.open_after_resume,
            self.replays.iter().filter(|r| r.replay).count(),
            self.replays.len()
        )?;
        let mut why_not: BTreeMap<String, usize> = BTreeMap::new();
        for intent in self
            .intents
            .iter()
            .filter(|i| i.state != IntentState::Succeeded)
        {
            let why = format!("{} {:?}: {:?}", intent.state, intent.status, intent.detail);
            *why_not.entry(why).or_default() += 1;
        }
        for (why, n) in &why_not {
            writeln!(f, "not succeeded ({n}): {why}")?;
        }
        writeln!(f, "proxy: {}", self.faults)?;
        write!(
            f,
            "payment rows {}; double effects {}, lost committed effects {}, unconverged {}, wrong bodies {}",
            self.payments.values().map(Vec::len).sum::<usize>(),
            found.double_effects.len(),
            found.lost_effects.len(),
            found.unconverged.len(),
            found.wrong_bodies.len()
        )
    }
}

#[cfg(test)]
mod table {
    use super::*;

    fn intent(key: &str, amount: i64, state: IntentState) -> Intent {
        Intent {
            key: key.to_owned(),
            amount,
            state,
            status: None,
            detail: None,
        }
    }

    fn answer(key: &str, id: i64, amount: i64, replay: bool) -> Seen {
        Seen {
            key: key.to_owned(),
            status: 201,
            body: payment_body(id, amount),
            replay,
        }
    }

    /// A case: its name, the intents, the payments, what the senders saw, the
    /// replays, and the expected counts of double effects, lost effects,
    /// unconverged intents and wrong bodies.
    type Case = (
        &'static str,
        Vec<Intent>,
        BTreeMap<i64, Vec<i64>>,
        Vec<Seen>,
        Vec<Seen>,
        [usize; 4],
    );

    #[test]
    fn each_kind_of_failure_is_found_and_a_clean_run_passes() {
        use IntentState::{Failed, Succeeded, Unknown};
        let one = |pairs: &[(i64, &[i64])]| -> BTreeMap<i64, Vec<i64>> {
            pairs.iter().map(|(a, ids)| (*a, ids.to_vec())).collect()
        };
        let cases: Vec<Case> = vec![
            (
                "clean",
                vec![intent("a", 1, Succeeded), intent("b", 2, Failed)],
                one(&[(1, &[7])]),
                vec![answer("a", 7, 1, false)],
                vec![answer("a", 7, 1, true)],
                [0, 0, 0, 0],
            ),
            (
                "paid twice",
                vec![intent("a", 1, Succeeded)],
                one(&[(1, &[7, 8])]),
                vec![],
                vec![],
                [1, 0, 0, 0],
            ),
            (
                "paid with no intent",
                vec![],
                one(&[(5, &[7])]),
                vec![],
                vec![],
                [1, 0, 0, 0],
            ),
            (
                "succeeded, never paid",
                vec![intent("a", 1, Succeeded)],
                one(&[]),
                vec![],
                vec![],
                [0, 1, 0, 0],
            ),
            (
                "failed, yet paid",
                vec![intent("a", 1, Failed)],
                one(&[(1, &[7])]),
                vec![],
                vec![],
                [0, 1, 0, 0],
            ),
            (
                "left unknown",
                vec![intent("a", 1, Unknown)],
                one(&[]),
                vec![],
                vec![],
                [0, 0, 1, 0],
            ),
            (
                "no replay",
                vec![intent("a", 1, Succeeded)],
                one(&[(1, &[7])]),
                vec![],
                vec![answer("a", 7, 1, false)],
                [0, 0, 1, 0],
            ),
            (
                "an answer naming another payment",
                vec![intent("a", 1, Succeeded)],
                one(&[(1, &[7])]),
                vec![answer("a", 8, 1, false)],
                vec![answer("a", 7, 1, true)],
                [0, 0, 0, 1],
            ),
        ];
        for (case, intents, payments, seen, replays, expected) in cases {
            let found = problems(&intents, &payments, &seen, &replays);
            let counts = [
                found.double_effects.len(),
                found.lost_effects.len(),
                found.unconverged.len(),
                found.wrong_bodies.len(),
            ];
            assert_eq!(counts, expected, "{case}: {found:?}");
        }
    }
}
