//! A TCP proxy on 127.0.0.1 in front of PostgreSQL that, when armed, cuts one
//! connection at its next `COMMIT`: after forwarding it (the server commits, the
//! answer is lost) or instead of forwarding it (the server never sees it).

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A simple-protocol `Query` message holding exactly `COMMIT` (as tokio-postgres
/// sends `batch_execute("COMMIT")`): 'Q', length 11, "COMMIT\0".
const COMMIT: &[u8] = b"Q\0\0\0\x0bCOMMIT\0";

/// Where the armed proxy cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Forward the `COMMIT`, then close both sides before the answer.
    AfterCommit,
    /// Close both sides instead of forwarding the `COMMIT`.
    BeforeCommit,
}

#[derive(Clone)]
pub struct Proxy {
    pub port: u16,
    armed: Arc<Mutex<Option<Cut>>>,
}

impl Proxy {
    pub async fn start(upstream_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let armed = Arc::new(Mutex::new(None));
        let shared = armed.clone();
        tokio::spawn(async move {
            // Bounded: a full run makes a few hundred connections.
            for _ in 0..10_000 {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream_port)).await else {
                    continue;
                };
                tokio::spawn(relay(client, server, shared.clone()));
            }
        });
        Proxy { port, armed }
    }

    /// Cuts the next connection that sends `COMMIT`, once.
    pub fn arm(&self, cut: Cut) {
        *self.armed.lock().unwrap() = Some(cut);
    }

    /// True once the armed cut happened.
    pub fn fired(&self) -> bool {
        self.armed.lock().unwrap().is_none()
    }

    pub fn conninfo(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }
}

async fn relay(mut client: TcpStream, mut server: TcpStream, armed: Arc<Mutex<Option<Cut>>>) {
    let (mut from_client, mut to_client) = client.split();
    let (mut from_server, mut to_server) = server.split();
    let upward = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = from_client.read(&mut buf).await?;
            if n == 0 {
                return Ok::<(), std::io::Error>(());
            }
            let chunk = &buf[..n];
            let at = chunk.windows(COMMIT.len()).position(|w| w == COMMIT);
            let cut = at.and_then(|_| armed.lock().unwrap().take());
            match (cut, at) {
                (Some(Cut::AfterCommit), _) => {
                    to_server.write_all(chunk).await?;
                    to_server.flush().await?;
                    return Ok(());
                }
                (Some(Cut::BeforeCommit), Some(at)) => {
                    to_server.write_all(&chunk[..at]).await?;
                    return Ok(());
                }
                _ => to_server.write_all(chunk).await?,
            }
        }
    };
    let downward = tokio::io::copy(&mut from_server, &mut to_client);
    // Either side ending (or the cut) drops both sockets.
    tokio::select! {
        _ = upward => {}
        _ = downward => {}
    }
}
