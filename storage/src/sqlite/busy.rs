//! How long a store waits for another connection's lock, and which SQLite
//! errors mean it waited in vain.

use std::time::Duration;

use rusqlite::ErrorCode;

/// The busy timeout both stores open their files with unless told otherwise
/// (`SqliteStore::builder(path).busy_timeout(…)` in each): how long a write
/// waits for another connection's lock, and how long switching a file to WAL
/// retries. Five seconds covers another process's commit or migration while
/// staying well under a client's attempt timeout.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// SQLite's "database is busy" or "locked": another connection holds the lock
/// this call needed (past the busy timeout, where one applies).
pub fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests {
    use rusqlite::{Connection, TransactionBehavior};

    use super::*;

    #[test]
    fn a_held_write_lock_is_busy_and_a_syntax_error_is_not() {
        let dir = std::env::temp_dir().join(format!("storage-busy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("busy.db");
        let mut holder = Connection::open(&path).unwrap();
        let other = Connection::open(&path).unwrap();
        other.busy_timeout(Duration::from_millis(10)).unwrap();
        let _held = holder
            .transaction_with_behavior(TransactionBehavior::Exclusive)
            .unwrap();
        let locked = other.execute_batch("BEGIN IMMEDIATE; COMMIT").unwrap_err();
        assert!(is_busy(&locked), "{locked}");
        let syntax = other.execute_batch("NOT SQL").unwrap_err();
        assert!(!is_busy(&syntax), "{syntax}");
        drop(_held);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
