//! The strong_payments server as a child process on 127.0.0.1: its address read
//! from its first line, killed with SIGKILL, restarted on the same database.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// This package's build of the server crate's strong_payments example.
const BINARY: &str = env!("CARGO_BIN_EXE_strong_payments");

pub struct Server {
    child: Child,
    pub addr: SocketAddr,
}

impl Server {
    pub fn start(db: &Path) -> Server {
        let mut child = Command::new(BINARY)
            .arg(db)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the strong_payments binary starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("the server's first line");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("an address line, got {line:?}"))
            .parse()
            .expect("a socket address");
        Server { child, addr }
    }

    /// SIGKILL: no destructor, no flush, no graceful shutdown.
    pub fn kill(self) {
        drop(self);
    }
}

/// A server is never left running: a failing test kills it too.
impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
