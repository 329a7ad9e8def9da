//! The payment API P12's relay sends to: an HTTP/1.1 server on 127.0.0.1 (its
//! own thread and runtime) that stamps, per `Idempotency-Key`, the time the
//! first byte of the first request with that key arrived, and answers `200`.
//! It reads requests itself (the head with `httparse`) so that the stamp is the
//! read that brought the request's first bytes, not the moment a framework
//! hands it over.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, Notify};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
/// The longest request head read (the relay's are a few hundred bytes).
const MAX_HEAD: usize = 16 * 1024;

/// What the server saw.
#[derive(Default)]
struct Arrivals {
    first: Mutex<HashMap<String, Instant>>,
    sends: AtomicUsize,
    arrived: Notify,
}

impl Arrivals {
    fn record(&self, key: String, at: Instant) {
        self.sends.fetch_add(1, Ordering::Relaxed);
        self.first
            .lock()
            .expect("arrivals lock")
            .entry(key)
            .or_insert(at);
        self.arrived.notify_waiters();
    }
}

/// A running server; stops when dropped.
pub struct FirstByteServer {
    addr: SocketAddr,
    arrivals: Arc<Arrivals>,
    _stop: oneshot::Sender<()>,
}

impl FirstByteServer {
    pub fn start() -> FirstByteServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("P12 server bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let arrivals = Arc::new(Arrivals::default());
        let (stop, stopped) = oneshot::channel::<()>();
        let served = arrivals.clone();
        std::thread::Builder::new()
            .name("p12-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("P12 server runtime");
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                    let accept = async {
                        loop {
                            let Ok((stream, _)) = listener.accept().await else {
                                continue;
                            };
                            let _ = stream.set_nodelay(true);
                            tokio::spawn(connection(stream, served.clone()));
                        }
                    };
                    tokio::select! {
                        () = accept => {}
                        _ = stopped => {}
                    }
                });
            })
            .expect("P12 server thread");
        FirstByteServer {
            addr,
            arrivals,
            _stop: stop,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// When the first byte of `key`'s first request arrived, waiting at most
    /// `limit` for it.
    pub async fn first_byte(&self, key: &str, limit: Duration) -> Option<Instant> {
        let give_up = tokio::time::Instant::now() + limit;
        loop {
            // Registered before the look, so an arrival in between still wakes us.
            let arrived = self.arrivals.arrived.notified();
            if let Some(at) = self.arrivals.first.lock().expect("lock").get(key) {
                return Some(*at);
            }
            if tokio::time::timeout_at(give_up, arrived).await.is_err() {
                return None;
            }
        }
    }

    /// Requests received, and distinct keys among them.
    pub fn sends_and_keys(&self) -> (usize, usize) {
        let keys = self.arrivals.first.lock().expect("lock").len();
        (self.arrivals.sends.load(Ordering::Relaxed), keys)
    }
}

/// Serves one keep-alive connection: each request's stamp is the read that
/// brought its first bytes.
async fn connection(mut stream: tokio::net::TcpStream, arrivals: Arc<Arrivals>) {
    let mut buffer: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut first_byte_at: Option<Instant> = None;
    loop {
        match parse_head(&buffer) {
            Err(problem) => {
                // The bench then misses this request's key, and says so.
                eprintln!("P12 server: {problem}; connection closed");
                return;
            }
            Ok(Some(head)) if buffer.len() >= head.length + head.body => {
                let at = first_byte_at.expect("a request has a first read");
                arrivals.record(head.key, at);
                buffer.drain(..head.length + head.body);
                // Bytes of a pipelined next request arrived with this read.
                if buffer.is_empty() {
                    first_byte_at = None;
                }
                if stream.write_all(RESPONSE).await.is_err() {
                    return;
                }
                continue;
            }
            Ok(_) => {}
        }
        let read = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        first_byte_at.get_or_insert_with(Instant::now);
        buffer.extend_from_slice(&chunk[..read]);
    }
}

/// A request head read from the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    /// Bytes of the head, blank line included.
    length: usize,
    /// `content-length`.
    body: usize,
    key: String,
}

/// The head at the start of `buffer`, `None` while incomplete; an error for a
/// request this server cannot frame or attribute.
fn parse_head(buffer: &[u8]) -> Result<Option<Head>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut request = httparse::Request::new(&mut headers);
    let length = match request.parse(buffer) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) if buffer.len() > MAX_HEAD => {
            return Err(format!("a request head over {MAX_HEAD} bytes"))
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(error) => return Err(format!("an unreadable request head: {error}")),
    };
    let (mut body, mut key) = (0, None);
    for header in request.headers.iter() {
        let value = std::str::from_utf8(header.value).map_err(|_| "a header not in UTF-8")?;
        if header.name.eq_ignore_ascii_case("content-length") {
            body = value
                .trim()
                .parse()
                .map_err(|_| format!("content-length {value:?}"))?;
        } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(format!(
                "transfer-encoding {value:?} (bodies are read by length)"
            ));
        } else if header.name.eq_ignore_ascii_case("idempotency-key") {
            key = Some(value.to_owned());
        }
    }
    let key = key.ok_or("a request without an Idempotency-Key")?;
    Ok(Some(Head { length, body, key }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_head_length_the_body_length_and_the_key() {
        let head = "POST /pay HTTP/1.1\r\nhost: x\r\nIdempotency-Key: k-1\r\n\
                    Content-Length: 12\r\n\r\n";
        let buffer = format!("{head}{{\"amount\":5}}");
        assert_eq!(
            parse_head(buffer.as_bytes()),
            Ok(Some(Head {
                length: head.len(),
                body: 12,
                key: "k-1".into()
            }))
        );
    }

    #[test]
    fn waits_for_the_rest_of_a_head() {
        assert_eq!(parse_head(b""), Ok(None));
        assert_eq!(
            parse_head(b"POST /pay HTTP/1.1\r\nidempotency-key: k"),
            Ok(None)
        );
    }

    #[test]
    fn refuses_what_it_cannot_frame_or_attribute() {
        for request in [
            "POST /pay HTTP/1.1\r\ncontent-length: 2\r\n\r\nok",
            "POST /pay HTTP/1.1\r\nidempotency-key: k\r\ntransfer-encoding: chunked\r\n\r\n",
            "POST /pay HTTP/1.1\r\nidempotency-key: k\r\ncontent-length: two\r\n\r\n",
            "NOT HTTP\r\n\r\n",
        ] {
            assert!(parse_head(request.as_bytes()).is_err(), "{request:?} read");
        }
        assert!(parse_head(&vec![b'a'; MAX_HEAD + 1]).is_err());
    }
}
