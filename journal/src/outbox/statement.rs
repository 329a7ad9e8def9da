//! The enqueue as one statement and its parameters: what every driver runs
//! inside the caller's transaction, and the driver-neutral form for the rest
//! (diesel, a driver of your own).

use std::time::SystemTime;

use crate::headers;
use crate::record::{duration_millis, to_millis, NewIntent};
use crate::state::IntentState;

/// The SQL dialect of the database that holds the journal's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Dialect {
    /// SQLite: `?n` placeholders; "now" is a parameter (the SQLite journal's
    /// clock is the application's).
    Sqlite,
    /// PostgreSQL: `$n` placeholders; "now" is the database's clock, as for
    /// every other timestamp of a PostgreSQL journal.
    Postgres,
}

/// One parameter of an [`OutboxStatement`], typed as the column it fills.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutboxValue {
    /// `TEXT`.
    Text(String),
    /// `BOOLEAN` (SQLite: `INTEGER` 0 or 1).
    Bool(bool),
    /// `BYTEA` / `BLOB`.
    Bytes(Vec<u8>),
    /// `BIGINT` / `INTEGER`.
    BigInt(i64),
    /// A `BIGINT` / `INTEGER` `NULL`.
    NullBigInt,
}

/// The enqueue's one `INSERT`, for a driver this crate has no function for:
/// run `sql` with `params` bound in order (`params[0]` is `$1` / `?1`) inside
/// your transaction. It inserts no row when the key is already journaled
/// (`ON CONFLICT DO NOTHING`, so your transaction stays usable): one row
/// affected means enqueued, none means the key was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutboxStatement {
    /// The statement, with numbered placeholders.
    pub sql: &'static str,
    /// The parameters, in placeholder order.
    pub params: Vec<OutboxValue>,
}

/// PostgreSQL: `$1` key, `$2` key_on_wire, `$3` method, `$4` url, `$5` headers,
/// `$6` body, `$7` deadline ms, `$8` retention ms, `$9` queued. Fence and runs
/// start at 0: the relay's claim raises both to 1, as a write-ahead starts.
/// It returns a row when it inserted one (drivers that read rows rather than
/// the affected count tell a taken key by none).
pub(crate) const POSTGRES: &str = concat!(
    "INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body, deadline_ms,
        retention_end_ms, state, fence, runs, due_at_ms, created_ms, updated_ms)
     SELECT $1, $2, $3, $4, $5, $6, $7, c.ms + $8, $9, 0, 0, c.ms, c.ms, c.ms
     FROM (SELECT ",
    pg_now_ms!(),
    " AS ms) c
     ON CONFLICT (key) DO NOTHING
     RETURNING 1"
);

/// SQLite: as [`POSTGRES`], and `?10` now ms.
pub(crate) const SQLITE: &str = "
    INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body, deadline_ms,
        retention_end_ms, state, fence, runs, due_at_ms, created_ms, updated_ms)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?10 + ?8, ?9, 0, 0, ?10, ?10, ?10)
    ON CONFLICT (key) DO NOTHING";

/// The parameters both dialects share, `$1`…`$9`.
pub(crate) struct Columns<'a> {
    pub(crate) key: &'a str,
    pub(crate) key_on_wire: bool,
    pub(crate) method: &'a str,
    pub(crate) url: &'a str,
    pub(crate) headers: Vec<u8>,
    pub(crate) body: &'a [u8],
    pub(crate) deadline_ms: Option<i64>,
    pub(crate) retention_ms: i64,
    pub(crate) state: &'static str,
}

impl<'a> Columns<'a> {
    pub(crate) fn of(intent: &'a NewIntent) -> Self {
        Self {
            key: &intent.key,
            key_on_wire: intent.key_on_wire,
            method: intent.method.as_str(),
            url: &intent.url,
            headers: headers::encode(&intent.headers),
            body: &intent.body,
            deadline_ms: intent.deadline.map(duration_millis),
            retention_ms: duration_millis(intent.retention),
            state: IntentState::Queued.as_str(),
        }
    }
}

/// The driver-neutral form of an enqueue.
pub(crate) fn statement(intent: &NewIntent, dialect: Dialect) -> OutboxStatement {
    let c = Columns::of(intent);
    let mut params = vec![
        OutboxValue::Text(c.key.to_owned()),
        OutboxValue::Bool(c.key_on_wire),
        OutboxValue::Text(c.method.to_owned()),
        OutboxValue::Text(c.url.to_owned()),
        OutboxValue::Bytes(c.headers),
        OutboxValue::Bytes(c.body.to_vec()),
        c.deadline_ms
            .map_or(OutboxValue::NullBigInt, OutboxValue::BigInt),
        OutboxValue::BigInt(c.retention_ms),
        OutboxValue::Text(c.state.to_owned()),
    ];
    let sql = match dialect {
        Dialect::Postgres => POSTGRES,
        Dialect::Sqlite => {
            params.push(OutboxValue::BigInt(to_millis(SystemTime::now())));
            SQLITE
        }
    };
    OutboxStatement { sql, params }
}
