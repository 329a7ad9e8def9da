//! Symmetry reduction by canonicalisation: a permutation of the configuration's
//! symmetry group ([`super::group`]) maps every transition onto a transition,
//! so a state and its image are explored once. The representative is the least
//! image under the group (Stateright's `Representative`, used with its DFS
//! checker).

use stateright::Representative;

use super::group::Permutation;
use super::state::{Row, State};

fn mask(bits: u8, map: &[u8]) -> u8 {
    map.iter()
        .enumerate()
        .filter(|(old, _)| bits & (1 << old) != 0)
        .fold(0, |acc, (_, &new)| acc | 1 << new)
}

fn apply(s: &State, p: &Permutation) -> State {
    let mut t = s.clone();
    for (k, row) in s.rows.iter().enumerate() {
        t.rows[usize::from(p.keys[k])] = row.map(|row| Row {
            owner: row.owner.map(|(w, i)| (p.workers[usize::from(w)], i)),
            origin: p.clients[usize::from(row.origin)],
            ..row
        });
        t.history.applied[usize::from(p.keys[k])] = s.history.applied[k];
        t.history.not_performed[usize::from(p.keys[k])] = s.history.not_performed[k];
    }
    for (c, client) in s.clients.iter().enumerate() {
        t.clients[usize::from(p.clients[c])] = *client;
    }
    for (w, worker) in s.workers.iter().enumerate() {
        let mut moved = worker.clone();
        for run in &mut moved.runs {
            run.key = p.keys[usize::from(run.key)];
        }
        moved.runs.sort();
        moved.caught_up = mask(worker.caught_up, &p.keys);
        t.workers[usize::from(p.workers[w])] = moved;
    }
    t.history.told_nothing_sent = mask(s.history.told_nothing_sent, &p.clients);
    t.history.sent = mask(s.history.sent, &p.clients);
    t.history.rolled_back = mask(s.history.rolled_back, &p.clients);
    t.history.retention_over = mask(s.history.retention_over, &p.keys);
    t
}

impl Representative for State {
    fn representative(&self) -> Self {
        let mut least = self.clone();
        for p in self.symmetries.permutations() {
            let image = apply(self, p);
            if image < least {
                least = image;
            }
        }
        least
    }
}
