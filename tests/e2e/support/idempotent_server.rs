//! What a deduplication scenario needs from a server: where it listens, faults planned
//! per key, and its state — effects and what it made of each request it received.
//! The reference server (the oracle) and the layer server both answer it, so each
//! scenario is written once and run against both.

use std::future::Future;
use std::time::Duration;

use super::reference_server::{Config, Expected, Fault, Received};

/// A server that deduplicates `POST /payments` by `Idempotency-Key`.
pub trait IdempotentServer: Sized + Send + Sync + 'static {
    /// Starts a server on 127.0.0.1 with these settings.
    fn start(config: Config) -> impl Future<Output = Self> + Send;

    /// `http://127.0.0.1:PORT`.
    fn url(&self) -> &str;

    /// Faults for the next requests carrying `key`, in order (appended to any plan).
    fn plan(&self, key: &str, faults: &[Fault]);

    /// The result ids created for `key` (every scope, every expiry), oldest first.
    fn result_ids(&self, key: &str) -> Vec<String>;

    /// Everything received with `key`, in arrival order.
    fn received_with(&self, key: &str) -> Vec<Received>;

    /// True while a request with `key` holds its claim and has not committed.
    fn is_in_progress(&self, key: &str) -> bool;

    /// Requests (and detached effects) still being handled.
    fn in_flight(&self) -> usize;

    /// `url` + `path`.
    fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url())
    }

    /// Payments created for `key`.
    fn effects_for(&self, key: &str) -> usize {
        self.result_ids(key).len()
    }

    /// Asserts the expected state of `key`, with what the server received in the message.
    fn assert_state(&self, key: &str, expected: &Expected) {
        let received = self.received_with(key);
        let observed = Expected {
            effects: self.effects_for(key),
            deliveries: expected.deliveries.map(|_| received.len()),
        };
        assert_eq!(
            observed, *expected,
            "server state for key {key:?} differs; it received:\n{received:#?}"
        );
    }

    /// Waits (bounded) until nothing at all is in flight.
    fn wait_idle(&self, limit: Duration) -> impl Future<Output = ()> + Send {
        super::wait_until("the server to be idle", limit, move || {
            self.in_flight() == 0
        })
    }
}
