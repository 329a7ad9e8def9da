//! The strong-mode example servers as child processes of the tests: started on
//! 127.0.0.1, their address read from their first line, killed with SIGKILL.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Built by `cargo test` beside this test binary (examples are test targets' siblings).
pub fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().and_then(Path::parent).unwrap();
    debug.join("examples").join(name)
}

/// The database a crash run writes to, and how to read its payments back.
pub enum Db {
    #[cfg(feature = "sqlite")]
    Sqlite(PathBuf),
    #[cfg(feature = "postgres")]
    Postgres(String),
}

impl Db {
    pub fn example(&self) -> (&'static str, String) {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(path) => ("strong_payments", path.display().to_string()),
            #[cfg(feature = "postgres")]
            Db::Postgres(conninfo) => ("strong_payments_postgres", conninfo.clone()),
        }
    }

    /// The kills land within this many µs of the sends starting: about the time a
    /// round of sends takes (PostgreSQL's first transactions open their connections).
    pub fn kill_window_us(&self) -> u64 {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(_) => 20_000,
            #[cfg(feature = "postgres")]
            Db::Postgres(_) => 60_000,
        }
    }

    pub async fn payments(&self) -> Vec<(i64, i64)> {
        match self {
            #[cfg(feature = "sqlite")]
            Db::Sqlite(path) => {
                let conn = tower_idempotency::rusqlite::Connection::open(path).unwrap();
                let mut statement = conn
                    .prepare("SELECT id, amount FROM payments ORDER BY id")
                    .unwrap();
                let rows = statement
                    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                rows
            }
            #[cfg(feature = "postgres")]
            Db::Postgres(conninfo) => {
                let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(connection);
                let rows = client
                    .query("SELECT id, amount FROM payments ORDER BY id", &[])
                    .await
                    .unwrap();
                rows.iter().map(|row| (row.get(0), row.get(1))).collect()
            }
        }
    }
}

pub struct Server {
    child: Child,
    pub addr: SocketAddr,
}

impl Server {
    pub fn start(db: &Db) -> Self {
        let (example, arg) = db.example();
        let mut child = Command::new(example_binary(example))
            .arg(arg)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("the {example} example is built (cargo test builds examples): {e}")
            });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .expect("the address line")
            .parse()
            .unwrap();
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
