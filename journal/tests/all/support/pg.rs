//! PostgreSQL for the tests: `DATABASE_URL` if set, else a throwaway cluster
//! started from the PostgreSQL binaries on this machine (one per test process,
//! stopped by a watchdog when the process exits), else a loud skip — and under
//! `CI=true` a failure instead.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

static BASE: OnceLock<Option<String>> = OnceLock::new();

/// A connection string for a fresh schema of its own, or `None` when PostgreSQL
/// is not available here (after one loud line; a panic under `CI=true`).
pub async fn fresh_schema(test: &str) -> Option<String> {
    let base = tokio::task::spawn_blocking(|| BASE.get_or_init(find_or_start).clone())
        .await
        .expect("starting PostgreSQL panicked")?;
    let schema = format!(
        "t_{}_{}",
        test.chars()
            .filter(char::is_ascii_alphanumeric)
            .take(30)
            .collect::<String>(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let (client, connection) = tokio_postgres::connect(&base, tokio_postgres::NoTls)
        .await
        .expect("connect to the test PostgreSQL");
    let task = tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .expect("create a test schema");
    drop(client);
    let _ = task.await;
    Some(with_search_path(&base, &schema))
}

fn with_search_path(base: &str, schema: &str) -> String {
    if base.starts_with("postgres://") || base.starts_with("postgresql://") {
        let separator = if base.contains('?') { '&' } else { '?' };
        format!("{base}{separator}options=-csearch_path%3D{schema}")
    } else {
        format!("{base} options='-csearch_path={schema}'")
    }
}

fn find_or_start() -> Option<String> {
    if let Ok(url) = std::env::var("DATABASE_URL") {
        return Some(url);
    }
    let Some(bin) = find_binaries() else {
        super::skip_postgres("no DATABASE_URL and no initdb/pg_ctl found");
        return None;
    };
    Some(Cluster::start(&bin).conninfo)
}

/// A throwaway cluster of the caller's own (one that a test may stop and start
/// again), or `None` without the PostgreSQL binaries (after one loud line).
pub fn own_cluster() -> Option<Cluster> {
    let Some(bin) = find_binaries() else {
        super::skip_postgres("no initdb/pg_ctl found (a test needs a cluster of its own)");
        return None;
    };
    Some(Cluster::start(&bin))
}

/// A running throwaway cluster on 127.0.0.1.
#[derive(Debug)]
pub struct Cluster {
    pub conninfo: String,
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    root: bool,
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
    debian.sort(); // newest major version last
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

fn run_bounded(mut command: Command, limit: Duration, what: &str) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for a PostgreSQL command") {
            if status.success() {
                return;
            }
            let output = child.wait_with_output().expect("read its stderr");
            panic!(
                "{what} failed ({status}): {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Cluster {
    fn start(bin: &Path) -> Cluster {
        start_cluster(bin)
    }

    /// Stops the server (fast shutdown: open connections are cut).
    pub fn stop(&self) {
        let mut stop = as_pg_user(self.root, &self.bin.join("pg_ctl"));
        stop.arg("-D")
            .arg(self.dir.join("data"))
            .args(["-w", "-t", "30", "-m", "fast", "stop"]);
        run_bounded(stop, Duration::from_secs(40), "pg_ctl stop");
    }

    /// Starts the server again on the same port.
    pub fn restart(&self) {
        run_bounded(
            pg_ctl_start(self.root, &self.bin, &self.dir, self.port),
            Duration::from_secs(75),
            "pg_ctl start",
        );
    }
}

fn pg_ctl_start(root: bool, bin: &Path, dir: &Path, port: u16) -> Command {
    let mut start = as_pg_user(root, &bin.join("pg_ctl"));
    start
        .arg("-D")
        .arg(dir.join("data"))
        .arg("-l")
        .arg(dir.join("server.log"))
        .args(["-w", "-t", "60", "-o"])
        .arg(format!(
            "-h 127.0.0.1 -p {port} -k {} -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=60",
            dir.display()
        ))
        .arg("start");
    start
}

fn start_cluster(bin: &Path) -> Cluster {
    let root = is_root();
    if root {
        // The `postgres` user owns the cluster; create it on a machine without one.
        let exists = Command::new("id")
            .arg("postgres")
            .output()
            .is_ok_and(|o| o.status.success());
        if !exists {
            run_bounded(
                {
                    let mut c = Command::new("useradd");
                    c.args(["--system", "--no-create-home", "postgres"]);
                    c
                },
                Duration::from_secs(20),
                "useradd postgres",
            );
        }
    }
    let dir = std::env::temp_dir().join(format!(
        "journal-pg-{}-{}",
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    ));
    std::fs::create_dir_all(&dir).expect("create the cluster directory");
    if root {
        run_bounded(
            {
                let mut c = Command::new("chown");
                c.arg("postgres:").arg(&dir);
                c
            },
            Duration::from_secs(10),
            "chown the cluster directory",
        );
    }
    let data = dir.join("data");
    let mut initdb = as_pg_user(root, &bin.join("initdb"));
    initdb.arg("-D").arg(&data).args([
        "-U",
        "postgres",
        "--auth=trust",
        "-E",
        "UTF8",
        "--no-sync",
        "--no-instructions",
    ]);
    run_bounded(initdb, Duration::from_secs(90), "initdb");

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("find a free port")
        .port();
    run_bounded(
        pg_ctl_start(root, bin, &dir, port),
        Duration::from_secs(75),
        "pg_ctl start",
    );

    // Stop the cluster and remove its files when this test process exits, however
    // it exits (the watchdog polls the parent; bounded by the parent's life).
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
        .spawn()
        .expect("start the cluster watchdog");
    Cluster {
        conninfo: format!("host=127.0.0.1 port={port} user=postgres dbname=postgres"),
        bin: bin.to_owned(),
        dir,
        port,
        root,
    }
}
