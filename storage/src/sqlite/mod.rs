//! SQLite plumbing (feature `sqlite`): an owner-only database file, WAL mode
//! switched on while other processes open the same file, "busy" told apart
//! from other failures, a structure check on open, and versioned migrations
//! (with the adoption of files an older build recorded in `user_version`).

mod adopt;
mod busy;
mod file;
mod integrity;
mod migrate;
mod version_record;
mod wal;

pub use busy::{is_busy, DEFAULT_BUSY_TIMEOUT};
pub use file::{file_of, prepare_owner_only};
pub use integrity::quick_check;
pub use migrate::{migrate, migrate_adopting, recorded_version};
pub use wal::switch_to_wal;
