//! Shared helpers: clients with an instant recording sleeper, stateful responders,
//! header extraction, and a raw TCP server that drops connections.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest_resilience::{
    Backoff, RecordingSleeper, ResilientClient, RetryPolicy, RetryPolicyBuilder,
};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::raw_http::read_request;
use wiremock::{Request, ResponseTemplate};

pub use reqwest_resilience::testing::{
    assert_distinct_request_ids, assert_same_idempotency_key as single_key, FailTimes, Scripted,
};

pub const MS: Duration = Duration::from_millis(1);

/// A policy for tests: instant recorded sleeps, seeded jitter, no budget limit
/// (like `testing::test_policy`, with the backoff the assertions here expect).
pub fn policy(sleeper: &RecordingSleeper) -> RetryPolicyBuilder {
    RetryPolicy::builder()
        .sleeper(sleeper.clone())
        .rng_seed(42)
        .backoff(Backoff::full_jitter(10 * MS, 100 * MS))
        .no_budget()
}

/// A client built from `customise(policy(..))`, and its sleeper.
pub fn client_with(
    customise: impl FnOnce(RetryPolicyBuilder) -> RetryPolicyBuilder,
) -> (ResilientClient, RecordingSleeper) {
    let sleeper = RecordingSleeper::new();
    let policy = customise(policy(&sleeper))
        .build()
        .expect("valid test policy");
    (ResilientClient::with_policy(policy), sleeper)
}

/// A client with the test defaults.
pub fn client() -> (ResilientClient, RecordingSleeper) {
    client_with(|policy| policy)
}

/// `failures` responses with `status`, then `200 ok` forever.
pub fn fail_then_ok(status: u16, failures: usize) -> FailTimes {
    FailTimes::new(failures, ResponseTemplate::new(status))
        .then(ResponseTemplate::new(200).set_body_string("ok"))
}

/// The values of `name` on each received request (None where absent).
pub fn header_values(requests: &[Request], name: &str) -> Vec<Option<String>> {
    requests
        .iter()
        .map(|request| {
            request
                .headers
                .get(name)
                .map(|value| value.to_str().expect("ascii header").to_owned())
        })
        .collect()
}

pub async fn received(server: &wiremock::MockServer) -> Vec<Request> {
    server.received_requests().await.expect("recording is on")
}

/// A raw HTTP/1.1 server on 127.0.0.1 that reads each request fully, then closes the
/// connection without answering for the first `drops` requests, and answers
/// `201 Created` with body `created` afterwards. Records every request head + body.
pub struct DroppingServer {
    pub url: String,
    pub requests: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl DroppingServer {
    pub async fn start(drops: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            let served = AtomicUsize::new(0);
            // Bounded: a test makes a handful of connections.
            for _ in 0..64 {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let Some(request) = read_request(&mut socket).await else {
                    continue;
                };
                seen.lock().unwrap().push(request);
                if served.fetch_add(1, Ordering::SeqCst) < drops {
                    drop(socket); // committed, then lost: no response at all
                } else {
                    let _ = socket
                        .write_all(
                            b"HTTP/1.1 201 Created\r\ncontent-length: 7\r\nconnection: close\r\n\r\ncreated",
                        )
                        .await;
                    let _ = socket.shutdown().await;
                }
            }
        });
        Self {
            url: format!("http://{address}"),
            requests,
            task,
        }
    }

    pub fn received(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for DroppingServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The value of `name` in a raw request head (lower-cased names).
pub fn raw_header(request: &str, name: &str) -> Option<String> {
    request.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}
