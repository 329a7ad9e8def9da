//! SQLite's worst days, under two durable senders and a resumer on one journal
//! file, against the payments server in the strong mode on a SQLite file of its
//! own (its effects counted there):
//!
//! - `write_lock_held`: another process (`python3`'s sqlite3) holds the
//!   journal's write lock for 10 s (`BEGIN IMMEDIATE`);
//! - `disk_full`: the journal lives on a small tmpfs the test mounts, filled
//!   mid-run until writes fail, then freed. Needs `mount` (root); where it is
//!   refused the test says so and skips that scenario;
//! - `read_only`: the journal's file made read-only while open (chmod, and a
//!   read-only remount of its small file system), then opened read-only.
//!
//! The verdict is the PostgreSQL scenarios' own (`verdict::judge`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest_resilience_journal::{Journal, SqliteStore};
use tokio::time::Instant;

use crate::fleet::{run_load, PaymentsServer};
use crate::verdict;

/// How long the other process holds the write lock.
const LOCK_HELD: Duration = Duration::from_secs(10);
/// How long the disk stays full.
const FULL_FOR: Duration = Duration::from_secs(4);

fn journal(path: &Path) -> Journal {
    Journal::builder(SqliteStore::open(path).expect("open the journal file"))
        .build()
        .expect("journal settings")
}

/// Each key's effects in the server's SQLite file.
fn effects(server_db: &Path) -> BTreeMap<String, i64> {
    use tower_idempotency::rusqlite;
    let conn = rusqlite::Connection::open(server_db).expect("open the server's file");
    let mut select = conn
        .prepare("SELECT key, count(*) FROM effects GROUP BY key")
        .expect("count the effects");
    let rows = select
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .expect("count the effects");
    rows.map(|row| row.expect("an effects row")).collect()
}

async fn scenario(
    name: &str,
    journal_path: &Path,
    fault: impl std::future::Future<Output = Instant>,
) {
    let dir = tempfile::tempdir().unwrap();
    let server_db = dir.path().join("server.db");
    let server = PaymentsServer::start_in("sqlite", server_db.to_str().unwrap()).await;
    let journals = [journal(journal_path)];
    let notes = Arc::new(Mutex::new(Vec::new()));
    let outcome = run_load(
        &journals,
        std::slice::from_ref(&server.url),
        0,
        crate::seed(),
        &notes,
        fault,
    )
    .await;
    let figures = verdict::judge(name, true, &outcome, &effects(&server_db)).await;
    println!("DB_FAULT {figures}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_write_lock_held_by_another_process_loses_and_doubles_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite");
    drop(journal(&path)); // created and migrated before the load
    let holder_path = path.clone();
    let fault = async move {
        let script = format!(
            "import sqlite3, sys, time\n\
             c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
             c.execute('BEGIN IMMEDIATE')\n\
             print('locked', flush=True)\n\
             time.sleep({})\n\
             c.execute('ROLLBACK')\n",
            LOCK_HELD.as_secs_f64()
        );
        let mut holder = tokio::process::Command::new("python3")
            .args(["-c", &script])
            .arg(&holder_path)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 holds the lock");
        let status = tokio::time::timeout(LOCK_HELD * 3, holder.wait())
            .await
            .expect("the lock holder ends")
            .unwrap();
        assert!(status.success(), "the lock holder failed: {status}");
        Instant::now()
    };
    scenario("sqlite_write_lock_held", &path, fault).await;
}

/// A tmpfs of `size` mounted on a directory of its own, unmounted on drop.
struct SmallFs {
    dir: PathBuf,
}

impl SmallFs {
    /// The mount (`name`: one per test, as tests run at once), or why it
    /// could not be made.
    fn mount(size: &str, name: &str) -> Result<SmallFs, String> {
        let dir = std::env::temp_dir().join(format!("db-faults-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !output.status.success() {
            let _ = std::fs::remove_dir(&dir);
            return Err(String::from_utf8_lossy(&output.stderr).trim().to_owned());
        }
        Ok(SmallFs { dir })
    }

    /// Fills the file system with a file of zeros until a write fails.
    fn fill(&self) {
        use std::io::Write;
        let mut filler = std::fs::File::create(self.dir.join("filler")).unwrap();
        let block = vec![0u8; 4096];
        // Bounded by the file system's size.
        for _ in 0..1_000_000 {
            if filler
                .write_all(&block)
                .and_then(|()| filler.sync_all())
                .is_err()
            {
                return;
            }
        }
        panic!("the small file system never filled");
    }

    fn free(&self) {
        std::fs::remove_file(self.dir.join("filler")).unwrap();
    }

    /// Remounts the file system read-only (`true`) or writable again, or says
    /// why the kernel refused.
    fn remount(&self, read_only: bool) -> Result<(), String> {
        let mode = if read_only {
            "remount,ro"
        } else {
            "remount,rw"
        };
        let output = Command::new("mount")
            .args(["-o", mode])
            .arg(&self.dir)
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
        }
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_disk_full_mid_write_loses_and_doubles_nothing() {
    let fs = match SmallFs::mount("8m", "disk-full") {
        Ok(fs) => Arc::new(fs),
        Err(why) => {
            eprintln!("SKIPPED sqlite_disk_full: mounting a small tmpfs was refused: {why}");
            return;
        }
    };
    let path = fs.dir.join("journal.sqlite");
    drop(journal(&path));
    let filler = Arc::clone(&fs);
    let fault = async move {
        tokio::task::spawn_blocking({
            let fs = Arc::clone(&filler);
            move || fs.fill()
        })
        .await
        .unwrap();
        tokio::time::sleep(FULL_FOR).await;
        filler.free();
        Instant::now()
    };
    scenario("sqlite_disk_full", &path, fault).await;
}

/// The journal file made read-only mid-run. An open connection keeps writing
/// through `chmod` (permissions are checked when a file is opened), and the
/// kernel refuses to remount read-only a file system with a file open for
/// writing; so the read-only file meets the journal when it is opened again
/// (a restart): a typed error naming the cause, and once the file is writable
/// again every intent written before is there, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_read_only_journal_file_is_a_clear_error_and_loses_nothing() {
    use std::os::unix::fs::PermissionsExt;

    use reqwest_resilience_journal::{JournalStore, NewIntent, Worker};

    let fs = match SmallFs::mount("8m", "read-only") {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("SKIPPED sqlite_read_only: mounting a small tmpfs was refused: {why}");
            return;
        }
    };
    let path = fs.dir.join("journal.sqlite");
    let worker = Worker::new("w");
    let lease = Duration::from_secs(60);
    let intent = |key: &str| {
        let mut intent = NewIntent::new(key, http::Method::POST, "http://127.0.0.1:9/payments");
        intent.deadline = Some(Duration::from_secs(3));
        intent
    };
    let store = SqliteStore::open(&path).unwrap();
    store
        .write_ahead(&intent("before"), &worker, lease)
        .await
        .unwrap();

    let read_only = std::fs::Permissions::from_mode(0o444);
    std::fs::set_permissions(&path, read_only).unwrap();
    store
        .write_ahead(&intent("through-chmod"), &worker, lease)
        .await
        .expect("an open connection writes through chmod");
    let refused = fs.remount(true);
    assert!(
        refused.is_err(),
        "the kernel remounted read-only under a file open for writing"
    );
    println!(
        "DB_FAULT_READ_ONLY remount while open refused: {}",
        refused.unwrap_err()
    );

    drop(store);
    fs.remount(true)
        .expect("remount read-only once the journal is closed");
    let error = SqliteStore::open(&path).expect_err("a read-only journal file");
    let text = error.to_string();
    println!("DB_FAULT_READ_ONLY open: {text}");
    let lower = text.to_lowercase();
    assert!(
        lower.contains("read-only") || lower.contains("readonly"),
        "the error does not name the cause: {text}"
    );
    assert!(
        matches!(error, reqwest_resilience_journal::JournalError::File { .. }),
        "{error:?}"
    );
    assert!(
        text.contains("journal.sqlite"),
        "the error names no file: {text}"
    );

    fs.remount(false).expect("remount writable");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let store = SqliteStore::open(&path).expect("the journal opens again");
    for key in ["before", "through-chmod"] {
        let row = store.get(key).await.unwrap();
        assert!(row.is_some(), "{key} was lost");
    }
    let twice = store.write_ahead(&intent("before"), &worker, lease).await;
    assert!(
        matches!(
            twice,
            Err(reqwest_resilience_journal::JournalError::DuplicateKey { .. })
        ),
        "written twice: {twice:?}"
    );
    store
        .write_ahead(&intent("after"), &worker, lease)
        .await
        .expect("writes again");
}
