//! The configuration's symmetry group: the permutations of workers, keys and
//! clients that map the configuration onto itself (client `c` on worker `w`
//! and key `k` goes to a client on `π(w)` and `π(k)`).

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::config::Config;

/// One permutation: new index of each old worker, key and client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Permutation {
    pub(super) workers: Vec<u8>,
    pub(super) keys: Vec<u8>,
    pub(super) clients: Vec<u8>,
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
                    let identity = clients
                        .iter()
                        .enumerate()
                        .all(|(i, &c)| usize::from(c) == i)
                        && workers
                            .iter()
                            .enumerate()
                            .all(|(i, &w)| usize::from(w) == i)
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

    /// Every permutation besides the identity.
    pub(super) fn permutations(&self) -> &[Permutation] {
        &self.0
    }
}
