//! Switching a journal file to WAL, when other connections may be opening it
//! at the same moment.
//!
//! `PRAGMA journal_mode = WAL` needs an exclusive lock, and SQLite answers
//! `SQLITE_BUSY` at once, without calling the busy handler, when another
//! connection holds a shared lock (it is opening the file or switching it too).
//! So the switch is retried here, within the same busy timeout a write gets.

use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::is_busy;

use crate::error::JournalError;

/// The first pause between tries; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// Puts the file in WAL mode, retrying while another connection holds it,
/// until `busy_timeout` has passed (then the last busy error is returned and
/// reported as a write-lock timeout by the caller).
pub(super) fn switch_to_wal(conn: &Connection, busy_timeout: Duration) -> Result<(), JournalError> {
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
            Err(error) => return Err(JournalError::storage(error)),
        }
    }
}
