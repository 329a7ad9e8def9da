//! The stored row, as both backends read it (by column name), and its
//! conversion to a record.

use crate::error::JournalError;
use crate::headers;
use crate::record::{from_millis, IntentRecord};

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
    pub(crate) incarnation: Option<String>,
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

/// Reads `RawRow` from a driver's row by column name: `read_row!(row, get)`
/// calls `row.get("key")?` and so on for every column.
macro_rules! read_row {
    ($row:expr, $get:ident) => {
        $crate::row::RawRow {
            key: $row.$get("key")?,
            key_on_wire: $row.$get("key_on_wire")?,
            method: $row.$get("method")?,
            url: $row.$get("url")?,
            headers: $row.$get("headers")?,
            body: $row.$get("body")?,
            deadline_ms: $row.$get("deadline_ms")?,
            retention_end_ms: $row.$get("retention_end_ms")?,
            state: $row.$get("state")?,
            owner: $row.$get("owner")?,
            incarnation: $row.$get("incarnation")?,
            lease_until_ms: $row.$get("lease_until_ms")?,
            fence: $row.$get("fence")?,
            runs: $row.$get("runs")?,
            due_at_ms: $row.$get("due_at_ms")?,
            status: $row.$get::<_, Option<i32>>("status")?.map(i64::from),
            locator: $row.$get("locator")?,
            detail: $row.$get("detail")?,
            created_ms: $row.$get("created_ms")?,
            updated_ms: $row.$get("updated_ms")?,
        }
    };
}
pub(crate) use read_row;

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
                .map(idempotency_storage::millis::to_duration),
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
            incarnation: self.incarnation,
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

/// Counts as `u64` (a negative count from a driver means none).
pub(crate) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
