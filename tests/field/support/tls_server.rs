//! An HTTPS server (rustls + hyper HTTP/1.1) on 127.0.0.1 that answers a script of
//! statuses and records what it received.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use super::certs::ServerIdentity;

/// What one request carried.
#[derive(Debug, Clone)]
pub struct Received {
    pub idempotency_key: Option<String>,
    pub request_id: Option<String>,
    pub body: Vec<u8>,
}

pub struct TlsServer {
    pub addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    received: Arc<Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl TlsServer {
    /// Serves TLS 1.2 and 1.3 with `identity`; answers `statuses` in turn, then 200.
    pub async fn start(identity: ServerIdentity, statuses: &[u16]) -> Self {
        Self::start_with_versions(identity, statuses, rustls::DEFAULT_VERSIONS).await
    }

    /// As [`TlsServer::start`], with only these TLS versions.
    pub async fn start_with_versions(
        identity: ServerIdentity,
        statuses: &[u16],
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> Self {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(identity.chain, identity.key)
            .expect("server certificate");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::from(statuses.to_vec())));
        let task = tokio::spawn({
            let (connections, received) = (connections.clone(), received.clone());
            async move {
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        return;
                    };
                    connections.fetch_add(1, Ordering::SeqCst);
                    let (acceptor, received, script) =
                        (acceptor.clone(), received.clone(), script.clone());
                    tokio::spawn(async move {
                        // A refused handshake is the client's to report.
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let service = service_fn(move |request: Request<Incoming>| {
                            let (received, script) = (received.clone(), script.clone());
                            async move {
                                let header = |name: &str| {
                                    request
                                        .headers()
                                        .get(name)
                                        .and_then(|v| v.to_str().ok())
                                        .map(str::to_owned)
                                };
                                let idempotency_key = header("idempotency-key");
                                let request_id = header("x-request-id");
                                let body = request
                                    .into_body()
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes().to_vec())
                                    .unwrap_or_default();
                                received.lock().unwrap().push(Received {
                                    idempotency_key,
                                    request_id,
                                    body,
                                });
                                let status = script.lock().unwrap().pop_front().unwrap_or(200);
                                let mut response =
                                    Response::new(Full::new(Bytes::from_static(b"ok")));
                                *response.status_mut() = status.try_into().unwrap();
                                Ok::<_, Infallible>(response)
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tls), service)
                            .await;
                    });
                }
            }
        });
        Self {
            addr,
            connections,
            received,
            task,
        }
    }

    /// `https://{host}:{port}{path}`.
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.addr.port())
    }

    /// TCP connections accepted (one per TLS handshake tried).
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
