//! A damaged database file is found when it opens, not when a read first
//! reaches the damaged page (possibly hours later).

use std::path::Path;

use rusqlite::Connection;

use crate::error::FileError;

/// How many problems `quick_check` lists before it stops.
const MAX_PROBLEMS: u32 = 5;

/// The operation named in the error.
const OPERATION: &str = "integrity check (PRAGMA quick_check)";

/// Runs SQLite's `PRAGMA quick_check` (every page's structure, without the
/// index-content cross-check of `integrity_check`) on `conn`, opened on `path`.
///
/// # Errors
/// A [`FileError`] naming `path` and the first problems found (or the error
/// that stopped the check).
pub fn quick_check(conn: &Connection, path: &Path) -> Result<(), FileError> {
    let problems = conn
        .prepare(&format!("PRAGMA quick_check({MAX_PROBLEMS})"))
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        });
    match problems {
        Ok(problems) if problems == ["ok"] => Ok(()),
        Ok(problems) => Err(FileError::new(path, OPERATION, problems.join("; "))),
        Err(error) => Err(FileError::new(path, OPERATION, error)),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Seek, SeekFrom, Write};

    use super::*;

    #[test]
    fn a_sound_file_passes_and_an_overwritten_page_names_the_file() {
        let dir = std::env::temp_dir().join(format!("storage-integrity-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("check.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE t (x TEXT); CREATE INDEX t_x ON t (x);
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
                 INSERT INTO t SELECT printf('%0100d', i) FROM n;",
            )
            .unwrap();
            quick_check(&conn, &path).unwrap();
        }
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        // A page in the middle of the file, past the schema page.
        file.seek(SeekFrom::Start(len / 2 / 4096 * 4096)).unwrap();
        file.write_all(&[0xA5; 4096]).unwrap();
        drop(file);
        let conn = Connection::open(&path).unwrap();
        let error = quick_check(&conn, &path).unwrap_err();
        assert_eq!(error.path(), path);
        assert!(error.to_string().contains("quick_check"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
