//! The journal file is its owner's only: it holds idempotency keys and request
//! bodies verbatim.
//!
//! On Unix a new journal file is created here, mode 0600, before SQLite opens it
//! (whatever the umask: the mode is set explicitly after creation). SQLite then
//! creates the `-wal` and `-shm` files with the main file's permissions. An
//! existing file (the journal or its `-wal`/`-shm`) that others may read or write
//! is left as it is — another process may rely on it — and reported with a
//! `tracing` warning at `open`.

use std::path::Path;

use crate::error::JournalError;

/// Paths SQLite does not treat as a file name of ours.
fn is_special(path: &Path) -> bool {
    let text = path.to_string_lossy();
    text.is_empty() || text == ":memory:" || text.starts_with("file:")
}

/// Creates the journal file owner-only if it does not exist; warns about any
/// existing journal file that is open to others.
#[cfg(unix)]
pub(super) fn prepare(path: &Path) -> Result<(), JournalError> {
    use std::fs::{OpenOptions, Permissions};
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

    if is_special(path) {
        return Ok(());
    }
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        // The umask may have narrowed the mode; make it exactly 0600.
        Ok(file) => file
            .set_permissions(Permissions::from_mode(0o600))
            .map_err(JournalError::storage)?,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(JournalError::storage(error)),
    }
    for suffix in ["", "-wal", "-shm"] {
        let file = format!("{}{suffix}", path.display());
        let Ok(metadata) = std::fs::metadata(&file) else {
            continue;
        };
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            tracing::warn!(
                file = %file,
                mode = %format!("{mode:o}"),
                "journal: the file is open to other users and holds idempotency keys and \
                 request bodies; restrict it (chmod 600)"
            );
        }
    }
    Ok(())
}

/// Elsewhere the platform's defaults apply.
#[cfg(not(unix))]
pub(super) fn prepare(_path: &Path) -> Result<(), JournalError> {
    Ok(())
}
