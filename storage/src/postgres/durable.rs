//! Durable commits for a store's own sessions, whatever the server's tuning.

/// Raises `synchronous_commit` from `off` to `on` for the session that runs it.
///
/// With `off` a `COMMIT` is answered before its WAL reaches the disk, so a
/// crash of the server loses transactions a store already acknowledged — a
/// journal's write-ahead whose intent was then sent, a server's stored answer
/// whose effect happened. Any other value (`local`, `remote_write`, `on`,
/// `remote_apply`) waits for the local disk at least and is the user's choice:
/// it is kept, never lowered. Run once per connection, after connecting.
pub const DURABLE_COMMITS: &str = "SELECT set_config('synchronous_commit', 'on', false) \
     WHERE current_setting('synchronous_commit') = 'off'";
