//! The stored row, as both backends read it, and its conversion to a record.

use std::time::Duration;

use crate::error::JournalError;
use crate::headers;
use crate::record::{from_millis, IntentRecord};

/// The columns in the order every query selects them.
pub(crate) const COLUMNS: [&str; 19] = [
    "key",
    "key_on_wire",
    "method",
    "url",
    "headers",
    "body",
    "deadline_ms",
    "retention_end_ms",
    "state",
    "owner",
    "lease_until_ms",
    "fence",
    "runs",
    "due_at_ms",
    "status",
    "locator",
    "detail",
    "created_ms",
    "updated_ms",
];

/// `t.key, t.key_on_wire, …` for a SELECT or RETURNING list.
pub(crate) fn column_list(table_alias: &str) -> String {
    COLUMNS
        .iter()
        .map(|column| format!("{table_alias}{column}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One row with the database's primitive types.
#[derive(Debug)]
pub(crate) struct RawRow {
    pub(crate) key: String,
    pub(crate) key_on_wire: bool,
    pub(crate) method: String,
    pub(crate) url: String,
    pub(crate) headers: Vec<u8>,
    pub(crate) body: Vec<u8>,
    pub(crate) deadline_ms: Option<i64>,
    pub(crate) retention_end_ms: i64,
    pub(crate) state: String,
    pub(crate) owner: Option<String>,
    pub(crate) lease_until_ms: Option<i64>,
    pub(crate) fence: i64,
    pub(crate) runs: i64,
    pub(crate) due_at_ms: Option<i64>,
    pub(crate) status: Option<i64>,
    pub(crate) locator: Option<String>,
    pub(crate) detail: Option<String>,
    pub(crate) created_ms: i64,
    pub(crate) updated_ms: i64,
}

impl RawRow {
    pub(crate) fn into_record(self) -> Result<IntentRecord, JournalError> {
        let invalid = |what: String| JournalError::InvalidRecord(what);
        Ok(IntentRecord {
            method: self
                .method
                .parse()
                .map_err(|_| invalid(format!("method {:?}", self.method)))?,
            headers: headers::decode(&self.headers)?,
            deadline: self
                .deadline_ms
                .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
            retention_end: from_millis(self.retention_end_ms),
            state: self
                .state
                .parse()
                .map_err(|e: crate::state::UnknownState| invalid(e.to_string()))?,
            lease_until: self.lease_until_ms.map(from_millis),
            due_at: self.due_at_ms.map(from_millis),
            status: self
                .status
                .map(|s| u16::try_from(s).map_err(|_| invalid(format!("status {s}"))))
                .transpose()?,
            created_at: from_millis(self.created_ms),
            updated_at: from_millis(self.updated_ms),
            key: self.key,
            key_on_wire: self.key_on_wire,
            url: self.url,
            body: self.body,
            owner: self.owner,
            fence: self.fence,
            runs: self.runs,
            locator: self.locator,
            detail: self.detail,
        })
    }
}

/// `usize` limits as SQL integers (a limit past `i64::MAX` means "all").
pub(crate) fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}
