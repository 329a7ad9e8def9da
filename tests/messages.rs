//! Errors and logs a person can act on: each give-up message says why the
//! last failure was not retried, a refused certificate names the host and the remedy,
//! every duration is written one way, and the attempt log prints one line per attempt.
//! Real HTTP on 127.0.0.1 (wiremock, and a rustls server for certificates).

use std::time::Duration;

use bytes::Bytes;
use reqwest_resilience::{
    Backoff, RecordingSleeper, ResilientClient, ResponseExt, RetryPolicy, RetryPolicyBuilder,
    TransportFailure,
};
use wiremock::matchers::{any, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

// The field tests' certificate kit and rustls server (`tls_server` finds `certs` as
// `super::certs`, so both sit at this binary's root).
#[allow(dead_code)]
#[path = "field/support/certs.rs"]
mod certs;
#[allow(dead_code)]
#[path = "field/support/tls_server.rs"]
mod tls_server;

use certs::{self_signed, TestCa};
use tls_server::TlsServer;

const MS: Duration = Duration::from_millis(1);

/// Instant recorded pauses, seeded jitter, no budget: only the rule under test decides.
fn policy(sleeper: &RecordingSleeper) -> RetryPolicyBuilder {
    RetryPolicy::builder()
        .sleeper(sleeper.clone())
        .rng_seed(17)
        .backoff(Backoff::full_jitter(10 * MS, 100 * MS))
        .no_budget()
}

/// A server whose answer (to any method) comes later than any attempt timeout used here.
async fn slow_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(201).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    server
}

/// The policy's attempts time out (after 300 ms) long before `slow_server` answers.
fn timing_out(sleeper: &RecordingSleeper) -> RetryPolicyBuilder {
    policy(sleeper).attempt_timeout(300 * MS)
}

/// Every duration written in `text`: the tokens that start with a digit and end in a
/// time unit.
fn durations_in(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, ';' | ',' | '(' | ')'))
        .filter(|token| token.starts_with(|c: char| c.is_ascii_digit()))
        .filter(|token| {
            ["ns", "µs", "ms", "s"]
                .iter()
                .any(|unit| token.ends_with(unit))
        })
        .map(str::to_owned)
        .collect()
}

/// The one format: digits, at most three decimals, a unit glued to the number —
/// never `2.001867748s` beside `2001 ms`.
fn assert_one_duration_format(text: &str) {
    assert!(
        !text.contains(" ms"),
        "a unit apart from its number: {text}"
    );
    let durations = durations_in(text);
    assert!(!durations.is_empty(), "no duration in {text}");
    for duration in durations {
        let number = duration.trim_end_matches(|c: char| c.is_alphabetic() || c == 'µ');
        let decimals = number.split('.').nth(1).map_or(0, str::len);
        assert!(decimals <= 3, "{duration} in {text}");
        assert!(number.parse::<f64>().is_ok(), "{duration} in {text}");
    }
}

#[tokio::test]
async fn an_unkeyed_post_that_timed_out_says_it_was_not_retried_for_want_of_a_key() {
    let server = slow_server().await;
    let sleeper = RecordingSleeper::new();
    let client = ResilientClient::with_policy(timing_out(&sleeper).build().unwrap());
    let error = client
        .post(format!("{}/payments", server.uri()))
        .without_idempotency_key()
        .body(r#"{"amount":500}"#)
        .send()
        .await
        .expect_err("the attempt times out");
    assert!(error.is_not_retryable(), "{error}");
    assert_eq!(error.transport_failure(), Some(TransportFailure::Timeout));
    let text = error.to_string();
    assert_eq!(error.method(), Some(&reqwest::Method::POST));
    assert!(
        text.starts_with("not retried after 1 attempt: the POST had no idempotency key"),
        "{text}"
    );
    assert!(text.contains("send it with a key (the default)"), "{text}");
    assert!(text.contains("; last: timeout after "), "{text}");
    assert!(text.ends_with("; outcome unknown"), "{text}");
    assert_one_duration_format(&text);
    assert!(sleeper.delays().is_empty());
}

#[tokio::test]
async fn the_give_up_text_names_the_method_it_was_about() {
    let server = slow_server().await;
    let sleeper = RecordingSleeper::new();
    let client = ResilientClient::with_policy(timing_out(&sleeper).build().unwrap());
    let error = client
        .patch(format!("{}/orders/7", server.uri()))
        .without_idempotency_key()
        .body(r#"{"status":"paid"}"#)
        .send()
        .await
        .expect_err("the attempt times out");
    let text = error.to_string();
    assert!(
        text.starts_with("not retried after 1 attempt: the PATCH had no idempotency key"),
        "{text}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn an_idempotent_method_stopped_by_the_classifier_says_so_not_want_of_a_key() {
    let server = slow_server().await;
    let sleeper = RecordingSleeper::new();
    let stop_everything =
        |_: &reqwest_resilience::AttemptView<'_>| Some(reqwest_resilience::Decision::Stop);
    let client = ResilientClient::with_policy(
        timing_out(&sleeper)
            .classifier(stop_everything)
            .build()
            .unwrap(),
    );
    let error = client
        .get(format!("{}/orders/7", server.uri()))
        .send()
        .await
        .expect_err("the attempt times out");
    assert!(error.idempotency_key().is_none(), "a GET gets no key");
    let text = error.to_string();
    assert!(
        text.starts_with("not retried after 1 attempt: the policy's classifier said not to"),
        "{text}"
    );
    assert!(!text.contains("idempotency key"), "{text}");
}

#[tokio::test]
async fn a_streamed_body_says_why_it_was_not_sent_again_and_what_to_use_instead() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .expect(1)
        .mount(&server)
        .await;
    let client = ResilientClient::with_policy(policy(&RecordingSleeper::new()).build().unwrap());
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![Ok(Bytes::from_static(b"{}"))];
    let error = client
        .post(server.uri())
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .expect_err("503, and the stream cannot be replayed");
    assert!(error.is_body_not_replayable(), "{error}");
    let text = error.to_string();
    assert!(
        text.starts_with("not retried after 1 attempt: the body is a stream"),
        "{text}"
    );
    assert!(text.contains(".body_fn("), "{text}");
    assert!(
        text.contains("; last status 503 Service Unavailable"),
        "{text}"
    );
    // A response came back: no transport failure to report.
    assert_eq!(error.transport_failure(), None);
}

#[tokio::test]
async fn a_failing_body_stream_is_called_the_callers_failure() {
    let server = MockServer::start().await;
    Mock::given(method("PUT"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let client = ResilientClient::with_policy(policy(&RecordingSleeper::new()).build().unwrap());
    let error = client
        .put(server.uri())
        .body_fn(|| {
            let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(Bytes::from_static(b"first part")),
                Err(std::io::Error::other("the file went away")),
            ];
            reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))
        })
        .send()
        .await
        .expect_err("the body cannot be produced");
    assert_eq!(error.transport_failure(), Some(TransportFailure::Body));
    let text = error.to_string();
    assert!(
        text.starts_with("not retried after 1 attempt: the failure is the caller's"),
        "{text}"
    );
    assert!(
        text.contains("; last: the request body stream failed"),
        "{text}"
    );
}

#[tokio::test]
async fn a_deadline_message_writes_elapsed_time_and_timeouts_the_same_way() {
    let server = slow_server().await;
    let sleeper = RecordingSleeper::new();
    let client = ResilientClient::with_policy(
        policy(&sleeper)
            .max_attempts(5)
            .deadline(700 * MS)
            .attempt_timeout(300 * MS)
            .build()
            .unwrap(),
    );
    let error = client
        .post(server.uri())
        .body("{}")
        .send()
        .await
        .expect_err("slower than the deadline");
    assert!(error.is_deadline_exceeded(), "{error}");
    let text = error.to_string();
    // Elapsed time and the last timeout, both in the one format.
    assert!(text.contains(" in "), "{text}");
    assert!(text.contains("; last: timeout after "), "{text}");
    assert!(durations_in(&text).len() >= 2, "{text}");
    assert_one_duration_format(&text);
    assert_eq!(error.transport_failure(), Some(TransportFailure::Timeout));
}

#[tokio::test]
async fn the_attempt_log_prints_one_line_per_attempt() {
    let server = MockServer::start().await;
    let flaky = reqwest_resilience::testing::FailTimes::new(2, ResponseTemplate::new(503))
        .then(ResponseTemplate::new(201));
    Mock::given(method("POST"))
        .respond_with(flaky)
        .expect(3)
        .mount(&server)
        .await;
    let client = ResilientClient::with_policy(policy(&RecordingSleeper::new()).build().unwrap());
    let response = client.post(server.uri()).body("{}").send().await.unwrap();
    let log = response.attempt_log().expect("a log on every response");
    let key = log.idempotency_key().expect("a POST gets a key");
    let printed = log.to_string();
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 3, "{printed}");
    for (attempt, line) in log.attempts().iter().zip(&lines) {
        let start = format!(
            "attempt {} | request {} | key {} | ",
            attempt.number(),
            attempt.request_id(),
            key.redacted()
        );
        assert!(line.starts_with(&start), "{line}");
        assert!(!line.contains(key.as_str()), "the whole key in {line}");
        assert_one_duration_format(line);
    }
    assert!(
        lines[0].contains("| 503 Service Unavailable |"),
        "{printed}"
    );
    assert!(lines[0].contains(" | then ") && lines[0].ends_with("(backoff)"));
    assert!(lines[2].contains("| 201 Created |"), "{printed}");
    assert!(
        !lines[2].contains("then"),
        "no pause after the last attempt"
    );
}

/// A client on rustls trusting `roots` besides the platform's (reqwest picks
/// native-tls when both backends are compiled in, as with `--all-features`).
fn client_trusting(roots: Vec<reqwest_resilience::reqwest::Certificate>) -> ResilientClient {
    let policy = policy(&RecordingSleeper::new()).build().unwrap();
    // The remedy the message gives, through the re-exported reqwest.
    let builder = reqwest_resilience::reqwest::Client::builder().tls_certs_merge(roots);
    #[cfg(feature = "native-tls")]
    let builder = builder.tls_backend_rustls();
    ResilientClient::from_builder(builder, policy).unwrap()
}

#[tokio::test]
async fn an_untrusted_certificate_names_the_host_and_the_remedy_and_the_remedy_works() {
    let server = TlsServer::start(self_signed(&["127.0.0.1"]), &[]).await;
    let error = client_trusting(Vec::new())
        .get(server.url("127.0.0.1", "/"))
        .send()
        .await
        .expect_err("nobody trusts a self-signed certificate");
    assert_eq!(
        error.transport_failure(),
        Some(TransportFailure::UntrustedCertificate)
    );
    let text = error.to_string();
    assert!(
        text.starts_with("not retried after 1 attempt: a retry would fail the same way"),
        "{text}"
    );
    assert!(
        text.contains("last: the certificate of 127.0.0.1 is not signed by a trusted root"),
        "{text}"
    );
    assert!(text.contains("tls_certs_merge"), "{text}");
    assert!(text.contains("ResilientClient::from_builder"), "{text}");

    // Following it: trust the private CA that signed the server's certificate.
    let ca = TestCa::new("messages test CA");
    let trusted = TlsServer::start(ca.leaf(&["127.0.0.1"]), &[]).await;
    let root: reqwest_resilience::reqwest::Certificate = ca.root();
    let response = client_trusting(vec![root])
        .get(trusted.url("127.0.0.1", "/"))
        .send()
        .await
        .expect("the CA is trusted now");
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn a_certificate_for_another_host_and_an_expired_one_say_what_to_fix() {
    let ca = TestCa::new("messages test CA");
    let wrong_host = TlsServer::start(ca.leaf(&["payments.example"]), &[]).await;
    let error = client_trusting(vec![ca.root()])
        .get(wrong_host.url("127.0.0.1", "/"))
        .send()
        .await
        .expect_err("the certificate is for payments.example");
    let text = error.to_string();
    assert!(
        text.contains("last: the certificate of 127.0.0.1 is for another host name"),
        "{text}"
    );
    assert!(text.contains("subjectAltName"), "{text}");

    let expired = TlsServer::start(ca.expired_leaf(&["127.0.0.1"]), &[]).await;
    let error = client_trusting(vec![ca.root()])
        .get(expired.url("127.0.0.1", "/"))
        .send()
        .await
        .expect_err("the certificate expired in 2021");
    let text = error.to_string();
    assert!(
        text.contains("last: the certificate of 127.0.0.1 has expired"),
        "{text}"
    );
    assert!(text.contains("renewed"), "{text}");
}

/// A body over `whole_body_limit` is named with the limit and its size — announced
/// (Content-Length) or streamed (what had arrived) — and the two ways out.
#[tokio::test]
async fn a_body_over_the_whole_body_limit_names_the_limit_and_the_size() {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![b'x'; 5000]))
        .mount(&server)
        .await;
    let client = ResilientClient::with_policy(policy(&RecordingSleeper::new()).build().unwrap());

    let error = client
        .get(server.uri())
        .whole_body_limit(4096)
        .send()
        .await
        .expect_err("over the limit");
    let text = error.to_string();
    assert_eq!(
        error.transport_failure(),
        Some(TransportFailure::ResponseTooLarge)
    );
    assert!(text.contains("5000 bytes (its Content-Length)"), "{text}");
    assert!(text.contains("whole_body_limit of 4096 bytes"), "{text}");
    assert!(text.contains("raise .whole_body_limit(..)"), "{text}");
    assert!(!text.contains("not known to be safe"), "{text}");

    // Chunked, no Content-Length: the size is what had arrived when the limit passed.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/report", listener.local_addr().unwrap());
    let chunked = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut head = [0u8; 4096];
        let _ = socket.read(&mut head).await.unwrap();
        let mut answer = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..5 {
            answer.extend_from_slice(format!("3e8\r\n{}\r\n", "y".repeat(1000)).as_bytes());
        }
        answer.extend_from_slice(b"0\r\n\r\n");
        let _ = socket.write_all(&answer).await;
    });
    let error = client
        .get(&url)
        .whole_body_limit(2500)
        .send()
        .await
        .expect_err("over the limit");
    let text = error.to_string();
    assert!(text.contains("over "), "{text}");
    assert!(text.contains("bytes (what had arrived)"), "{text}");
    assert!(text.contains("whole_body_limit of 2500 bytes"), "{text}");
    chunked.await.unwrap();
}

/// A give-up after waiting out a 409 that asked to come back (the server was still
/// working) says to wait under the same key, not to stop retrying 409s; a bare 409
/// (a server that may answer 409 for completed keys) keeps that hint.
#[tokio::test]
async fn a_give_up_on_a_key_still_in_progress_suggests_waiting_under_the_same_key() {
    let server = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(409).insert_header("retry-after", "1"))
        .mount(&server)
        .await;
    let sleeper = RecordingSleeper::new();
    let client = ResilientClient::with_policy(policy(&sleeper).build().unwrap());

    let error = client
        .post(server.uri())
        .body("{}")
        .send()
        .await
        .expect_err("still in progress");
    let text = error.to_string();
    assert!(error.attempts() > 1, "the 409s were waited out: {text}");
    assert!(sleeper
        .delays()
        .iter()
        .all(|d| *d >= Duration::from_secs(1)));
    assert!(
        text.contains("the server was still working on this key"),
        "{text}"
    );
    assert!(text.contains("retry later under the same key"), "{text}");
    assert!(!text.contains("retry_conflict_when_keyed"), "{text}");

    let bare = MockServer::start().await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(409))
        .mount(&bare)
        .await;
    let text = client
        .post(bare.uri())
        .body("{}")
        .send()
        .await
        .expect_err("409 every time")
        .to_string();
    assert!(text.contains("did not say when to come back"), "{text}");
    assert!(
        text.contains("set retry_conflict_when_keyed(false)"),
        "{text}"
    );
}
