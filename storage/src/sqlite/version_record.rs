//! Writing down that a schema step ran, where the schema says: `PRAGMA
//! user_version`, or a row of its versions table. Shared by the migration and by
//! the adoption of a file migrated before the table existed.

use rusqlite::Transaction;

use crate::migrations::VersionRecord;

/// Records `version` (its step named `step`) as applied.
pub(super) fn record_version(
    tx: &Transaction<'_>,
    record: VersionRecord,
    version: u32,
    step: &str,
) -> rusqlite::Result<()> {
    match record {
        VersionRecord::UserVersion => tx.pragma_update(None, "user_version", version),
        VersionRecord::Table { name, names: true } => tx
            .execute(
                &format!("INSERT INTO {name} (version, name) VALUES (?1, ?2)"),
                rusqlite::params![version, step],
            )
            .map(drop),
        VersionRecord::Table { name, names: false } => tx
            .execute(
                &format!("INSERT INTO {name} (version) VALUES (?1)"),
                [version],
            )
            .map(drop),
    }
}
