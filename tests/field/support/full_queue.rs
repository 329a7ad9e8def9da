//! A listener whose accept queue is full: it never accepts, and its backlog is
//! filled, so the kernel drops further SYNs and a connect never completes.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpSocket, TcpStream};

pub struct FullQueue {
    pub addr: SocketAddr,
    _listener: tokio::net::TcpListener,
    _fillers: Vec<TcpStream>,
}

impl FullQueue {
    /// Fills the backlog (1) until a connect hangs; `None` if the kernel accepts
    /// every connect (then the scenario cannot be produced on this machine).
    pub async fn start() -> Option<Self> {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(1).unwrap();
        let addr = listener.local_addr().unwrap();
        let mut fillers = Vec::new();
        // Linux queues backlog + 1 connections; a few more cover other kernels.
        for _ in 0..16 {
            match tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => fillers.push(stream),
                Ok(Err(_)) => return None,
                Err(_) => {
                    return Some(Self {
                        addr,
                        _listener: listener,
                        _fillers: fillers,
                    })
                }
            }
        }
        None
    }
}
