//! The store's file is its owner's only: it holds response bodies (payment results).
//!
//! The same approach as the journal's file handling (to move into the shared storage
//! crate): a new file is created mode 0600 before SQLite opens it, whatever the umask;
//! SQLite gives `-wal` and `-shm` the main file's mode. An existing file open to others
//! is left as it is (another process may rely on it) and reported with a warning.

use std::path::Path;

use crate::store::StoreError;

fn is_special(path: &Path) -> bool {
    let text = path.to_string_lossy();
    text.is_empty() || text == ":memory:" || text.starts_with("file:")
}

#[cfg(unix)]
pub(super) fn prepare(path: &Path) -> Result<(), StoreError> {
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
            .map_err(|e| StoreError::new("set the store file's mode", e))?,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(StoreError::new("create the store file", error)),
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
                "idempotency store: the file is open to other users and holds stored \
                 responses; restrict it (chmod 600)"
            );
        }
    }
    Ok(())
}

#[cfg(not(unix))]
pub(super) fn prepare(_path: &Path) -> Result<(), StoreError> {
    Ok(())
}
