//! A proxy on 127.0.0.1 with a stable address in front of a server that may be
//! restarted on another port: it forwards every connection to the current
//! upstream, holding a new connection while the upstream refuses (as a load
//! balancer does while its backend restarts), and loses the answers of the
//! next connections it was told to (the crash test's `LoseAnswer`: the request
//! reaches the server, its answer starts, the client's side is closed).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// How long a connection is held while the upstream refuses: longer than a
/// restart takes, shorter than the client's attempt timeout (10 s).
const UPSTREAM_WAIT: Duration = Duration::from_secs(5);
const UPSTREAM_RETRY: Duration = Duration::from_millis(20);
/// How long a connection whose answer is to be lost waits for it.
const ANSWER_WAIT: Duration = Duration::from_secs(30);
/// Connections the proxy accepts before it stops: the loop is bounded.
const MAX_CONNECTIONS: u64 = 100_000;

pub struct Proxy {
    pub addr: SocketAddr,
    upstream: Arc<Mutex<SocketAddr>>,
    lose: Arc<AtomicU64>,
    pub answers_lost: Arc<AtomicU64>,
    accepting: JoinHandle<()>,
}

impl Proxy {
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let upstream = Arc::new(Mutex::new(upstream));
        let lose = Arc::new(AtomicU64::new(0));
        let answers_lost = Arc::new(AtomicU64::new(0));
        let (to, lose_next, lost) = (upstream.clone(), lose.clone(), answers_lost.clone());
        let accepting = tokio::spawn(async move {
            for _ in 0..MAX_CONNECTIONS {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                // One decision per connection, in accept order.
                let lose_answer = lose_next
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                tokio::spawn(serve(client, to.clone(), lose_answer, lost.clone()));
            }
        });
        Proxy {
            addr,
            upstream,
            lose,
            answers_lost,
            accepting,
        }
    }

    /// Where new connections go: the restarted server's address.
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap() = upstream;
    }

    /// The answers of the next `n` connections are lost.
    pub fn lose_next_answers(&self, n: u64) {
        self.lose.store(n, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

async fn serve(
    mut client: TcpStream,
    upstream: Arc<Mutex<SocketAddr>>,
    lose_answer: bool,
    lost: Arc<AtomicU64>,
) {
    let Some(mut server) = connect(&upstream).await else {
        return; // the client sees its connection closed, as by a dead server
    };
    if !lose_answer {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        return;
    }
    if request_answered(&mut client, &mut server).await {
        lost.fetch_add(1, Ordering::SeqCst);
        let _ = client.shutdown().await;
    }
}

/// The current upstream, tried again while it refuses, for a bounded time.
async fn connect(upstream: &Mutex<SocketAddr>) -> Option<TcpStream> {
    let tries = UPSTREAM_WAIT.as_millis() / UPSTREAM_RETRY.as_millis();
    for _ in 0..tries {
        let to = *upstream.lock().unwrap();
        if let Ok(server) = TcpStream::connect(to).await {
            return Some(server);
        }
        tokio::time::sleep(UPSTREAM_RETRY).await;
    }
    None
}

/// Forwards the client's bytes until the server's answer starts (true), or
/// either side ends or the wait runs out (false). The answer is not forwarded.
async fn request_answered(client: &mut TcpStream, server: &mut TcpStream) -> bool {
    let mut request = vec![0u8; 16 * 1024];
    let mut answer = [0u8; 1];
    let relay = async {
        loop {
            tokio::select! {
                read = server.read(&mut answer) => return matches!(read, Ok(1)),
                read = client.read(&mut request) => match read {
                    Ok(n) if n > 0 => {
                        if server.write_all(&request[..n]).await.is_err() {
                            return false;
                        }
                    }
                    _ => return false,
                },
            }
        }
    };
    tokio::time::timeout(ANSWER_WAIT, relay)
        .await
        .unwrap_or(false)
}
