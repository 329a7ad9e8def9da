//! The relay in another process: builds (under cargo) and starts the
//! `p12_relay` binary beside this one, waits for its `READY`, and at the end
//! closes its standard input and reads its `TOTALS`. Killed if dropped first.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reqwest_resilience_bench::child;

/// The longest building the child may take.
const BUILD_LIMIT: Duration = Duration::from_secs(600);
/// The longest the child may take to start its relay, or to stop it.
const LINE_LIMIT: Duration = Duration::from_secs(30);

pub struct RelayProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl RelayProcess {
    /// Starts `p12_relay` on `conninfo`, its relay polling every `poll` and
    /// claiming `batch` intents a pass.
    pub async fn start(conninfo: &str, poll: Duration, batch: usize) -> Result<Self, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot locate this executable: {e}"))?
            .with_file_name(format!("p12_relay{}", std::env::consts::EXE_SUFFIX));
        tokio::task::spawn_blocking(|| child::build_under_cargo("p12_relay", BUILD_LIMIT))
            .await
            .map_err(|e| format!("building p12_relay: {e}"))??;
        let mut child = Command::new(&exe)
            .arg(conninfo)
            .arg(poll.as_millis().to_string())
            .arg(batch.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut process = RelayProcess {
            child,
            stdin,
            lines,
        };
        process.line_starting("READY").await?;
        Ok(process)
    }

    /// Stops the relay after its pass in progress; its `TOTALS …` line.
    pub async fn stop(mut self) -> Result<String, String> {
        drop(self.stdin.take());
        let totals = self.line_starting("TOTALS").await?;
        let started = Instant::now();
        while self.child.try_wait().map_err(|e| e.to_string())?.is_none() {
            if started.elapsed() > LINE_LIMIT {
                return Err(format!("p12_relay did not exit within {LINE_LIMIT:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(totals)
    }

    /// The next line of the child's that starts with `prefix` (others are echoed).
    async fn line_starting(&mut self, prefix: &str) -> Result<String, String> {
        let give_up = Instant::now() + LINE_LIMIT;
        loop {
            match self.lines.try_recv() {
                Ok(line) if line.starts_with(prefix) => return Ok(line),
                Ok(line) => println!("p12_relay: {line}"),
                Err(mpsc::TryRecvError::Disconnected) => {
                    return Err(format!("p12_relay ended before printing {prefix}"))
                }
                Err(mpsc::TryRecvError::Empty) if Instant::now() > give_up => {
                    return Err(format!(
                        "p12_relay printed no {prefix} within {LINE_LIMIT:?}"
                    ))
                }
                Err(mpsc::TryRecvError::Empty) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    }
}

impl Drop for RelayProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
