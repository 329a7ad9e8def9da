//! Symmetry reduction by canonicalisation: the permutations of workers, keys
//! and clients that map the configuration onto itself (client `c` on worker
//! `w` and key `k` goes to a client on `π(w)` and `π(k)`) map every transition
//! onto a transition, so a state and its image are explored once. The
//! representative is the least image under the group (Stateright's
//! `Representative`, used with its DFS checker).

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use stateright::Representative;

use super::config::Config;
use super::state::{Row, State};

/// One permutation: new index of each old worker, key and client.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Permutation {
    workers: Vec<u8>,
    keys: Vec<u8>,
    clients: Vec<u8>,
}

/// The configuration's symmetry group. Carried in every state so that
/// `representative` can reach it; it takes no part in the state's identity.
#[derive(Debug, Clone, Default)]
pub struct Symmetries(Arc<Vec<Permutation>>);

impl PartialEq for Symmetries {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Symmetries {}
impl PartialOrd for Symmetries {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Symmetries {
    fn cmp(&self, _: &Self) -> Ordering {
        Ordering::Equal
    }
}
impl Hash for Symmetries {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

fn permutations(n: u8) -> Vec<Vec<u8>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut all = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..=rest.len() {
            let mut p = rest.clone();
            p.insert(at, n - 1);
            all.push(p);
        }
    }
    all
}

impl Symmetries {
    /// The permutations (identity excluded) that preserve `config`.
    pub fn of(config: &Config) -> Self {
        let mut group = Vec::new();
        for workers in permutations(config.workers) {
            for keys in permutations(config.keys) {
                for clients in permutations(config.clients.len() as u8) {
                    let preserves = config.clients.iter().enumerate().all(|(c, &(w, k))| {
                        config.clients[usize::from(clients[c])]
                            == (workers[usize::from(w)], keys[usize::from(k)])
                    });
                    let identity = clients.iter().enumerate().all(|(i, &c)| usize::from(c) == i)
                        && workers.iter().enumerate().all(|(i, &w)| usize::from(w) == i)
                        && keys.iter().enumerate().all(|(i, &k)| usize::from(k) == i);
                    if preserves && !identity {
                        group.push(Permutation {
                            workers: workers.clone(),
                            keys: keys.clone(),
                            clients: clients.clone(),
                        });
                    }
                }
            }
        }
        Self(Arc::new(group))
    }

    /// How many permutations besides the identity.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether only the identity preserves the configuration.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

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
    t
}

impl Representative for State {
    fn representative(&self) -> Self {
        let mut least = self.clone();
        for p in self.symmetries.0.iter() {
            let image = apply(self, p);
            if image < least {
                least = image;
            }
        }
        least
    }
}
