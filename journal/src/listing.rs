//! Listing a state page by page: a cursor after the last row seen.

use crate::record::{to_millis, IntentRecord};

/// Where the next page of a listing starts: after this row (oldest first, by
/// creation time, then key). Stable while rows are added or change state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    pub(crate) created_ms: i64,
    pub(crate) key: String,
}

impl ListCursor {
    /// The cursor after `record`.
    pub fn after(record: &IntentRecord) -> Self {
        Self {
            created_ms: to_millis(record.created_at),
            key: record.key.clone(),
        }
    }

    /// Before every row: the first page.
    pub(crate) fn start() -> Self {
        Self {
            created_ms: i64::MIN,
            key: String::new(),
        }
    }
}

/// One page of [`Journal::list_page`](crate::Journal::list_page).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ListPage {
    /// The rows, oldest first.
    pub records: Vec<IntentRecord>,
    /// The cursor of the next page; `None` when this page was the last.
    pub next: Option<ListCursor>,
}
