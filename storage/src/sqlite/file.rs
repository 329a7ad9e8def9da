//! A store's database file is its owner's only: idempotency stores hold keys,
//! request bodies and responses verbatim.
//!
//! On Unix the database file and its `-wal` and `-shm` files are created here,
//! mode 0600, before SQLite opens the database (whatever the umask: the mode is
//! set explicitly after creation) — for a plain path and for a `file:` URI
//! alike. SQLite would create the `-wal` and `-shm` files with the main file's
//! permissions; made first, they stay owner-only even beside an existing main
//! file open to others. An existing file (the database or its `-wal`/`-shm`) that
//! others may read or write is left as it is — another process may rely on it —
//! and each is named in a `tracing` warning.

use std::path::{Path, PathBuf};

use crate::error::FileError;

/// The file a database path names: the path itself, the path inside a `file:`
/// URI (`file:name.db?mode=rwc`, `file:///abs/name.db`), or `None` for an
/// in-memory database or an empty path (no file of ours).
pub fn file_of(path: &Path) -> Option<PathBuf> {
    let text = path.to_string_lossy();
    if text.is_empty() || text == ":memory:" {
        return None;
    }
    let Some(uri) = text.strip_prefix("file:") else {
        return Some(path.to_owned());
    };
    let (name, query) = uri.split_once('?').unwrap_or((uri, ""));
    let name = name.split('#').next().unwrap_or_default();
    let in_memory = query.split('&').any(|pair| pair == "mode=memory");
    // `file://host/path`: SQLite accepts only an empty host or `localhost`.
    let name = match name.strip_prefix("//") {
        Some(rest) => rest.strip_prefix("localhost").unwrap_or(rest),
        None => name,
    };
    let name = percent_decode(name);
    if in_memory || name.is_empty() || name == ":memory:" {
        return None;
    }
    Some(PathBuf::from(name))
}

/// `%XX` escapes decoded, as SQLite decodes a URI's path.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Creates the database file that `path` names (see [`file_of`]) and its
/// `-wal`/`-shm` owner-only where they do not exist; warns about each existing
/// one that is open to others, saying what it `holds` (e.g. "idempotency keys
/// and request bodies").
///
/// # Errors
/// A [`FileError`] naming the file that could not be created, restricted or
/// inspected.
#[cfg(unix)]
pub fn prepare_owner_only(path: &Path, holds: &str) -> Result<(), FileError> {
    use std::fs::{OpenOptions, Permissions};
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

    let Some(main) = file_of(path) else {
        return Ok(());
    };
    for suffix in ["", "-wal", "-shm"] {
        let mut name = main.clone().into_os_string();
        name.push(suffix);
        let file = PathBuf::from(name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&file)
        {
            // The umask may have narrowed the mode; make it exactly 0600.
            Ok(created) => created
                .set_permissions(Permissions::from_mode(0o600))
                .map_err(|e| FileError::new(&file, "restrict to its owner", e))?,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                let metadata =
                    std::fs::metadata(&file).map_err(|e| FileError::new(&file, "inspect", e))?;
                let mode = metadata.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    tracing::warn!(
                        file = %file.display(),
                        mode = %format!("{mode:o}"),
                        "the database file is open to other users and holds {holds}; \
                         restrict it (chmod 600)"
                    );
                }
            }
            Err(error) => return Err(FileError::new(&file, "create", error)),
        }
    }
    Ok(())
}

/// Elsewhere the platform's defaults apply.
///
/// # Errors
/// None on this platform.
#[cfg(not(unix))]
pub fn prepare_owner_only(_path: &Path, _holds: &str) -> Result<(), FileError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_a_path_names() {
        let table: [(&str, Option<&str>); 10] = [
            ("journal.sqlite", Some("journal.sqlite")),
            ("/var/lib/app/j.db", Some("/var/lib/app/j.db")),
            (":memory:", None),
            ("", None),
            ("file:j.db", Some("j.db")),
            ("file:j.db?mode=rwc&cache=shared", Some("j.db")),
            ("file:///var/lib/j%20x.db", Some("/var/lib/j x.db")),
            ("file://localhost/var/lib/j.db", Some("/var/lib/j.db")),
            ("file:j.db?mode=memory", None),
            ("file::memory:", None),
        ];
        for (path, expected) in table {
            assert_eq!(
                file_of(Path::new(path)),
                expected.map(PathBuf::from),
                "{path}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn new_files_are_owner_only_and_an_existing_one_is_left_as_it_is() {
        use std::os::unix::fs::PermissionsExt;

        let dir = std::env::temp_dir().join(format!("storage-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;

        let fresh = dir.join("fresh.db");
        prepare_owner_only(&fresh, "test rows").unwrap();
        for suffix in ["", "-wal", "-shm"] {
            let file = PathBuf::from(format!("{}{suffix}", fresh.display()));
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }

        let shared = dir.join("shared.db");
        std::fs::write(&shared, b"").unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
        let uri = format!("file:{}?mode=rwc", shared.display());
        prepare_owner_only(Path::new(&uri), "test rows").unwrap();
        assert_eq!(mode(&shared), 0o644, "an existing file is not changed");
        assert_eq!(
            mode(&dir.join("shared.db-wal")),
            0o600,
            "its new -wal is owner-only"
        );

        let missing = dir.join("no-such-dir").join("x.db");
        let error = prepare_owner_only(&missing, "test rows").unwrap_err();
        assert_eq!(error.operation(), "create");
        assert_eq!(error.path(), missing);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
