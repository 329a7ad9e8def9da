//! A tiny idempotent payments API on 127.0.0.1 with scripted faults, shared by the
//! examples (`#[path]`-included; not part of the library).
//!
//! `POST /payments` with an `Idempotency-Key`: a new key runs the next scripted
//! fault (or commits and answers `201`); a known key with the same body replays the
//! stored result; the same key with another body gets `422`. `POST /slow` answers
//! after 3 s.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with the next request that carries a new key.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// `503` with `Retry-After: 1`; nothing stored.
    Unavailable,
    /// Commit the payment, then close the connection without answering.
    CommitThenDrop,
}

pub struct PaymentsServer {
    pub url: String,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// key → (body, stored response)
    keys: HashMap<String, (String, String)>,
    script: VecDeque<Fault>,
    effects: u32,
}

impl PaymentsServer {
    pub async fn start(script: Vec<Fault>) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            ..State::default()
        }));
        let shared = state.clone();
        tokio::spawn(async move {
            // Bounded: an example makes a handful of connections.
            for _ in 0..100 {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(serve(socket, shared.clone()));
            }
        });
        Ok(Self { url, state })
    }

    /// Payments created so far.
    pub fn effects(&self) -> u32 {
        self.state.lock().unwrap().effects
    }
}

enum Action {
    Respond(&'static str, &'static str, String),
    CommitThenDrop,
}

async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>) {
    let Some((head, body)) = read_request(&mut socket).await else {
        return;
    };
    if head.split_whitespace().nth(1) == Some("/slow") {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let _ = respond(&mut socket, "200 OK", "", "{}").await;
        return;
    }
    let key = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("idempotency-key")
            .then(|| value.trim().to_owned())
    });
    let Some(key) = key else {
        let _ = respond(
            &mut socket,
            "400 Bad Request",
            "",
            r#"{"error":"key required"}"#,
        )
        .await;
        return;
    };
    let action = decide(&mut state.lock().unwrap(), key, body);
    match action {
        Action::Respond(status, extra, body) => {
            let _ = respond(&mut socket, status, extra, &body).await;
        }
        Action::CommitThenDrop => drop(socket), // committed; the response is lost
    }
}

fn decide(state: &mut State, key: String, body: String) -> Action {
    if let Some((stored_body, stored)) = state.keys.get(&key) {
        return if *stored_body == body {
            Action::Respond("201 Created", "", stored.clone())
        } else {
            Action::Respond(
                "422 Unprocessable Entity",
                "",
                r#"{"error":"key reused with a different payload"}"#.to_owned(),
            )
        };
    }
    if let Some(Fault::Unavailable) = state.script.front() {
        state.script.pop_front();
        return Action::Respond(
            "503 Service Unavailable",
            "retry-after: 1\r\n",
            r#"{"error":"overloaded"}"#.to_owned(),
        );
    }
    state.effects += 1;
    let stored = format!(r#"{{"payment_id":"pay_{}"}}"#, state.effects);
    state.keys.insert(key, (body, stored.clone()));
    match state.script.pop_front() {
        Some(Fault::CommitThenDrop) => Action::CommitThenDrop,
        _ => Action::Respond("201 Created", "", stored),
    }
}

async fn respond(
    socket: &mut TcpStream,
    status: &str,
    extra_headers: &str,
    body: &str,
) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra_headers}\r\n{body}",
        body.len()
    );
    socket.write_all(response.as_bytes()).await?;
    socket.shutdown().await
}

/// Reads one request head and its Content-Length body.
async fn read_request(socket: &mut TcpStream) -> Option<(String, String)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 || buffer.len() > 64 * 1024 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
        .min(1 << 20);
    while buffer.len() < end + 4 + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buffer[end + 4..end + 4 + length]).into_owned();
    Some((head, body))
}
