//! Every statement the PostgreSQL store runs, in one place. Each is prepared once
//! per connection. State names are bound parameters (from `IntentState::as_str`);
//! the one exception is `open_states!`, the open rows' index predicate, which a
//! statement must name as written for its generic plan to use that index. Rows
//! are read by column name (`RETURNING t.*`), and every timestamp comes from the
//! database's clock.

use tokio_postgres::{Client, Statement};

/// The channel outbox commits are announced on.
macro_rules! channel {
    () => {
        "reqwest_resilience_journal"
    };
}

/// A condition kept out of index matching: the statement finds its row by the
/// primary key alone, and checks this on that row. Written bare, a state check
/// (`state = $8`) matches the listing index's first column (`state, created_ms,
/// key`), and a generic plan made on a new table picks that index — then every
/// update walks all open rows of that state.
macro_rules! on_the_row {
    ($condition:literal) => {
        concat!("(", $condition, ") IS TRUE")
    };
}

/// The open states as `journal_intents_open`'s predicate writes them
/// (`migrations/postgres/0005_narrow_write_path.sql`): a partial index serves a
/// generic plan only when the statement's condition implies its predicate, and
/// a bound state implies nothing. Checked against `IntentState` by a test below.
macro_rules! open_states {
    () => {
        "('queued', 'in_flight', 'unknown')"
    };
}

/// The rows worker `$1` (incarnation `$2`) may claim at `$now`: due `unknown`
/// (`$3`) and `queued` (`$queued`) rows, ended `in_flight` (`$4`) leases, and
/// leases its own name holds under another incarnation (a dead predecessor's).
/// Every one is open: the condition says so first, for the open rows' index.
macro_rules! claimable {
    ($now:literal, $queued:literal) => {
        concat!(
            "(i.state IN ",
            open_states!(),
            " AND ((i.state IN ($3, ",
            $queued,
            ") AND i.due_at_ms <= ",
            $now,
            ") OR (i.state = $4 AND (i.lease_until_ms <= ",
            $now,
            " OR (i.owner = $1 AND i.incarnation IS DISTINCT FROM $2)))))"
        )
    };
}

/// `$1` key, `$2` key_on_wire, `$3` method, `$4` url, `$5` headers, `$6` body,
/// `$7` deadline ms, `$8` retention ms, `$9` owner, `$10` incarnation, `$11` lease
/// ms, `$12` in_flight. Run inside a transaction: it also returns the
/// transaction's id, to ask its status if the answer to `COMMIT` is lost.
pub(super) const WRITE_AHEAD: &str = concat!(
    "INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body,
        deadline_ms, retention_end_ms, state, owner, incarnation, lease_until_ms, fence, runs,
        created_ms, updated_ms)
     SELECT $1, $2, $3, $4, $5, $6, $7, c.ms + $8, $12, $9, $10, c.ms + $11, 1, 1, c.ms, c.ms
     FROM (SELECT ",
    pg_now_ms!(),
    " AS ms) c
     ON CONFLICT (key) DO NOTHING
     RETURNING lease_until_ms, pg_current_xact_id()::text AS xid"
);

/// `$1` key, `$2` in_flight, `$3` owner, `$4` incarnation, `$5` fence: ends a
/// lease nobody is sending under (see `unsent.rs`), while the run that took it
/// still holds it.
pub(super) const END_UNSENT_LEASE: &str = concat!(
    "UPDATE journal_intents SET lease_until_ms = ",
    pg_now_ms!(),
    ", updated_ms = ",
    pg_now_ms!(),
    "
     WHERE key = $1 AND ",
    on_the_row!("state = $2 AND fence = $5 AND owner = $3 AND incarnation = $4")
);

/// `$1` owner, `$2` incarnation, `$3` unknown, `$4` in_flight, `$5` lease ms,
/// `$6` limit, `$7` queued.
pub(super) const CLAIM: &str = concat!(
    "WITH clock AS (SELECT ",
    pg_now_ms!(),
    " AS ms),
     due AS (
         SELECT i.key FROM journal_intents i, clock
         WHERE ",
    claimable!("clock.ms", "$7"),
    "
         ORDER BY COALESCE(i.due_at_ms, i.lease_until_ms), i.created_ms
         LIMIT $6
         FOR UPDATE OF i SKIP LOCKED)
     UPDATE journal_intents t
     SET state = $4, owner = $1, incarnation = $2, lease_until_ms = clock.ms + $5,
         fence = t.fence + 1, runs = t.runs + 1, due_at_ms = NULL, updated_ms = clock.ms
     FROM due, clock
     WHERE t.key = due.key
     RETURNING t.*, clock.ms AS now_ms"
);

/// `$1` owner, `$2` incarnation, `$3` unknown, `$4` in_flight, `$5` lease ms,
/// `$6` key, `$7` queued: one key, when nobody may be sending it (see
/// `JournalStore::take_over`).
pub(super) const TAKE_OVER: &str = concat!(
    "WITH clock AS (SELECT ",
    pg_now_ms!(),
    " AS ms)
     UPDATE journal_intents t
     SET state = $4, owner = $1, incarnation = $2, lease_until_ms = clock.ms + $5,
         fence = t.fence + 1, runs = t.runs + 1, due_at_ms = NULL, updated_ms = clock.ms
     FROM clock
     WHERE t.key = $6 AND (t.state IN ($3, $7) OR (t.state = $4 AND (t.lease_until_ms <= clock.ms
         OR (t.owner = $1 AND t.incarnation IS DISTINCT FROM $2))))
     RETURNING t.*, clock.ms AS now_ms"
);

/// `$1` state, `$2` status, `$3` locator, `$4` detail, `$5` due in ms, `$6` key,
/// `$7` fence, `$8` in_flight, `$9` runs given back.
pub(super) const RECORD: &str = concat!(
    "UPDATE journal_intents
     SET state = $1, status = COALESCE($2, status), locator = $3, detail = $4,
         runs = runs - $9, due_at_ms = ",
    pg_now_ms!(),
    " + $5, lease_until_ms = NULL, updated_ms = ",
    pg_now_ms!(),
    "
     WHERE key = $6 AND fence = $7 AND ",
    on_the_row!("state = $8")
);

/// `$1` a transaction id (`xid8` as text): `committed`, `aborted`, `in progress`,
/// or NULL when it is too old to know.
pub(super) const XACT_STATUS: &str = "SELECT pg_xact_status($1::text::xid8)";

/// `$1` key.
pub(super) const GET: &str = "SELECT * FROM journal_intents WHERE key = $1";

/// `$1` state, `$2` after created ms, `$3` after key, `$4` limit.
pub(super) const LIST: &str = "SELECT * FROM journal_intents
     WHERE state = $1 AND (created_ms, key) > ($2, $3)
     ORDER BY created_ms, key
     LIMIT $4";

/// `$1` owner, `$2` incarnation, `$3` unknown, `$4` in_flight, `$5` queued.
pub(super) const BACKLOG: &str = concat!(
    "SELECT
        COUNT(*) FILTER (WHERE ",
    claimable!("c.ms", "$5"),
    ") AS due,
        COUNT(*) FILTER (WHERE i.state = $4 AND NOT ",
    claimable!("c.ms", "$5"),
    ") AS leased,
        MIN(i.lease_until_ms) FILTER (WHERE i.state = $4 AND NOT ",
    claimable!("c.ms", "$5"),
    ") AS leased_until_ms,
        COUNT(*) FILTER (WHERE i.state IN ($3, $5) AND i.due_at_ms > c.ms) AS waiting,
        MIN(i.due_at_ms) FILTER (WHERE i.state IN ($3, $5) AND i.due_at_ms > c.ms)
            AS next_due_ms,
        MIN(c.ms) AS now_ms
     FROM (SELECT ",
    pg_now_ms!(),
    " AS ms) c
     LEFT JOIN journal_intents i ON i.state IN ",
    open_states!(),
    " AND i.state IN ($3, $4, $5)"
);

/// `$1` reason, `$2` key, `$3` abandoned, `$4` in_flight, `$5` unknown, `$6` queued.
pub(super) const ABANDON: &str = concat!(
    "UPDATE journal_intents
     SET state = $3, detail = $1, fence = fence + 1,
         lease_until_ms = NULL, due_at_ms = NULL, updated_ms = ",
    pg_now_ms!(),
    "
     WHERE key = $2 AND ",
    on_the_row!("state IN ($4, $5, $6)")
);

/// `$1` older than ms, `$2` succeeded, `$3` failed, `$4` abandoned.
pub(super) const PRUNE: &str = concat!(
    "DELETE FROM journal_intents
     WHERE state IN ($2, $3, $4) AND updated_ms <= ",
    pg_now_ms!(),
    " - $1"
);

/// Wakes the relays listening on the database (see `listen`). Sent after the
/// caller's commit, outside its transaction: a `NOTIFY` inside it would take a
/// database-wide lock at commit and serialise every committing business
/// transaction.
const ANNOUNCE: &str = concat!("SELECT pg_notify('", channel!(), "', '')");

/// What a relay's store runs on its listening connection.
pub(super) const LISTEN: &str = concat!("LISTEN ", channel!());

/// The statements, prepared on one connection.
#[derive(Debug)]
pub(super) struct Statements {
    pub(super) write_ahead: Statement,
    pub(super) claim: Statement,
    pub(super) take_over: Statement,
    pub(super) record: Statement,
    pub(super) get: Statement,
    pub(super) list: Statement,
    pub(super) backlog: Statement,
    pub(super) abandon: Statement,
    pub(super) prune: Statement,
    pub(super) announce: Statement,
    pub(super) unacknowledged: Statement,
    pub(super) acknowledge: Statement,
}

impl Statements {
    pub(super) async fn prepare(client: &Client) -> Result<Self, tokio_postgres::Error> {
        Ok(Self {
            write_ahead: client.prepare(WRITE_AHEAD).await?,
            claim: client.prepare(CLAIM).await?,
            take_over: client.prepare(TAKE_OVER).await?,
            record: client.prepare(RECORD).await?,
            get: client.prepare(GET).await?,
            list: client.prepare(LIST).await?,
            backlog: client.prepare(BACKLOG).await?,
            abandon: client.prepare(ABANDON).await?,
            prune: client.prepare(PRUNE).await?,
            announce: client.prepare(ANNOUNCE).await?,
            unacknowledged: client
                .prepare(crate::delivery::POSTGRES_UNACKNOWLEDGED)
                .await?,
            acknowledge: client
                .prepare(crate::delivery::POSTGRES_ACKNOWLEDGE)
                .await?,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::state::IntentState;

    #[test]
    fn the_written_open_states_are_every_state_not_terminal() {
        let names: Vec<String> = IntentState::ALL
            .iter()
            .filter(|state| !state.is_terminal())
            .map(|state| format!("'{}'", state.as_str()))
            .collect();
        assert_eq!(open_states!(), format!("({})", names.join(", ")));
    }
}
