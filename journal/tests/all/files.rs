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

#[tokio::test]
async fn a_journal_opened_through_a_file_uri_is_created_0600() {
    // SAFETY: as in the test above; 022 is the usual default.
    let previous = unsafe { libc::umask(0o022) };
    let path = sqlite_path("uri");
    let uri = format!("file://{}?mode=rwc", path.display());
    let store = SqliteStore::open(&uri).unwrap();
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

#[test]
fn beside_an_existing_0644_journal_new_wal_and_shm_files_are_0600() {
    let path = sqlite_path("old0644");
    drop(SqliteStore::open(&path).unwrap());
    let main = path.display().to_string();
    // As a 0.1.0 journal may be: 0644, its -wal/-shm gone with its last close.
    for file in [format!("{main}-wal"), format!("{main}-shm")] {
        let _ = std::fs::remove_file(file);
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let warned = warnings_while(|| {
        let store = SqliteStore::open(&path).unwrap();
        store.schema_version().unwrap();
        drop(store);
    });
    assert!(
        warned.contains(&main),
        "the warning names the file: {warned}"
    );
    assert!(
        !warned.contains("-wal"),
        "the new -wal is not open to others: {warned}"
    );
    for file in [format!("{main}-wal"), format!("{main}-shm")] {
        if std::path::Path::new(&file).exists() {
            assert_eq!(mode(&file), 0o600, "{file} is {:o}", mode(&file));
        }
    }
    assert_eq!(mode(&main), 0o644, "the main file is left as it was");
}

#[test]
fn a_file_that_cannot_be_created_is_named_in_the_error() {
    let path = sqlite_path("missing-dir").with_file_name("no-such-dir/j.sqlite");
    let error = SqliteStore::open(&path).unwrap_err();
    let text = error.to_string();
    assert!(text.starts_with("journal file "), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("create failed"), "{text}");
}

#[tokio::test]
async fn a_damaged_page_mid_file_is_reported_when_the_journal_opens() {
    let path = sqlite_path("damaged");
    {
        let store = SqliteStore::open(&path).unwrap();
        for n in 0..200 {
            let mut intent = payment(&format!("k{n}"));
            intent.body = vec![b'x'; 1000];
            store
                .write_ahead(&intent, &Worker::new("w"), Duration::from_secs(60))
                .await
                .unwrap();
        }
    } // the last connection checkpoints the WAL into the file
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 20 * 4096, "several pages: {size}");
    // Garbage over a page in the middle of the file.
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(10 * 4096)).unwrap();
    file.write_all(&[0xA5; 4096]).unwrap();
    drop(file);

    let error = SqliteStore::open(&path).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with(&format!("journal file {}: integrity check", path.display())),
        "{text}"
    );
    // Turned off, the damage stays hidden until the page is read.
    SqliteStore::builder(&path)
        .check_on_open(false)
        .open()
        .expect("opens without the check");
}
