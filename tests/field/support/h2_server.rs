//! An HTTP/2 (cleartext, prior knowledge) hyper server on 127.0.0.1 whose service
//! resets the first N streams with a given reason (`REFUSED_STREAM`: without any
//! effect) and records every request it did process.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub struct RefusingH2Server {
    pub addr: SocketAddr,
    streams: Arc<AtomicUsize>,
    effects: Arc<Mutex<Vec<Vec<u8>>>>,
    task: JoinHandle<()>,
}

impl RefusingH2Server {
    pub async fn start(refuse_first: usize, reason: h2::Reason) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let streams = Arc::new(AtomicUsize::new(0));
        let effects = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let (streams, effects) = (streams.clone(), effects.clone());
            async move {
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        return;
                    };
                    let (streams, effects) = (streams.clone(), effects.clone());
                    let service = service_fn(move |request: Request<Incoming>| {
                        let (streams, effects) = (streams.clone(), effects.clone());
                        async move {
                            if streams.fetch_add(1, Ordering::SeqCst) < refuse_first {
                                // hyper answers a service error that is an h2::Error
                                // with RST_STREAM carrying its reason.
                                return Err(h2::Error::from(reason));
                            }
                            let body = request.into_body().collect().await.unwrap().to_bytes();
                            effects.lock().unwrap().push(body.to_vec());
                            Ok(Response::new(Full::new(Bytes::from_static(b"created"))))
                        }
                    });
                    tokio::spawn(
                        hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(tcp), service),
                    );
                }
            }
        });
        Self {
            addr,
            streams,
            effects,
            task,
        }
    }

    /// Streams the service saw (refused or processed).
    pub fn streams(&self) -> usize {
        self.streams.load(Ordering::SeqCst)
    }

    /// The bodies of the requests that had an effect.
    pub fn effects(&self) -> Vec<Vec<u8>> {
        self.effects.lock().unwrap().clone()
    }
}

impl Drop for RefusingH2Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}
