//! A claim whose answer the database never delivered: the upsert committed, then
//! the connection died before the store read "INSERT 0 1". The layer runs nothing
//! and answers 503; the key must not then stay "in progress" for the whole lease,
//! with no handler running, before a retry can pay.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tower_idempotency::{IdempotencyLayer, PostgresStore};

use crate::support::{account, send, serve, Effects, Req};
use crate::throwaway_pg::Cluster;

/// A TCP proxy in front of PostgreSQL that, once armed, closes the connection
/// that carries the next `INSERT 0 1` completion instead of passing it on.
struct CuttingProxy {
    addr: SocketAddr,
    armed: Arc<AtomicBool>,
}

impl CuttingProxy {
    async fn start(database: SocketAddr) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let armed = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&armed);
        tokio::spawn(async move {
            // Bounded: the store's pool opens a handful of connections.
            for _ in 0..1000 {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let Ok(server) = TcpStream::connect(database).await else {
                    return;
                };
                tokio::spawn(relay(client, server, Arc::clone(&flag)));
            }
        });
        CuttingProxy { addr, armed }
    }

    fn cut_next_insert(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }
}

async fn relay(client: TcpStream, server: TcpStream, armed: Arc<AtomicBool>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let upstream = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    });
    let mut buffer = vec![0u8; 64 * 1024];
    while let Ok(n) = server_read.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let chunk = &buffer[..n];
        let completes_an_insert = chunk.windows(10).any(|w| w == b"INSERT 0 1");
        if completes_an_insert && armed.swap(false, Ordering::SeqCst) {
            // The database committed and answered; the store never hears it.
            break;
        }
        if client_write.write_all(chunk).await.is_err() {
            break;
        }
    }
    upstream.abort();
}

fn port_of(conninfo: &str) -> u16 {
    conninfo
        .split_whitespace()
        .find_map(|part| part.strip_prefix("port="))
        .expect("a port in the conninfo")
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_answer_was_lost_does_not_hold_the_key_for_its_lease() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let conninfo = cluster.database("lost_claim").await;
    let database = SocketAddr::from(([127, 0, 0, 1], port_of(&conninfo)));
    let proxy = CuttingProxy::start(database).await;
    let through_proxy = conninfo.replace(
        &format!("port={}", database.port()),
        &format!("port={}", proxy.addr.port()),
    );
    let store = PostgresStore::connect(&through_proxy).await.unwrap();
    // A lease far longer than the test: only a release frees the key in time.
    let layer = IdempotencyLayer::builder(store)
        .principal(account)
        .lease(Duration::from_secs(120))
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(layer, effects.clone()).await;
    let payment = Req::post("/payments", "lost-claim-answer", "a");

    proxy.cut_next_insert();
    let first = send(addr, &payment).await;
    assert_eq!(
        first.status,
        503,
        "the claim's answer was lost: {}",
        first.text()
    );
    assert_eq!(effects.count(), 0, "nothing ran for the lost claim");

    // The client retries as the 503 asks; the key is free again within seconds.
    let started = Instant::now();
    let mut statuses = Vec::new();
    while started.elapsed() < Duration::from_secs(10) {
        let answer = send(addr, &payment).await;
        statuses.push(answer.status);
        if answer.status == 201 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        statuses.last(),
        Some(&201),
        "the retry paid within 10 s of the lost claim, not after the lease: {statuses:?}"
    );
    assert_eq!(effects.count(), 1, "paid once");
    let replay = send(addr, &payment).await;
    assert_eq!(replay.status, 201);
    assert!(replay.replayed(), "a further retry replays");
    assert_eq!(effects.count(), 1, "still paid once");
}
