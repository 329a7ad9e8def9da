//! What is open in the journal, and when the next of it is due.

use std::time::SystemTime;

/// The open intents as one worker sees them, by the store's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Backlog {
    /// Claimable by this worker now: `unknown` and due, a lease that ended, or a
    /// lease its own name holds under another (dead) incarnation.
    pub due: u64,
    /// `in_flight` under a lease that has not ended (this process's own sends
    /// included).
    pub leased: u64,
    /// The earliest end among those leases: when the next becomes claimable.
    pub leased_until: Option<SystemTime>,
    /// `unknown` and not due yet.
    pub waiting: u64,
    /// The earliest due time among those.
    pub next_due: Option<SystemTime>,
    /// The store's clock when it counted.
    pub now: SystemTime,
}

impl Backlog {
    /// When the next intent becomes claimable: `now` when one is due already,
    /// `None` when nothing is open.
    pub fn next_claimable(&self) -> Option<SystemTime> {
        if self.due > 0 {
            return Some(self.now);
        }
        match (self.next_due, self.leased_until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn next_claimable_is_the_earliest_of_due_and_lease_end() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        let at = |s| Some(SystemTime::UNIX_EPOCH + Duration::from_secs(s));
        let mut backlog = Backlog {
            due: 0,
            leased: 1,
            leased_until: at(150),
            waiting: 1,
            next_due: at(130),
            now,
        };
        assert_eq!(backlog.next_claimable(), at(130));
        backlog.next_due = None;
        assert_eq!(backlog.next_claimable(), at(150));
        backlog.due = 1;
        assert_eq!(backlog.next_claimable(), Some(now));
        backlog = Backlog {
            due: 0,
            leased: 0,
            leased_until: None,
            waiting: 0,
            next_due: None,
            now,
        };
        assert_eq!(backlog.next_claimable(), None);
    }
}
