//! A raw HTTP/1.1 server over TCP on 127.0.0.1 that answers with bytes written by
//! the test, for responses no well-behaved server library would produce (invalid
//! UTF-8 or absurd values in `Retry-After`, repeated fields). One request per
//! connection (`connection: close`); every request is recorded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::raw_http::read_request;

/// Most connections one raw server accepts (bounds the accept loop).
const MAX_CONNECTIONS: usize = 20_000;

/// The answer once the script is used up.
pub const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";

pub struct RawServer {
    pub url: String,
    script: Arc<Mutex<VecDeque<Vec<u8>>>>,
    requests: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl RawServer {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("local address");
        let script: Arc<Mutex<VecDeque<Vec<u8>>>> = Arc::default();
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let (next, seen) = (script.clone(), requests.clone());
        let task = tokio::spawn(async move {
            for _ in 0..MAX_CONNECTIONS {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                // Sequential on purpose: the tests send one request at a time, and
                // the script pairs each answer with a request in order.
                let Some(request) = read_request(&mut socket).await else {
                    continue;
                };
                seen.lock().unwrap().push(request);
                let answer = next.lock().unwrap().pop_front();
                let _ = socket.write_all(answer.as_deref().unwrap_or(OK)).await;
                let _ = socket.shutdown().await;
            }
        });
        Self {
            url: format!("http://{address}"),
            script,
            requests,
            task,
        }
    }

    /// Answers for the next requests, in order; then `200 ok`.
    pub fn script(&self, answers: impl IntoIterator<Item = Vec<u8>>) {
        self.script.lock().unwrap().extend(answers);
    }

    /// Every request received (head and body, lossy UTF-8).
    pub fn received(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// Forgets received requests and unused answers.
    pub fn reset(&self) {
        self.requests.lock().unwrap().clear();
        self.script.lock().unwrap().clear();
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A `503` whose `Retry-After` fields carry exactly these bytes, one field each.
pub fn unavailable_with_retry_after(values: &[&[u8]]) -> Vec<u8> {
    let mut answer = b"HTTP/1.1 503 Service Unavailable\r\n".to_vec();
    for value in values {
        answer.extend_from_slice(b"Retry-After: ");
        answer.extend_from_slice(value);
        answer.extend_from_slice(b"\r\n");
    }
    answer.extend_from_slice(b"content-length: 0\r\nconnection: close\r\n\r\n");
    answer
}
