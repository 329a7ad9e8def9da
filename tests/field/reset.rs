//! A connection reset after the request was written: the server may have acted, so
//! only a keyed or idempotent request goes again, and the error says what happened.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use reqwest_resilience::{RecordingSleeper, ResilientClient, TransportFailure};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::support::{failures, policy};

/// Reads each request's head, then resets the connection (SO_LINGER 0).
struct ResettingServer {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl ResettingServer {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let heads = heads.clone();
            async move {
                while let Ok((mut tcp, _)) = listener.accept().await {
                    let mut head = Vec::new();
                    let mut buffer = [0u8; 1024];
                    // Bounded: a request head is far below 64 KiB.
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
                        match tcp.read(&mut buffer).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => head.extend_from_slice(&buffer[..n]),
                        }
                    }
                    heads
                        .lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&head).to_lowercase());
                    tcp.set_zero_linger().unwrap();
                    drop(tcp); // RST, not FIN
                }
            }
        });
        Self { addr, heads, task }
    }

    fn keys(&self) -> Vec<Option<String>> {
        let heads = self.heads.lock().unwrap();
        heads
            .iter()
            .map(|head| {
                head.lines()
                    .find_map(|line| line.strip_prefix("idempotency-key: "))
                    .map(str::to_owned)
            })
            .collect()
    }
}

impl Drop for ResettingServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[tokio::test]
async fn a_reset_after_writing_is_retried_only_with_a_key_and_is_named() {
    let server = ResettingServer::start().await;
    let sleeper = RecordingSleeper::new();
    let client = ResilientClient::with_policy(policy(&sleeper).build().unwrap());
    let url = format!("http://{}/payments", server.addr);

    let keyed = client.post(&url).body("{}").send().await.unwrap_err();
    assert!(keyed.is_attempts_exhausted(), "{keyed}");
    assert_eq!(failures(&keyed), [TransportFailure::ConnectionLost; 3]);
    assert!(keyed.is_outcome_unknown());
    let text = keyed.to_string();
    assert!(
        text.contains("last: connection lost before a full response"),
        "{text}"
    );
    assert!(text.contains("connection reset by peer"), "{text}");
    let key = keyed.idempotency_key().unwrap().as_str().to_owned();
    assert!(!text.contains(&key), "{text}");
    let keys = server.keys();
    assert_eq!(
        keys,
        vec![Some(key.to_lowercase()); 3],
        "one key, three deliveries"
    );

    let unkeyed = client
        .post(&url)
        .without_idempotency_key()
        .body("{}")
        .send()
        .await
        .unwrap_err();
    assert_eq!(failures(&unkeyed), [TransportFailure::ConnectionLost]);
    assert!(unkeyed.is_not_retryable() && unkeyed.is_outcome_unknown());
    assert_eq!(server.keys().len(), 4, "the unkeyed POST was sent once");
}
