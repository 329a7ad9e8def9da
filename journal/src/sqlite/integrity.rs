//! A damaged journal file is found when it opens, not when a resume first reads
//! the damaged page (possibly hours later, with the intents on it stuck).

use std::path::Path;

use rusqlite::Connection;

use crate::error::JournalError;

/// How many problems `quick_check` lists before it stops.
const MAX_PROBLEMS: u32 = 5;

/// Runs SQLite's `PRAGMA quick_check` (every page's structure, without the
/// index-content cross-check of `integrity_check`).
///
/// # Errors
/// [`JournalError::File`] naming the file and the first problems found.
pub(super) fn check(conn: &Connection, path: &Path) -> Result<(), JournalError> {
    const OPERATION: &str = "integrity check (PRAGMA quick_check)";
    let problems = conn
        .prepare(&format!("PRAGMA quick_check({MAX_PROBLEMS})"))
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        });
    match problems {
        Ok(problems) if problems == ["ok"] => Ok(()),
        Ok(problems) => Err(JournalError::file(path, OPERATION)(problems.join("; "))),
        Err(error) => Err(JournalError::file(path, OPERATION)(error)),
    }
}
