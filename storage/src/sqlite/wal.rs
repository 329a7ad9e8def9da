//! Switching a database file to WAL, when other connections may be opening it
//! at the same moment.
//!
//! `PRAGMA journal_mode = WAL` needs an exclusive lock, and SQLite answers
//! `SQLITE_BUSY` at once, without calling the busy handler, when another
//! connection holds a shared lock (it is opening the file or switching it too).
//! So the switch is retried here, within the same busy timeout a write gets.

use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::is_busy;

/// The first pause between tries; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// Puts the file in WAL mode, retrying while another connection holds it,
/// until `busy_timeout` has passed.
///
/// # Errors
/// The last busy error once `busy_timeout` has passed (see [`is_busy`]), or
/// any other error at once.
pub fn switch_to_wal(conn: &Connection, busy_timeout: Duration) -> rusqlite::Result<()> {
    let give_up_at = Instant::now() + busy_timeout;
    let mut pause = FIRST_PAUSE;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |row| {
            row.get::<_, String>(0)
        }) {
            Ok(_) => return Ok(()),
            Err(error) if is_busy(&error) && Instant::now() + pause < give_up_at => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(MAX_PAUSE);
            }
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::TransactionBehavior;

    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("storage-wal-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("wal.db")
    }

    #[test]
    fn the_file_is_in_wal_mode_after_the_switch() {
        let path = scratch("on");
        let conn = Connection::open(&path).unwrap();
        switch_to_wal(&conn, Duration::from_secs(1)).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_lock_held_past_the_timeout_gives_the_busy_error_not_earlier() {
        let path = scratch("held");
        let mut holder = Connection::open(&path).unwrap();
        holder.execute_batch("CREATE TABLE t (x)").unwrap();
        let held = holder
            .transaction_with_behavior(TransactionBehavior::Exclusive)
            .unwrap();
        let other = Connection::open(&path).unwrap();
        // As a store opens it: the busy handler waits as long as the switch retries.
        other.busy_timeout(Duration::from_millis(100)).unwrap();
        let started = Instant::now();
        let error = switch_to_wal(&other, Duration::from_millis(100)).unwrap_err();
        assert!(is_busy(&error), "{error}");
        assert!(
            started.elapsed() >= Duration::from_millis(50),
            "gave up early"
        );
        assert!(started.elapsed() < Duration::from_secs(5), "gave up late");
        drop(held);
        switch_to_wal(&other, Duration::from_millis(100)).unwrap();
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
