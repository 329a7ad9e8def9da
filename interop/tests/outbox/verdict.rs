//! What an outbox run must come to, as a pure function of what the business
//! table, the journal and the server hold, with a table test beside it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use reqwest_resilience_journal::IntentState;

/// A business transaction's order: its intent's key and its distinct amount
/// (the intent's body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub key: String,
    pub amount: i64,
}

/// One journal row after the run.
#[derive(Debug, Clone)]
pub struct Journaled {
    pub key: String,
    pub state: IntentState,
    /// How often it was taken up (claims).
    pub runs: i64,
    /// From its enqueue (the business transaction's start, by the database's
    /// clock) to its last change: for a terminal intent, how long it took.
    pub settled_in: Duration,
    /// Why it failed, is unknown or was abandoned (the journal's words).
    pub detail: Option<String>,
}

/// One request the server received whole.
#[derive(Debug, Clone)]
pub struct Sent {
    /// Its `Idempotency-Key`, if it had one.
    pub key: Option<String>,
    pub body: String,
    /// It bore a credential (the relay re-signs; the journal keeps none).
    pub signed: bool,
}

/// One effect at the server: a `payments` row.
#[derive(Debug, Clone)]
pub struct Effect {
    pub payment: i64,
    pub key: String,
    pub amount: i64,
}

/// Everything the verdict reads.
#[derive(Debug, Default)]
pub struct Evidence {
    /// The `orders` table after the run: the committed transactions.
    pub committed: Vec<Order>,
    /// What the producer rolled back.
    pub rolled_back: Vec<Order>,
    pub journal: Vec<Journaled>,
    pub sends: Vec<Sent>,
    pub effects: Vec<Effect>,
}

/// What went wrong, by kind.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Problems {
    /// A committed order with no payment, or paid another amount.
    pub lost_effects: Vec<String>,
    /// A key paid twice, or a payment no committed order holds the key of.
    pub extra_effects: Vec<String>,
    /// A send for a rolled-back order, without a key, for a key no order
    /// holds, without its credential, or with another body than its order's.
    pub stray_sends: Vec<String>,
    /// A rolled-back order in the business table, or a journal row no committed
    /// order holds the key of (something a relay could claim).
    pub leaked_rollbacks: Vec<String>,
    /// A committed order whose intent is not journaled or not terminal.
    pub unfinished: Vec<String>,
}

impl Problems {
    pub fn is_empty(&self) -> bool {
        *self == Problems::default()
    }

    /// Counts by kind, in the order of the fields.
    pub fn counts(&self) -> [usize; 5] {
        [
            self.lost_effects.len(),
            self.extra_effects.len(),
            self.stray_sends.len(),
            self.leaked_rollbacks.len(),
            self.unfinished.len(),
        ]
    }
}

/// The verdict: effects by key are exactly the committed orders, every send
/// is one of a committed order's (its key, its body, signed), nothing of a
/// rolled-back order exists anywhere, and every committed intent is terminal.
pub fn problems(evidence: &Evidence) -> Problems {
    let mut found = Problems::default();
    let committed: BTreeMap<&str, i64> = evidence
        .committed
        .iter()
        .map(|o| (o.key.as_str(), o.amount))
        .collect();
    let rolled_back: BTreeSet<&str> = evidence
        .rolled_back
        .iter()
        .map(|o| o.key.as_str())
        .collect();

    let mut paid: BTreeMap<&str, Vec<&Effect>> = BTreeMap::new();
    for effect in &evidence.effects {
        paid.entry(effect.key.as_str()).or_default().push(effect);
    }
    for (key, amount) in &committed {
        match paid.get(key).map_or(&[][..], Vec::as_slice) {
            [] => found
                .lost_effects
                .push(format!("{key}: committed, never paid")),
            [one] if one.amount != *amount => found.lost_effects.push(format!(
                "{key}: committed for {amount}, paid {} (payment {})",
                one.amount, one.payment
            )),
            _ => {}
        }
    }
    for (key, effects) in &paid {
        let ids: Vec<i64> = effects.iter().map(|e| e.payment).collect();
        if !committed.contains_key(key) {
            found
                .extra_effects
                .push(format!("{key}: paid by {ids:?}, no committed order"));
        } else if effects.len() > 1 {
            found
                .extra_effects
                .push(format!("{key}: paid {} times, payments {ids:?}", ids.len()));
        }
    }

    for sent in &evidence.sends {
        let Some(key) = sent.key.as_deref() else {
            found
                .stray_sends
                .push(format!("a send without a key: {:?}", sent.body));
            continue;
        };
        match committed.get(key) {
            None if rolled_back.contains(key) => found
                .stray_sends
                .push(format!("{key}: sent, yet rolled back")),
            None => found
                .stray_sends
                .push(format!("{key}: sent, no order holds it")),
            Some(amount) if sent.body != amount.to_string() => found
                .stray_sends
                .push(format!("{key}: sent {:?}, order of {amount}", sent.body)),
            Some(_) if !sent.signed => found
                .stray_sends
                .push(format!("{key}: sent without its credential")),
            Some(_) => {}
        }
    }

    for order in &evidence.rolled_back {
        if committed.contains_key(order.key.as_str()) {
            found
                .leaked_rollbacks
                .push(format!("{}: rolled back, yet in orders", order.key));
        }
    }
    let mut journaled = BTreeMap::new();
    for row in &evidence.journal {
        journaled.insert(row.key.as_str(), row);
        if !committed.contains_key(row.key.as_str()) {
            found.leaked_rollbacks.push(format!(
                "{}: journaled ({}), no committed order",
                row.key, row.state
            ));
        }
    }
    for key in committed.keys() {
        match journaled.get(key) {
            None => found.unfinished.push(format!("{key}: not journaled")),
            Some(row) if !row.state.is_terminal() => found
                .unfinished
                .push(format!("{key}: left {} ({:?})", row.state, row.detail)),
            Some(_) => {}
        }
    }
    found
}

/// A run's figures, for its report.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub committed: usize,
    pub rolled_back: usize,
    pub effects: usize,
    pub sends: usize,
    /// Sends beyond each key's first (answers lost, relays killed mid-send).
    pub extra_sends: usize,
    /// Sends whose key is a rolled-back order's (must be 0).
    pub sends_for_rolled_back: usize,
    /// The key sent most often, and how often.
    pub most_sends: Option<(String, usize)>,
    /// The intent taken up most often (claims), and how often.
    pub most_runs: Option<(String, i64)>,
    /// The intent that took longest from its enqueue to its last change.
    pub slowest: Option<(String, Duration)>,
    /// The median and the 99th percentile of that time over every intent.
    pub settled_p50: Duration,
    pub settled_p99: Duration,
}

pub fn figures(evidence: &Evidence) -> Figures {
    let rolled_back: BTreeSet<&str> = evidence
        .rolled_back
        .iter()
        .map(|o| o.key.as_str())
        .collect();
    let mut per_key: BTreeMap<&str, usize> = BTreeMap::new();
    for sent in &evidence.sends {
        *per_key
            .entry(sent.key.as_deref().unwrap_or(""))
            .or_default() += 1;
    }
    let most_sends = per_key
        .iter()
        .max_by_key(|(key, n)| (**n, std::cmp::Reverse(**key)))
        .map(|(key, n)| ((*key).to_owned(), *n));
    let most_runs = evidence
        .journal
        .iter()
        .max_by_key(|row| (row.runs, std::cmp::Reverse(row.key.as_str())))
        .map(|row| (row.key.clone(), row.runs));
    let slowest = evidence
        .journal
        .iter()
        .max_by_key(|row| (row.settled_in, std::cmp::Reverse(row.key.as_str())))
        .map(|row| (row.key.clone(), row.settled_in));
    let mut settled: Vec<Duration> = evidence.journal.iter().map(|r| r.settled_in).collect();
    settled.sort_unstable();
    let percentile = |p: usize| {
        settled
            .get((settled.len() * p).div_ceil(100).saturating_sub(1))
            .copied()
            .unwrap_or_default()
    };
    Figures {
        committed: evidence.committed.len(),
        rolled_back: evidence.rolled_back.len(),
        effects: evidence.effects.len(),
        sends: evidence.sends.len(),
        extra_sends: evidence.sends.len().saturating_sub(per_key.len()),
        sends_for_rolled_back: evidence
            .sends
            .iter()
            .filter(|s| s.key.as_deref().is_some_and(|k| rolled_back.contains(k)))
            .count(),
        most_sends,
        most_runs,
        slowest,
        settled_p50: percentile(50),
        settled_p99: percentile(99),
    }
}

#[cfg(test)]
mod table {
    use super::*;

    fn order(key: &str, amount: i64) -> Order {
        Order {
            key: key.to_owned(),
            amount,
        }
    }

    fn row(key: &str, state: IntentState) -> Journaled {
        Journaled {
            key: key.to_owned(),
            state,
            runs: 1,
            settled_in: Duration::from_millis(5),
            detail: None,
        }
    }

    fn sent(key: &str, amount: i64) -> Sent {
        Sent {
            key: Some(key.to_owned()),
            body: amount.to_string(),
            signed: true,
        }
    }

    fn effect(payment: i64, key: &str, amount: i64) -> Effect {
        Effect {
            payment,
            key: key.to_owned(),
            amount,
        }
    }

    /// A clean run: "a" (1) and "b" (2) committed, "r" (3) rolled back; "a"
    /// sent twice (a lost answer), each paid once.
    fn clean() -> Evidence {
        Evidence {
            committed: vec![order("a", 1), order("b", 2)],
            rolled_back: vec![order("r", 3)],
            journal: vec![
                row("a", IntentState::Succeeded),
                row("b", IntentState::Succeeded),
            ],
            sends: vec![sent("a", 1), sent("a", 1), sent("b", 2)],
            effects: vec![effect(1, "a", 1), effect(2, "b", 2)],
        }
    }

    #[test]
    fn each_kind_of_failure_is_found_and_a_clean_run_passes() {
        type Change = fn(&mut Evidence);
        // [lost, extra effects, stray sends, leaked rollbacks, unfinished]
        let cases: [(&str, Change, [usize; 5]); 14] = [
            ("clean", |_| {}, [0, 0, 0, 0, 0]),
            (
                "committed, never paid",
                |e| {
                    e.effects.pop();
                },
                [1, 0, 0, 0, 0],
            ),
            (
                "paid another amount",
                |e| e.effects[1].amount = 9,
                [1, 0, 0, 0, 0],
            ),
            (
                "paid twice",
                |e| e.effects.push(effect(3, "a", 1)),
                [0, 1, 0, 0, 0],
            ),
            (
                "a rolled-back order paid",
                |e| {
                    e.effects.push(effect(3, "r", 3));
                },
                [0, 1, 0, 0, 0],
            ),
            (
                "a rolled-back order sent",
                |e| e.sends.push(sent("r", 3)),
                [0, 0, 1, 0, 0],
            ),
            (
                "a send without a key",
                |e| {
                    e.sends.push(Sent {
                        key: None,
                        body: "1".into(),
                        signed: true,
                    });
                },
                [0, 0, 1, 0, 0],
            ),
            (
                "a send for a key no order holds",
                |e| e.sends.push(sent("x", 7)),
                [0, 0, 1, 0, 0],
            ),
            (
                "a send with another body",
                |e| e.sends.push(sent("a", 2)),
                [0, 0, 1, 0, 0],
            ),
            (
                "a send without its credential",
                |e| e.sends[0].signed = false,
                [0, 0, 1, 0, 0],
            ),
            (
                "a rolled-back order in the business table",
                |e| {
                    e.rolled_back.push(order("b", 2));
                },
                [0, 0, 0, 1, 0],
            ),
            (
                "a journal row of a rolled-back order",
                |e| {
                    e.journal.push(row("r", IntentState::Queued));
                },
                [0, 0, 0, 1, 0],
            ),
            (
                "a committed intent still open",
                |e| {
                    e.journal[1].state = IntentState::Unknown;
                },
                [0, 0, 0, 0, 1],
            ),
            (
                "a committed intent not journaled",
                |e| {
                    e.journal.pop();
                },
                [0, 0, 0, 0, 1],
            ),
        ];
        for (case, change, expected) in cases {
            let mut evidence = clean();
            change(&mut evidence);
            let found = problems(&evidence);
            assert_eq!(found.counts(), expected, "{case}: {found:#?}");
        }
    }

    #[test]
    fn the_figures_count_extra_sends_and_the_worst_intent() {
        let mut evidence = clean();
        evidence.journal[1].runs = 4;
        evidence.journal[0].settled_in = Duration::from_secs(3);
        evidence.sends.push(sent("r", 3));
        let figures = figures(&evidence);
        assert_eq!(
            figures,
            Figures {
                committed: 2,
                rolled_back: 1,
                effects: 2,
                sends: 4,
                extra_sends: 1,
                sends_for_rolled_back: 1,
                most_sends: Some(("a".to_owned(), 2)),
                most_runs: Some(("b".to_owned(), 4)),
                slowest: Some(("a".to_owned(), Duration::from_secs(3))),
                settled_p50: Duration::from_millis(5),
                settled_p99: Duration::from_secs(3),
            }
        );
    }
}
