//! The request an intent sends, as far as the loop's rules care.

/// The request an intent sends: what decides whether it may be retried or hedged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IntentKind {
    /// POST (not idempotent) or GET.
    pub post: bool,
    /// Carries an idempotency key.
    pub keyed: bool,
    /// Has a write-ahead (a journal) that may refuse it before its first byte.
    pub write_ahead: bool,
}

impl IntentKind {
    /// The method on the wire.
    pub fn method(&self) -> reqwest_resilience::reqwest::Method {
        if self.post {
            reqwest_resilience::reqwest::Method::POST
        } else {
            reqwest_resilience::reqwest::Method::GET
        }
    }
}
