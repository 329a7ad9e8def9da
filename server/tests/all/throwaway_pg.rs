//! A throwaway PostgreSQL cluster on 127.0.0.1 for these tests: `initdb` into a temp
//! directory, `pg_ctl start` on a free port, `pg_ctl stop` and removal on drop (or by
//! a watchdog when the test process dies first). The
//! same approach as the journal's helper (binaries from
//! `journal/scripts/ensure-postgres.sh`), kept here so this crate depends on neither
//! the journal nor the client.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Cluster {
    pub conninfo: String,
    bin: PathBuf,
    dir: PathBuf,
    root: bool,
}

fn find_binaries() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.filter_map(|e| Some(e.ok()?.path().join("bin"))).collect())
        .unwrap_or_default();
    debian.sort();
    debian.reverse();
    path.into_iter()
        .chain(debian)
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
}

fn as_pg_user(root: bool, program: &Path) -> Command {
    if root {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn run(mut command: Command, limit: Duration, what: &str) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            assert!(
                status.success(),
                "{what} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Cluster {
    /// A running cluster, or `None` without PostgreSQL binaries (then the caller
    /// fails unless `TOWER_IDEMPOTENCY_SKIP_POSTGRES` is set: CI installs them).
    pub fn start() -> Option<Self> {
        let Some(bin) = find_binaries() else {
            assert!(
                std::env::var_os("TOWER_IDEMPOTENCY_SKIP_POSTGRES").is_some(),
                "no PostgreSQL binaries: run journal/scripts/ensure-postgres.sh \
                 (or set TOWER_IDEMPOTENCY_SKIP_POSTGRES=1 to skip these tests)"
            );
            return None;
        };
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
        if root
            && !Command::new("id")
                .arg("postgres")
                .output()
                .is_ok_and(|o| o.status.success())
        {
            let mut useradd = Command::new("useradd");
            useradd.args(["--system", "--no-create-home", "postgres"]);
            run(useradd, Duration::from_secs(20), "useradd");
        }
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("tower-idempotency-pg-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        if root {
            let mut chown = Command::new("chown");
            chown.arg("postgres:").arg(&dir);
            run(chown, Duration::from_secs(10), "chown");
        }
        let mut initdb = as_pg_user(root, &bin.join("initdb"));
        initdb.arg("-D").arg(dir.join("data")).args([
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        ]);
        run(initdb, Duration::from_secs(90), "initdb");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut start = as_pg_user(root, &bin.join("pg_ctl"));
        start.arg("-D").arg(dir.join("data")).arg("-l").arg(dir.join("server.log")).args(["-w", "-t", "60", "-o"])
            .arg(format!("-h 127.0.0.1 -p {port} -k {} -c fsync=off -c synchronous_commit=off -c max_connections=60", dir.display()))
            .arg("start");
        run(start, Duration::from_secs(75), "pg_ctl start");
        // Stop and remove the cluster if this process dies without dropping it (a kill,
        // an abort): a shell waits for this process, bounded by its life.
        let run_as = if root { "runuser -u postgres -- " } else { "" };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; \
             {run_as}'{pg_ctl}' -D '{data}' stop -m immediate -t 20 >/dev/null 2>&1; rm -rf '{dir}'",
            pid = std::process::id(),
            pg_ctl = bin.join("pg_ctl").display(),
            data = dir.join("data").display(),
            dir = dir.display(),
        );
        #[allow(clippy::zombie_processes)]
        let _watchdog = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the cluster's watchdog");
        Some(Cluster {
            conninfo: format!("host=127.0.0.1 port={port} user=postgres dbname=postgres"),
            bin,
            dir,
            root,
        })
    }

    /// A fresh database in the cluster (one per test case).
    pub async fn database(&self, name: &str) -> String {
        let (client, connection) = tokio_postgres::connect(&self.conninfo, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        self.conninfo
            .replace("dbname=postgres", &format!("dbname={name}"))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut stop = as_pg_user(self.root, &self.bin.join("pg_ctl"));
        stop.arg("-D").arg(self.dir.join("data")).args([
            "-w",
            "-t",
            "30",
            "-m",
            "immediate",
            "stop",
        ]);
        let _ = stop.stdout(Stdio::null()).stderr(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
