//! The matrix server (`src/bin/matrix_server.rs`) as a child process on
//! 127.0.0.1: its address read from its first line, killed with SIGKILL,
//! restarted on the same database.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::database::Database;

const BINARY: &str = env!("CARGO_BIN_EXE_matrix_server");
/// A server that has not said where it listens by then is broken.
const START_TIME: Duration = Duration::from_secs(30);

/// Which server a cell runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// `MemoryStore` layer; the effect outside the store.
    Memory,
    /// `transactional(SqliteStore)`; the effect a row in the same file.
    Sqlite,
    /// `transactional(Arc<PostgresStore>)`; the effect a row in the same database.
    Postgres,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Memory, Mode::Sqlite, Mode::Postgres];

    pub fn arg(self) -> &'static str {
        match self {
            Mode::Memory => "memory",
            Mode::Sqlite => "sqlite",
            Mode::Postgres => "postgres",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Memory => "memory layer",
            Mode::Sqlite => "SQLite strong",
            Mode::Postgres => "PostgreSQL strong",
        }
    }
}

pub struct Server {
    child: Child,
    pub addr: SocketAddr,
}

impl Server {
    pub async fn start(mode: Mode, db: &Database, handler: Duration) -> Server {
        let mut child = Command::new(BINARY)
            .arg(mode.arg())
            .arg(db.server_arg())
            .arg(handler.as_millis().to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the matrix_server binary starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        tokio::time::timeout(START_TIME, BufReader::new(stdout).read_line(&mut line))
            .await
            .unwrap_or_else(|_| panic!("{} server silent for {START_TIME:?}", mode.name()))
            .expect("the server's first line");
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{} server: an address line, got {line:?}", mode.name()))
            .parse()
            .expect("a socket address");
        Server { child, addr }
    }

    /// SIGKILL: no destructor, no flush, no graceful shutdown; waits until the
    /// process is gone, so its sockets and locks are released.
    pub async fn kill(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}
