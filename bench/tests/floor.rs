//! The floor reference row sends what the crate's defaults send: a fresh UUID v4
//! `x-request-id` on every request, and gets the body.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;

use reqwest::StatusCode;
use reqwest_resilience_bench::peers::{self, Peer, Settings};

/// The `x-request-id` values of `requests` GETs on one keep-alive connection, read by a
/// minimal HTTP/1.1 server on 127.0.0.1.
fn request_ids_seen(requests: usize) -> (String, std::thread::JoinHandle<Vec<String>>) {
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
        while ids.len() < requests {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).expect("read");
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
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                    .expect("write");
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
