//! A small idempotent payments server on 127.0.0.1 for the journal tests.
//!
//! `POST` with an `Idempotency-Key`: a new key commits one payment (one *effect*)
//! and answers `201` with `Location: /payments/N`; the same key with the same body
//! replays the stored answer; the same key with another body gets `422`. A script
//! can make a request hold its answer after the commit (a response that never
//! arrives), answer 409 (still in progress) or 503. Every request is recorded.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the server does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Dedup as usual: commit a new key, replay a known one, 422 on a mismatch.
    Normal,
    /// Commit (if new), then hold the connection without answering for 30 s.
    CommitThenHold,
    /// Commit (if new), then close the connection without answering.
    CommitThenDrop,
    /// `409` without touching state.
    Conflict,
    /// `503` without touching state.
    Unavailable,
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub key: Option<String>,
    pub request_id: Option<String>,
    pub body: Vec<u8>,
    pub headers: Vec<(String, String)>,
    /// What the journal held for this key when the request arrived.
    pub journal_state: Option<String>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Script = dyn Fn(&str, usize) -> Act + Send + Sync;
type Probe = dyn Fn(String) -> Pin<Box<dyn Future<Output = Option<String>> + Send>> + Send + Sync;

#[derive(Default)]
struct State {
    /// key → (body, location)
    committed: HashMap<String, (Vec<u8>, String)>,
    seen: Vec<Seen>,
    effects: usize,
}

#[derive(Clone)]
pub struct Server {
    pub url: String,
    state: Arc<Mutex<State>>,
    effects: watch::Receiver<usize>,
}

impl Server {
    /// A server whose every request is `Normal`.
    pub async fn start() -> Server {
        Self::scripted(|_, _| Act::Normal, None).await
    }

    /// `script(key, requests with this key before)` decides each request;
    /// `probe(key)` (if any) reads the journal when a request arrives.
    pub async fn scripted(
        script: impl Fn(&str, usize) -> Act + Send + Sync + 'static,
        probe: Option<Arc<Probe>>,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        Self::on(listener, script, probe)
    }

    /// As [`scripted`](Self::scripted), on a listener of the caller's (a port
    /// that refused connections until now, say).
    pub fn on(
        listener: TcpListener,
        script: impl Fn(&str, usize) -> Act + Send + Sync + 'static,
        probe: Option<Arc<Probe>>,
    ) -> Server {
        let url = format!("http://{}/payments", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let (effects_tx, effects) = watch::channel(0);
        let script: Arc<Script> = Arc::new(script);
        let shared = (state.clone(), Arc::new(effects_tx));
        tokio::spawn(async move {
            // Bounded: the largest test makes a few thousand connections.
            for _ in 0..20_000 {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let (state, effects) = shared.clone();
                tokio::spawn(serve(socket, state, effects, script.clone(), probe.clone()));
            }
        });
        Server {
            url,
            state,
            effects,
        }
    }

    pub fn effects(&self) -> usize {
        self.state.lock().unwrap().effects
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    pub fn seen_with_key(&self, key: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.key.as_deref() == Some(key))
            .collect()
    }

    /// How many payments `key` made: 0 or 1 (the server deduplicates by key).
    pub fn effects_with_key(&self, key: &str) -> usize {
        usize::from(self.state.lock().unwrap().committed.contains_key(key))
    }

    /// Commits a payment under `key` with `body` as if an earlier request had.
    pub fn precommit(&self, key: &str, body: &[u8]) {
        let mut state = self.state.lock().unwrap();
        state.effects += 1;
        let location = format!("/payments/{}", state.effects);
        state
            .committed
            .insert(key.to_owned(), (body.to_vec(), location));
    }

    /// Waits (bounded) until at least `n` payments were committed.
    pub async fn wait_for_effects(&self, n: usize) {
        let mut effects = self.effects.clone();
        tokio::time::timeout(Duration::from_secs(30), effects.wait_for(|&e| e >= n))
            .await
            .expect("the server never committed")
            .expect("server gone");
    }
}

async fn serve(
    mut socket: TcpStream,
    state: Arc<Mutex<State>>,
    effects: Arc<watch::Sender<usize>>,
    script: Arc<Script>,
    probe: Option<Arc<Probe>>,
) {
    let Some((head, body)) = read_request(&mut socket).await else {
        return;
    };
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            Some((name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        })
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let key = find("idempotency-key");
    let journal_state = match (&probe, &key) {
        (Some(probe), Some(key)) => probe(key.clone()).await,
        _ => None,
    };
    let seen = Seen {
        key: key.clone(),
        request_id: find("x-request-id"),
        body: body.clone(),
        headers: headers.clone(),
        journal_state,
    };
    let (act, reply) = {
        let mut state = state.lock().unwrap();
        let before = key.as_deref().map_or(0, |k| {
            state
                .seen
                .iter()
                .filter(|s| s.key.as_deref() == Some(k))
                .count()
        });
        state.seen.push(seen);
        let act = script(key.as_deref().unwrap_or(""), before);
        let reply = match (act, key) {
            (Act::Conflict, _) => ("409 Conflict", String::new()),
            (Act::Unavailable, _) => ("503 Service Unavailable", String::new()),
            (_, None) => ("400 Bad Request", String::new()),
            (_, Some(key)) => decide(&mut state, &effects, key, body),
        };
        (act, reply)
    };
    match act {
        Act::CommitThenHold => {
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        Act::CommitThenDrop => drop(socket),
        _ => {
            let (status, location) = reply;
            let location = if location.is_empty() {
                String::new()
            } else {
                format!("location: {location}\r\n")
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n{location}\r\n"
            );
            let _ = socket.write_all(response.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    }
}

fn decide(
    state: &mut State,
    effects: &watch::Sender<usize>,
    key: String,
    body: Vec<u8>,
) -> (&'static str, String) {
    if let Some((stored, location)) = state.committed.get(&key) {
        return if *stored == body {
            ("201 Created", location.clone())
        } else {
            ("422 Unprocessable Entity", String::new())
        };
    }
    state.effects += 1;
    let location = format!("/payments/{}", state.effects);
    state.committed.insert(key, (body, location.clone()));
    effects.send_replace(state.effects);
    ("201 Created", location)
}

/// Reads one request head and its Content-Length body (bounded in size and time).
async fn read_request(socket: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let read = async {
        let mut buffer = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
                let length = head
                    .lines()
                    .find_map(|line| {
                        let (name, value) = line.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                while buffer.len() < end + 4 + length {
                    let n = socket.read(&mut chunk).await.ok()?;
                    if n == 0 {
                        return None;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                }
                return Some((head, buffer[end + 4..end + 4 + length].to_vec()));
            }
            if buffer.len() > 1 << 20 {
                return None;
            }
            let n = socket.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buffer.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .ok()?
}
