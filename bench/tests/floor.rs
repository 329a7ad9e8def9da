//! The floor reference row does what the crate's defaults do, where it shows: a
//! fresh UUID v4 `x-request-id` on every request, one budget deposit per intent, a
//! record with the attempt's duration and classification in the response, and no
//! retry of its own.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest_resilience_bench::floor::defaults::{self, AttemptRecord};
use reqwest_resilience_bench::floor::deposits::DepositWindow;
use reqwest_resilience_bench::peers::{self, Client, Peer, Settings};

const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
const UNAVAILABLE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\n\r\nno";

/// The `x-request-id` values of `requests` GETs on one keep-alive connection, read by a
/// minimal HTTP/1.1 server on 127.0.0.1 that answers each with 200.
fn request_ids_seen(requests: usize) -> (String, std::thread::JoinHandle<Vec<String>>) {
    answering(requests, OK)
}

/// As [`request_ids_seen`], answering each request with `response`. After the
/// `requests`-th, the server waits briefly for one more: any that comes is counted
/// too, so a test can tell that nothing was retried.
fn answering(
    requests: usize,
    response: &'static [u8],
) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}/ok", listener.local_addr().expect("address"));
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        // Bounded in time: a client that stops sending fails the test, never hangs it.
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .expect("read timeout");
        let mut ids = Vec::new();
        let mut pending = Vec::new();
        while ids.len() <= requests {
            if ids.len() == requests {
                stream
                    .set_read_timeout(Some(std::time::Duration::from_millis(200)))
                    .expect("read timeout");
            }
            let mut chunk = [0u8; 4096];
            let n = match stream.read(&mut chunk) {
                Ok(n) => n,
                // Nothing more came after the expected requests.
                Err(_) if ids.len() == requests => break,
                Err(error) => panic!("read: {error}"),
            };
            if n == 0 && ids.len() == requests {
                break;
            }
            assert!(n > 0, "connection closed early");
            pending.extend_from_slice(&chunk[..n]);
            while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&pending[..end]).to_lowercase();
                pending.drain(..end + 4);
                let id = head
                    .lines()
                    .find_map(|line| line.strip_prefix("x-request-id: "))
                    .unwrap_or_default()
                    .to_owned();
                ids.push(id);
                stream.write_all(response).expect("write");
            }
        }
        ids
    });
    (url, server)
}

#[tokio::test(flavor = "current_thread")]
async fn floor_sends_a_fresh_uuid_v4_request_id_per_request() {
    let (url, server) = request_ids_seen(2);
    let client = peers::build(Peer::Floor, Settings::COMPARABLE);
    for _ in 0..2 {
        assert_eq!(client.get(&url).await.status, Some(StatusCode::OK));
    }
    let ids = server.join().expect("server thread");
    assert_ne!(ids[0], ids[1], "a fresh id per request");
    for id in &ids {
        let uuid = uuid::Uuid::parse_str(id).expect("a hyphenated UUID");
        assert_eq!(uuid.get_version_num(), 4, "{id}");
        assert_eq!(id.len(), 36);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn floor_deposits_once_per_intent() {
    let (url, server) = request_ids_seen(3);
    let client = peers::build(Peer::Floor, Settings::COMPARABLE);
    for _ in 0..3 {
        assert_eq!(client.get(&url).await.status, Some(StatusCode::OK));
    }
    let Client::Floor { deposits, .. } = &*client else {
        panic!("the floor peer is a floor client");
    };
    assert_eq!(deposits.total(Instant::now()), 3);
    assert_eq!(server.join().expect("server thread").len(), 3);
}

/// One intent through the complete floor against a server answering `response`:
/// the record it hands back, and the requests the server saw.
async fn record_of_one_intent(response: &'static [u8]) -> (AttemptRecord, usize) {
    let (url, server) = answering(1, response);
    let client = peers::bare_reqwest();
    let deposits = DepositWindow::new(Instant::now());
    let before = Instant::now();
    let response = defaults::send(&client, &deposits, &url)
        .await
        .expect("a response");
    let took = before.elapsed();
    let record = *response
        .extensions()
        .get::<AttemptRecord>()
        .expect("the attempt record in the response's extensions");
    assert!(record.elapsed > Duration::ZERO && record.elapsed <= took);
    assert_eq!(record.attempts, 1);
    drop(response);
    (record, server.join().expect("server thread").len())
}

#[tokio::test(flavor = "current_thread")]
async fn floor_classifies_a_success_as_final() {
    let (record, requests) = record_of_one_intent(OK).await;
    assert!(!record.retry_worthy);
    assert_eq!(requests, 1);
}

#[tokio::test(flavor = "current_thread")]
async fn floor_classifies_a_503_as_worth_a_retry_and_makes_none() {
    let (record, requests) = record_of_one_intent(UNAVAILABLE).await;
    assert!(record.retry_worthy, "503 on a GET");
    assert_eq!(requests, 1, "the floor never retries");
}
