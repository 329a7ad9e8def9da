//! A throwaway PostgreSQL cluster on 127.0.0.1 for tests and benchmarks
//! (feature `test-util`): `initdb` into a temporary directory,
//! `pg_ctl start` on a free port, stopped and removed when this process exits
//! (a watchdog shell waits for it), however it exits. Dropping the handle
//! leaves the server running (a test may keep only its connection string);
//! call [`ThrowawayPostgres::stop_immediate`] to free it sooner.
//!
//! The binaries are looked up on `PATH`, then in `/usr/lib/postgresql/*/bin`
//! (Debian's `postgresql` package). Run as root, the cluster runs as the
//! `postgres` user (created if missing), as `initdb` refuses root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::error::BoxError;

/// Tells apart the clusters one process starts.
static STARTED: AtomicU32 = AtomicU32::new(0);

/// How durable the cluster's commits are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// PostgreSQL's defaults: `fsync`, `synchronous_commit`, full page writes
    /// (for figures that must mean what production means).
    Defaults,
    /// `fsync=off`, `synchronous_commit=off`, no full page writes: fast tests.
    Off,
}

/// A running throwaway cluster. Its [`conninfo`](Self::conninfo) connects as the
/// superuser `postgres` to the database `postgres` without a password.
#[derive(Debug)]
pub struct ThrowawayPostgres {
    conninfo: String,
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    root: bool,
    durability: Durability,
    /// Extra `-c name=value` options.
    settings: String,
}

impl ThrowawayPostgres {
    /// Starts a cluster, or `Ok(None)` when no PostgreSQL binaries are installed.
    ///
    /// # Errors
    /// When a step (`initdb`, `pg_ctl start`, …) fails or takes too long (each is
    /// bounded), with the step's name and its standard error.
    pub fn start(durability: Durability) -> Result<Option<Self>, BoxError> {
        Self::start_with(durability, &[])
    }

    /// [`start`](Self::start) with server settings of the caller's (each
    /// `name=value`, passed as `-c name=value`), kept across restarts: e.g.
    /// `synchronous_standby_names=ghost` for a synchronous standby that never
    /// answers (every commit with `synchronous_commit` on waits for it).
    ///
    /// # Errors
    /// As [`start`](Self::start); a setting without `=` is refused.
    pub fn start_with(durability: Durability, settings: &[&str]) -> Result<Option<Self>, BoxError> {
        if let Some(bad) = settings
            .iter()
            .find(|s| !s.contains('=') || s.contains('\''))
        {
            return Err(
                format!("a server setting must read name=value without quotes: {bad}").into(),
            );
        }
        let Some(bin) = find_binaries() else {
            return Ok(None);
        };
        let settings = settings
            .iter()
            .map(|s| format!("-c {s}"))
            .collect::<Vec<_>>()
            .join(" ");
        start_cluster(&bin, durability, settings).map(Some)
    }

    /// The port the server listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A libpq-style connection string (`host=127.0.0.1 port=… user=postgres
    /// dbname=postgres`).
    pub fn conninfo(&self) -> &str {
        &self.conninfo
    }

    /// Stops the server (fast shutdown: open connections are cut).
    ///
    /// # Errors
    /// When `pg_ctl stop` fails or takes over 40 s.
    pub fn stop(&self) -> Result<(), BoxError> {
        self.stop_in("fast")
    }

    /// Stops the server at once, as a crash would (`-m immediate`: no
    /// checkpoint, the next start recovers from the WAL).
    ///
    /// # Errors
    /// When `pg_ctl stop` fails or takes over 40 s.
    pub fn stop_immediate(&self) -> Result<(), BoxError> {
        self.stop_in("immediate")
    }

    fn stop_in(&self, mode: &str) -> Result<(), BoxError> {
        let mut stop = as_pg_user(self.root, &self.bin.join("pg_ctl"));
        stop.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-w", "-t", "30", "-m", mode, "stop"]);
        run_bounded(stop, Duration::from_secs(40), "pg_ctl stop")
    }

    /// Starts the server again on the same port.
    ///
    /// # Errors
    /// When `pg_ctl start` fails or takes over 75 s.
    pub fn restart(&self) -> Result<(), BoxError> {
        let start = pg_ctl_start(self, self.port);
        run_bounded(start, Duration::from_secs(75), "pg_ctl start")
    }
}

fn find_binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dir| {
            dir.filter_map(|e| Some(e.ok()?.path().join("bin")))
                .collect()
        })
        .unwrap_or_default();
    debian.sort(); // newest major version first after the reverse
    debian.reverse();
    on_path
        .into_iter()
        .chain(debian)
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}

/// A command run as `postgres` when we are root (initdb refuses root).
fn as_pg_user(root: bool, program: &Path) -> Command {
    if root {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn run_bounded(mut command: Command, limit: Duration, what: &str) -> Result<(), BoxError> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            if status.success() {
                return Ok(());
            }
            let output = child.wait_with_output()?;
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!("{what} failed ({status}): {stderr}").into());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what} did not finish within {limit:?}").into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn pg_ctl_start(cluster: &ThrowawayPostgres, port: u16) -> Command {
    let durability = match cluster.durability {
        Durability::Defaults => "",
        Durability::Off => "-c fsync=off -c synchronous_commit=off -c full_page_writes=off",
    };
    let mut start = as_pg_user(cluster.root, &cluster.bin.join("pg_ctl"));
    start
        .arg("-D")
        .arg(cluster.dir.join("data"))
        .arg("-l")
        .arg(cluster.dir.join("server.log"))
        .args(["-w", "-t", "60", "-o"])
        .arg(format!(
            "-h 127.0.0.1 -p {port} -k {} {durability} -c max_connections=60 {}",
            cluster.dir.display(),
            cluster.settings,
        ))
        .arg("start");
    start
}

fn start_cluster(
    bin: &Path,
    durability: Durability,
    settings: String,
) -> Result<ThrowawayPostgres, BoxError> {
    let root = is_root();
    if root {
        // The `postgres` user owns the cluster; create it on a machine without one.
        let exists = Command::new("id")
            .arg("postgres")
            .output()
            .is_ok_and(|o| o.status.success());
        if !exists {
            let mut useradd = Command::new("useradd");
            useradd.args(["--system", "--no-create-home", "postgres"]);
            run_bounded(useradd, Duration::from_secs(20), "useradd postgres")?;
        }
    }
    let dir = std::env::temp_dir().join(format!(
        "throwaway-pg-{}-{}",
        std::process::id(),
        STARTED.fetch_add(1, Ordering::Relaxed)
    ));
    // A directory left by an earlier process of the same id is not ours to reuse.
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    if root {
        let mut chown = Command::new("chown");
        chown.arg("postgres:").arg(&dir);
        run_bounded(
            chown,
            Duration::from_secs(10),
            "chown the cluster directory",
        )?;
    }
    let data = dir.join("data");
    let mut initdb = as_pg_user(root, &bin.join("initdb"));
    initdb.arg("-D").arg(&data).args([
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--no-instructions",
    ]);
    if durability == Durability::Off {
        initdb.arg("--no-sync");
    }
    run_bounded(initdb, Duration::from_secs(90), "initdb")?;

    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let cluster = ThrowawayPostgres {
        conninfo: format!("host=127.0.0.1 port={port} user=postgres dbname=postgres"),
        bin: bin.to_owned(),
        dir: dir.clone(),
        port,
        root,
        durability,
        settings,
    };
    run_bounded(
        pg_ctl_start(&cluster, port),
        Duration::from_secs(75),
        "pg_ctl start",
    )?;

    // Stop the cluster and remove its files when this process exits, however it
    // exits (the watchdog polls this process; bounded by its life).
    let run_as = if root { "runuser -u postgres -- " } else { "" };
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; \
         {run_as}'{pg_ctl}' -D '{data}' stop -m immediate -t 20 >/dev/null 2>&1; rm -rf '{dir}'",
        pid = std::process::id(),
        pg_ctl = bin.join("pg_ctl").display(),
        data = data.display(),
        dir = dir.display(),
    );
    // Deliberately not waited for: it must outlive this process.
    #[allow(clippy::zombie_processes)]
    let _watchdog = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok(cluster)
}
