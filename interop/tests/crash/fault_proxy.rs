//! An HTTP fault proxy on 127.0.0.1: every connection (the client keeps no idle
//! connections, so every attempt) is, by a seeded choice, forwarded, or has its
//! answer lost after the server sent it, or is reset.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long a faulted connection waits for the server's first answer byte.
const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// Connections the proxy accepts before it stops: the loop is bounded.
const MAX_CONNECTIONS: u64 = 1_000_000;

/// What happens to one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Both ways, untouched.
    Forward,
    /// The request reaches the server; once its answer starts, the client's side
    /// is closed (FIN) without it: the server committed, the client never knows.
    LoseAnswer,
    /// As `LoseAnswer`, but the client's side is reset (RST).
    ResetAfterAnswer,
    /// The client's first bytes arrive; its side is reset before anything is
    /// forwarded: the server never sees the request.
    ResetBeforeForward,
}

impl Fault {
    /// The seeded draw: a little over half forwarded, the rest split evenly.
    fn draw(rng: &mut StdRng) -> Fault {
        match rng.random_range(0..20) {
            0..=10 => Fault::Forward,
            11..=13 => Fault::LoseAnswer,
            14..=16 => Fault::ResetAfterAnswer,
            _ => Fault::ResetBeforeForward,
        }
    }
}

/// Counts per fault, for the run's report.
#[derive(Debug, Default)]
pub struct FaultCounts {
    pub forwarded: AtomicU64,
    pub answers_lost: AtomicU64,
    pub reset_after_answer: AtomicU64,
    pub reset_before_forward: AtomicU64,
    /// Faulted connections whose server died (or hung) before it answered.
    pub cut_by_a_crash: AtomicU64,
    /// Connections made while the server was down.
    pub refused: AtomicU64,
}

pub struct FaultProxy {
    pub addr: SocketAddr,
    upstream: Arc<Mutex<SocketAddr>>,
    faults_on: Arc<AtomicBool>,
    pub counts: Arc<FaultCounts>,
}

impl FaultProxy {
    pub async fn start(upstream: SocketAddr, seed: u64) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().unwrap();
        let upstream = Arc::new(Mutex::new(upstream));
        let faults_on = Arc::new(AtomicBool::new(true));
        let counts = Arc::new(FaultCounts::default());
        let (shared_upstream, shared_on, shared_counts) =
            (upstream.clone(), faults_on.clone(), counts.clone());
        tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed);
            for _ in 0..MAX_CONNECTIONS {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let fault = if shared_on.load(Ordering::SeqCst) {
                    Fault::draw(&mut rng)
                } else {
                    Fault::Forward
                };
                let to = *shared_upstream.lock().unwrap();
                tokio::spawn(serve(client, to, fault, shared_counts.clone()));
            }
        });
        FaultProxy {
            addr,
            upstream,
            faults_on,
            counts,
        }
    }

    /// Where new connections go: the restarted server's address.
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self.upstream.lock().unwrap() = upstream;
    }

    /// Faults on (the default) or every connection forwarded.
    pub fn set_faults(&self, on: bool) {
        self.faults_on.store(on, Ordering::SeqCst);
    }
}

async fn serve(mut client: TcpStream, to: SocketAddr, fault: Fault, counts: Arc<FaultCounts>) {
    if fault == Fault::ResetBeforeForward {
        let mut first = [0u8; 1];
        let _ = client.read(&mut first).await;
        counts.reset_before_forward.fetch_add(1, Ordering::SeqCst);
        reset(client);
        return;
    }
    // A dead server: the client's connection is closed, as a crash closes it.
    let Ok(mut server) = TcpStream::connect(to).await else {
        counts.refused.fetch_add(1, Ordering::SeqCst);
        return;
    };
    if fault == Fault::Forward {
        counts.forwarded.fetch_add(1, Ordering::SeqCst);
        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        return;
    }
    if !request_answered(&mut client, &mut server).await {
        // The server died before answering: the client sees the crash as it is.
        counts.cut_by_a_crash.fetch_add(1, Ordering::SeqCst);
        return;
    }
    if fault == Fault::ResetAfterAnswer {
        counts.reset_after_answer.fetch_add(1, Ordering::SeqCst);
        reset(client);
    } else {
        counts.answers_lost.fetch_add(1, Ordering::SeqCst);
        let _ = client.shutdown().await;
    }
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

/// Closes with RST instead of FIN.
fn reset(stream: TcpStream) {
    let _ = stream.set_zero_linger();
    drop(stream);
}

impl FaultCounts {
    /// One line for the run's report.
    pub fn summary(&self) -> String {
        format!(
            "forwarded {}, answers lost {}, reset after the answer {}, reset before forwarding {}, \
             cut by a crash before the answer {}, server down {}",
            self.forwarded.load(Ordering::SeqCst),
            self.answers_lost.load(Ordering::SeqCst),
            self.reset_after_answer.load(Ordering::SeqCst),
            self.reset_before_forward.load(Ordering::SeqCst),
            self.cut_by_a_crash.load(Ordering::SeqCst),
            self.refused.load(Ordering::SeqCst),
        )
    }
}
