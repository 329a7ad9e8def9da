//! The benchmark's child processes: built under cargo beside the running
//! binary, and run bounded in time.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `cargo run --bin bench` builds only `bench`; under cargo (which sets `CARGO`)
/// build the child binary `bin` too, in the same profile, so it is never stale.
pub fn build_under_cargo(bin: &str, limit: Duration) -> Result<(), String> {
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Ok(());
    };
    let manifest: PathBuf = [env!("CARGO_MANIFEST_DIR"), "Cargo.toml"].iter().collect();
    let mut command = Command::new(cargo);
    command
        .args([
            "build",
            "--quiet",
            "-p",
            "reqwest-resilience-bench",
            "--bin",
        ])
        .arg(bin)
        .arg("--manifest-path")
        .arg(manifest);
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    run_bounded(command, limit).map(drop)
}

/// Runs `command` to completion, killing it after `limit`; its stdout on success.
pub fn run_bounded(mut command: Command, limit: Duration) -> Result<String, String> {
    let name = format!("{:?}", command.get_program());
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))?;
    // Read stdout on a thread: a full pipe would otherwise block the child.
    let mut pipe = child.stdout.take().ok_or("no stdout pipe")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{name} did not finish within {limit:?}"));
            }
            Err(e) => return Err(format!("waiting for {name}: {e}")),
        }
    };
    let stdout = reader.join().map_err(|_| "stdout reader panicked")?;
    if status.success() {
        Ok(stdout)
    } else {
        Err(format!("{name} failed: {status}"))
    }
}
