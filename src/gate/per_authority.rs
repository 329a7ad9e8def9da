//! The one holder of a gate's state: one shared entry, or one per authority, behind
//! one lock.
//!
//! The budget, the breaker and the throttle each keep an entry (a window, a circuit)
//! either for the whole client or for each authority (scheme, host, port; see
//! [`GateScope::authority`](crate::GateScope::authority)). Which one, the lock around
//! them, the bounded map and the read-only lookup are the same for all three, so they
//! live here once: a gate says what an entry is and when it is idle, nothing else.

use std::sync::{Mutex, MutexGuard};

use super::authority::{AuthorityMap, MAX_AUTHORITIES};

/// A gate's entries `V`, and whatever else the gate keeps under the same lock `X`
/// (the breaker's isolation, the throttle's random source).
pub(crate) struct PerAuthority<V, X = ()> {
    entries: Mutex<Entries<V, X>>,
}

/// The locked state of a [`PerAuthority`].
pub(crate) struct Entries<V, X = ()> {
    per_host: bool,
    shared: V,
    authorities: AuthorityMap<V>,
    /// What the gate keeps beside its entries.
    pub(crate) extra: X,
}

impl<V: Default, X> PerAuthority<V, X> {
    /// One shared entry, or (`per_host`) one per authority, up to
    /// [`MAX_AUTHORITIES`].
    pub(crate) fn new(per_host: bool, extra: X) -> Self {
        PerAuthority {
            entries: Mutex::new(Entries {
                per_host,
                shared: V::default(),
                authorities: AuthorityMap::new(MAX_AUTHORITIES),
                extra,
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Entries<V, X>> {
        // Plain counters and phases, always consistent: ignore poisoning.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    pub(crate) fn is_poisoned(&self) -> bool {
        self.entries.is_poisoned()
    }
}

impl<V: Default, X> Entries<V, X> {
    /// The entry `authority` records into (the shared one unless per authority),
    /// created if needed. `None` when every tracked entry is busy (`idle` says
    /// which are not): the authority goes untracked, and the gate admits it rather
    /// than judge it on another's record.
    pub(crate) fn entry(&mut self, authority: &str, idle: impl Fn(&V) -> bool) -> Option<&mut V> {
        if self.per_host {
            self.authorities.entry(authority, idle)
        } else {
            Some(&mut self.shared)
        }
    }

    /// The entry `authority` would use, without creating one or counting a use:
    /// `None` for an authority not tracked (it has nothing recorded).
    pub(crate) fn get(&self, authority: &str) -> Option<&V> {
        if self.per_host {
            self.authorities.get(authority)
        } else {
            Some(&self.shared)
        }
    }

    /// The shared entry (unused when per authority).
    pub(crate) fn shared(&self) -> &V {
        &self.shared
    }

    /// Every entry, the shared one included.
    pub(crate) fn all(&self) -> impl Iterator<Item = &V> {
        self.authorities.values().chain([&self.shared])
    }

    /// Authorities with an entry of their own.
    pub(crate) fn tracked(&self) -> usize {
        self.authorities.len()
    }

    /// Every entry forgotten: back to the state of a new gate.
    pub(crate) fn clear(&mut self) {
        self.shared = V::default();
        self.authorities.clear();
    }
}
