//! Switching the file to WAL while other processes may be opening it.
//!
//! `PRAGMA journal_mode = WAL` needs an exclusive lock and SQLite answers
//! `SQLITE_BUSY` at once, without the busy handler, when another connection holds a
//! shared lock; so the switch is retried within the busy timeout.

use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode};

const FIRST_PAUSE: Duration = Duration::from_millis(1);
const MAX_PAUSE: Duration = Duration::from_millis(50);

pub(super) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

pub(super) fn switch_to_wal(conn: &Connection, busy_timeout: Duration) -> rusqlite::Result<()> {
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
