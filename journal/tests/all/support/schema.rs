//! What a journal file records about versions, read past the journal: the
//! application's `PRAGMA user_version` and the journal's own table.

use std::path::Path;

use reqwest_resilience_journal::rusqlite::{Connection, OptionalExtension};

/// The file's `PRAGMA user_version`.
pub fn user_version(path: &Path) -> u32 {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap()
}

/// The journal's recorded steps, `(version, name)` oldest first; empty when it
/// has no versions table.
pub fn journal_versions(path: &Path) -> Vec<(u32, String)> {
    let conn = Connection::open(path).unwrap();
    let exists = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE name = 'journal_schema_versions'",
            [],
            |_| Ok(()),
        )
        .optional()
        .unwrap()
        .is_some();
    if !exists {
        return Vec::new();
    }
    let mut statement = conn
        .prepare("SELECT version, name FROM journal_schema_versions ORDER BY version")
        .unwrap();
    let rows = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// The latest schema version this crate knows.
pub const LATEST: u32 = 5;

/// The steps a journal at the latest version records.
pub fn all_steps() -> Vec<(u32, String)> {
    [
        "0001_initial",
        "0002_worker_incarnation",
        "0003_outbox_queued",
        "0004_acknowledged",
        "0005_narrow_write_path",
    ]
    .iter()
    .zip(1..)
    .map(|(name, version)| (version, (*name).to_owned()))
    .collect()
}
