//! The relay fleet: `outbox_relay` child processes with stable worker names,
//! each killed with SIGKILL and started again under its name.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

/// This package's relay binary.
const BINARY: &str = env!("CARGO_BIN_EXE_outbox_relay");

/// One relay process.
struct Relay {
    child: Child,
}

impl Relay {
    /// Starts a relay on `store` (`postgres:CONNINFO` or `sqlite:PATH`) and
    /// waits for its line saying it relays (its journal is open and its
    /// resumer runs).
    fn start(store: &str, name: &str, seed: u64, token: &str) -> Relay {
        let mut child = Command::new(BINARY)
            .args([store, name, &seed.to_string(), token])
            // Its standard input is its lifeline: closed when this process ends.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Read only when it fails to start: its error, the one thing it writes.
            .stderr(Stdio::piped())
            .spawn()
            .expect("the outbox_relay binary starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("the relay's first line");
        if line.trim() != format!("relaying as {name}") {
            let _ = child.kill();
            let mut error = String::new();
            let _ = child
                .stderr
                .take()
                .expect("piped stderr")
                .read_to_string(&mut error);
            panic!("relay {name} did not start: {line:?}, {error:?}");
        }
        Relay { child }
    }
}

/// A relay is never left running: a failing test kills it too. `Child::kill`
/// is SIGKILL: no destructor, no lease given back, sends cut mid-flight.
impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Relays `relay-0` … `relay-(n-1)`.
pub struct Fleet {
    store: String,
    seed: u64,
    token: String,
    relays: Vec<Relay>,
    /// Restarts so far: each incarnation seeds its client's jitter apart.
    restarts: u64,
}

impl Fleet {
    pub fn start(store: &str, size: usize, seed: u64, token: &str) -> Fleet {
        let relays = (0..size)
            .map(|i| Relay::start(store, &name(i), seed ^ i as u64, token))
            .collect();
        Fleet {
            store: store.to_owned(),
            seed,
            token: token.to_owned(),
            relays,
            restarts: 0,
        }
    }

    /// SIGKILLs relay `i` and starts it again under the same worker name.
    pub fn kill_and_restart(&mut self, i: usize) {
        self.restarts += 1;
        let jitter_seed = self.seed ^ (self.restarts << 8) ^ i as u64;
        // The old process is killed (and reaped) before its successor starts.
        self.relays[i] = {
            let _ = self.relays[i].child.kill();
            let _ = self.relays[i].child.wait();
            Relay::start(&self.store, &name(i), jitter_seed, &self.token)
        };
    }
}

fn name(i: usize) -> String {
    format!("relay-{i}")
}
