//! The SQLite journal holds keys and bodies verbatim: on Unix its files are the
//! owner's only, whatever the umask, and a file open to others is reported.

#![cfg(unix)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest_resilience_journal::conformance::payment;
use reqwest_resilience_journal::{JournalStore, SqliteStore, Worker};

use crate::support::sqlite_path;

fn mode(path: &str) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn journal_wal_and_shm_files_are_created_0600_under_umask_022() {
    // SAFETY: umask only changes this process's file-creation mask; 022 is the
    // usual default, so other tests creating files meanwhile are unaffected.
    let previous = unsafe { libc::umask(0o022) };
    let path = sqlite_path("modes");
    let store = SqliteStore::open(&path).unwrap();
    store
        .write_ahead(&payment("k"), &Worker::new("w"), Duration::from_secs(60))
        .await
        .unwrap();
    // SAFETY: as above; restores the mask found.
    unsafe { libc::umask(previous) };
    let main = path.display().to_string();
    for file in [main.clone(), format!("{main}-wal"), format!("{main}-shm")] {
        assert_eq!(mode(&file), 0o600, "{file} is {:o}", mode(&file));
    }
}

/// Collects what `tracing` writes while a closure runs.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn warnings_while(work: impl FnOnce()) -> String {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    tracing::subscriber::with_default(subscriber, work);
    let bytes = captured.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn an_existing_journal_open_to_others_is_reported_and_left_alone() {
    let path = sqlite_path("wide");
    drop(SqliteStore::open(&path).unwrap());
    let quiet = warnings_while(|| drop(SqliteStore::open(&path).unwrap()));
    assert!(
        quiet.is_empty(),
        "an owner-only journal opens quietly: {quiet}"
    );

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let warned = warnings_while(|| drop(SqliteStore::open(&path).unwrap()));
    assert!(warned.contains("WARN"), "{warned}");
    assert!(warned.contains("chmod 600"), "{warned}");
    assert!(warned.contains("644"), "{warned}");
    assert_eq!(
        mode(&path.display().to_string()),
        0o644,
        "not changed behind the owner's back"
    );
}
