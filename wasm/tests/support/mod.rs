//! What the browser and node tests share: the test server's address, a scenario of
//! their own on it, what it received, and waiting without blocking the event loop.

#![allow(dead_code)] // each test binary uses its own part of this

use std::time::Duration;

use reqwest_resilience::IdempotencyKey;
use serde_json::Value;

/// The server scripts/wasm-tests.sh started (interop's `browser_server`), as
/// `http://127.0.0.1:PORT`, fixed when the tests were compiled.
pub fn server() -> &'static str {
    match option_env!("REQWEST_RESILIENCE_TEST_SERVER") {
        Some(address) => address,
        None => panic!(
            "REQWEST_RESILIENCE_TEST_SERVER was unset when these tests were compiled: run \
             them through scripts/wasm-tests.sh, which starts the server"
        ),
    }
}

/// A URL of a scenario no other test uses: `{server}/s/{name}-{random}/{route}`.
pub struct Scenario {
    base: String,
}

impl Scenario {
    pub fn new(name: &str) -> Self {
        // A fresh key is 122 random bits from the Web Crypto API: unique per run.
        let unique = IdempotencyKey::generate();
        Self {
            base: format!("{}/s/{name}-{}", server(), unique.as_str()),
        }
    }

    pub fn url(&self, route: &str) -> String {
        format!("{}/{route}", self.base)
    }

    /// What reached the server in this scenario.
    pub async fn log(&self) -> Log {
        let response = reqwest_resilience::reqwest::get(self.url("log"))
            .await
            .expect("the test server answers its log");
        let text = response.text().await.expect("the log is text");
        Log(serde_json::from_str(&text).expect("the log is JSON"))
    }
}

/// The server's log of one scenario.
pub struct Log(Value);

impl Log {
    /// Effects the handlers made (payments).
    pub fn effects(&self) -> u64 {
        self.0["effects"].as_u64().expect("effects")
    }

    fn requests(&self) -> &Vec<Value> {
        self.0["requests"].as_array().expect("requests")
    }

    /// Each request's status; 0 for one whose client went away before its answer.
    pub fn statuses(&self) -> Vec<u64> {
        self.requests()
            .iter()
            .map(|r| r["status"].as_u64().unwrap_or(0))
            .collect()
    }

    /// Each request's `Idempotency-Key` (None where it had none).
    pub fn keys(&self) -> Vec<Option<String>> {
        self.requests()
            .iter()
            .map(|r| r["key"].as_str().map(str::to_owned))
            .collect()
    }

    pub fn request_ids(&self) -> Vec<Option<String>> {
        self.requests()
            .iter()
            .map(|r| r["request_id"].as_str().map(str::to_owned))
            .collect()
    }

    /// When each request arrived, in milliseconds on the server's clock.
    pub fn arrivals_ms(&self) -> Vec<u64> {
        self.requests()
            .iter()
            .map(|r| r["at_ms"].as_u64().expect("at_ms"))
            .collect()
    }

    /// The one key every request carried; fails if any had none or another.
    pub fn one_key(&self) -> String {
        let keys = self.keys();
        let first = keys[0].clone().expect("the first request carried a key");
        assert!(
            keys.iter().all(|k| k.as_deref() == Some(first.as_str())),
            "one key per intent, got {keys:?}"
        );
        first
    }
}

/// Waits on the host's timer (the tests must not block the one thread).
pub async fn pause(duration: Duration) {
    gloo_timers::future::sleep(duration).await;
}

/// Waits until the scenario's server log shows `effects` effects, for at most 10 s: a
/// handler whose client went away still ends, and has its effect, later.
pub async fn log_with(scenario: &Scenario, effects: u64) -> Log {
    for _ in 0..200 {
        let log = scenario.log().await;
        if log.effects() >= effects {
            return log;
        }
        pause(Duration::from_millis(50)).await;
    }
    scenario.log().await
}
