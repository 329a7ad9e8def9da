//! A minimal HTTP/2 server written frame by frame, for the one thing a full server
//! will not do on request: send a `GOAWAY` whose last-stream-id excludes a request
//! it has already received (h2's server always includes the streams it has seen).
//!
//! On its first connection it waits for the client's first HEADERS frame, answers
//! `GOAWAY(last_stream_id = 0, NO_ERROR)` and processes nothing. On later
//! connections it answers every complete request with `200` and records its body.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
/// HPACK: `:status: 200` is entry 8 of the static table.
const STATUS_200: u8 = 0x88;

pub struct GoAwayServer {
    pub addr: SocketAddr,
    /// Streams excluded by the GOAWAY (received, never processed).
    excluded: Arc<AtomicUsize>,
    effects: Arc<Mutex<Vec<Vec<u8>>>>,
    task: JoinHandle<()>,
}

impl GoAwayServer {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let excluded = Arc::new(AtomicUsize::new(0));
        let effects = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let (excluded, effects) = (excluded.clone(), effects.clone());
            async move {
                for connection in 0usize.. {
                    let Ok((tcp, _)) = listener.accept().await else {
                        return;
                    };
                    let (excluded, effects) = (excluded.clone(), effects.clone());
                    tokio::spawn(async move {
                        // Bounded: a confused client must not keep a task alive.
                        let serve = serve(tcp, connection == 0, excluded, effects);
                        let _ = tokio::time::timeout(Duration::from_secs(5), serve).await;
                    });
                }
            }
        });
        Self {
            addr,
            excluded,
            effects,
            task,
        }
    }

    pub fn excluded(&self) -> usize {
        self.excluded.load(Ordering::SeqCst)
    }

    pub fn effects(&self) -> Vec<Vec<u8>> {
        self.effects.lock().unwrap().clone()
    }
}

impl Drop for GoAwayServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut tcp: TcpStream,
    go_away: bool,
    excluded: Arc<AtomicUsize>,
    effects: Arc<Mutex<Vec<Vec<u8>>>>,
) -> std::io::Result<()> {
    let mut preface = [0u8; PREFACE.len()];
    tcp.read_exact(&mut preface).await?;
    assert_eq!(preface, PREFACE, "not an HTTP/2 client");
    write_frame(&mut tcp, SETTINGS, 0, 0, &[]).await?;
    let mut bodies: std::collections::HashMap<u32, Vec<u8>> = Default::default();
    loop {
        let mut head = [0u8; 9];
        if tcp.read_exact(&mut head).await.is_err() {
            return Ok(()); // the client closed
        }
        let length = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; length];
        tcp.read_exact(&mut payload).await?;
        match kind {
            SETTINGS if flags & ACK == 0 => write_frame(&mut tcp, SETTINGS, ACK, 0, &[]).await?,
            PING if flags & ACK == 0 => write_frame(&mut tcp, PING, ACK, 0, &payload).await?,
            HEADERS if go_away => {
                // The request is in flight and received; exclude it: last-stream-id 0.
                excluded.fetch_add(1, Ordering::SeqCst);
                let mut frame = 0u32.to_be_bytes().to_vec();
                frame.extend_from_slice(&0u32.to_be_bytes()); // NO_ERROR
                write_frame(&mut tcp, GOAWAY, 0, 0, &frame).await?;
            }
            HEADERS | DATA if !go_away => {
                let body = bodies.entry(stream).or_default();
                if kind == DATA {
                    body.extend_from_slice(&payload);
                }
                if flags & END_STREAM != 0 {
                    effects
                        .lock()
                        .unwrap()
                        .push(bodies.remove(&stream).unwrap_or_default());
                    let flags = END_STREAM | END_HEADERS;
                    write_frame(&mut tcp, HEADERS, flags, stream, &[STATUS_200]).await?;
                }
            }
            _ => {} // WINDOW_UPDATE, PRIORITY, acks, frames after the GOAWAY
        }
    }
}

async fn write_frame(
    tcp: &mut TcpStream,
    kind: u8,
    flags: u8,
    stream: u32,
    payload: &[u8],
) -> std::io::Result<()> {
    let length = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut frame = vec![length[1], length[2], length[3], kind, flags];
    frame.extend_from_slice(&stream.to_be_bytes());
    frame.extend_from_slice(payload);
    tcp.write_all(&frame).await
}
