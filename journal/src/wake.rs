//! Waking relays after an outbox commit: this process's resumers at once, and
//! other processes' through the store's [`announce`](crate::JournalStore::announce)
//! — sent in the background, so the committing caller never waits for it, and
//! coalesced: at most one announcement in flight, and one more after it when
//! woken meanwhile (that later one starts after the caller's commit, so its
//! relays see the intent).

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::store::JournalStore;

/// Where the background announcement stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Announcing {
    Idle,
    InFlight,
    /// In flight, and woken since it started: announce once more after it.
    InFlightAndAgain,
}

impl Announcing {
    /// A wake-up: the next state, and whether to start announcing.
    fn woken(self) -> (Self, bool) {
        match self {
            Self::Idle => (Self::InFlight, true),
            Self::InFlight | Self::InFlightAndAgain => (Self::InFlightAndAgain, false),
        }
    }

    /// An announcement finished: the next state, and whether to announce again.
    fn finished(self) -> (Self, bool) {
        match self {
            Self::InFlightAndAgain => (Self::InFlight, true),
            Self::Idle | Self::InFlight => (Self::Idle, false),
        }
    }
}

/// A journal's relay wake-ups (shared by its clones).
#[derive(Debug)]
pub(crate) struct RelayWake {
    /// This process's background resumers.
    pub(crate) local: Arc<Notify>,
    announcing: Arc<Mutex<Announcing>>,
}

impl RelayWake {
    pub(crate) fn new() -> Self {
        Self {
            local: Arc::new(Notify::new()),
            announcing: Arc::new(Mutex::new(Announcing::Idle)),
        }
    }

    /// Wakes this process's relays now and announces to the others in the
    /// background. Needs a tokio runtime.
    pub(crate) fn wake(&self, store: &Arc<dyn JournalStore>) {
        self.local.notify_one();
        if !transition(&self.announcing, Announcing::woken) {
            return;
        }
        let (store, announcing) = (Arc::clone(store), Arc::clone(&self.announcing));
        tokio::spawn(async move {
            loop {
                if let Err(error) = store.announce().await {
                    tracing::warn!(%error, "journal: relays not woken; they find the intent at their next poll");
                }
                if !transition(&announcing, Announcing::finished) {
                    return;
                }
            }
        });
    }
}

/// Applies `step` under the lock; returns whether to announce.
fn transition(state: &Mutex<Announcing>, step: fn(Announcing) -> (Announcing, bool)) -> bool {
    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
    let (next, announce) = step(*state);
    *state = next;
    announce
}

#[cfg(test)]
mod tests {
    use super::Announcing::{self, Idle, InFlight, InFlightAndAgain};

    #[test]
    fn one_announcement_in_flight_and_one_more_after_a_wake_meanwhile() {
        let woken: [(Announcing, (Announcing, bool)); 3] = [
            (Idle, (InFlight, true)),
            (InFlight, (InFlightAndAgain, false)),
            (InFlightAndAgain, (InFlightAndAgain, false)),
        ];
        for (from, to) in woken {
            assert_eq!(from.woken(), to, "woken in {from:?}");
        }
        let finished: [(Announcing, (Announcing, bool)); 3] = [
            (InFlight, (Idle, false)),
            (InFlightAndAgain, (InFlight, true)),
            (Idle, (Idle, false)),
        ];
        for (from, to) in finished {
            assert_eq!(from.finished(), to, "finished in {from:?}");
        }
    }
}
