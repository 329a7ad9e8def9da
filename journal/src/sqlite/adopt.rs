//! Adopting a journal file made before the schema's version had a table of its
//! own.
//!
//! Up to 0.2.0 the SQLite journal recorded its schema version in `PRAGMA
//! user_version` (0.1.0 recorded nothing: its one schema is version 1). That
//! pragma is one value per file, and an application that shares the file with
//! the journal — its business tables beside an outbox — uses it for its own
//! migrations (as `rusqlite_migration` does). So the value proves nothing: an
//! application's 2 is not the journal's 2. The journal now records its version
//! in `journal_schema_versions`; the first time that table is empty, the
//! version is read from what the journal's table *is*:
//!
//! * no `journal_intents` table: nothing of the journal's is there (whatever
//!   `user_version` says: it is the application's); a fresh schema is created;
//! * `journal_intents` with exactly the columns and `state` CHECK of version
//!   1, 2 or 3, and at least that version's indexes: adopted at that version,
//!   then migrated forward. `user_version` is not consulted: an application
//!   may have overwritten the journal's value after the journal wrote it;
//! * `journal_intents` of any other shape: refused, naming what it lacks and
//!   has beyond the nearest version; nothing is changed.
//!
//! The shapes below are frozen: a file written from now on carries the
//! versions table and is never adopted, so a version 4 needs no shape here.

use std::collections::BTreeSet;

use idempotency_storage::BoxError;
use rusqlite::Connection;

use super::shape::{self, Found, Shape};

/// The journal's table.
const TABLE: &str = "journal_intents";

/// Version 1's columns (`migrations/sqlite/0001_initial.sql`; 0.1.0's schema).
const V1_COLUMNS: &[&str] = &[
    "key TEXT NOT NULL PRIMARY KEY",
    "key_on_wire INTEGER NOT NULL",
    "method TEXT NOT NULL",
    "url TEXT NOT NULL",
    "headers BLOB NOT NULL",
    "body BLOB NOT NULL",
    "deadline_ms INTEGER",
    "retention_end_ms INTEGER NOT NULL",
    "state TEXT NOT NULL",
    "owner TEXT",
    "lease_until_ms INTEGER",
    "fence INTEGER NOT NULL",
    "runs INTEGER NOT NULL",
    "due_at_ms INTEGER",
    "status INTEGER",
    "locator TEXT",
    "detail TEXT",
    "created_ms INTEGER NOT NULL",
    "updated_ms INTEGER NOT NULL",
];

/// Version 1's `CHECK (state IN (…))`.
const V1_STATES: &[&str] = &["in_flight", "succeeded", "failed", "unknown", "abandoned"];

/// Version 1's index.
const V1_INDEXES: &[(&str, &[&str])] = &[(
    "journal_intents_due",
    &["state", "due_at_ms", "lease_until_ms"],
)];

/// Version 2 (`0002_worker_incarnation.sql`) adds a column and two indexes.
const V2_COLUMN: &str = "incarnation TEXT";
const V2_INDEXES: &[(&str, &[&str])] = &[
    ("journal_intents_owner", &["owner", "state"]),
    ("journal_intents_listing", &["state", "created_ms", "key"]),
];

/// Version 3 (`0003_outbox_queued.sql`) rebuilds the table with one more
/// state in its CHECK; columns and indexes are version 2's.
const V3_STATE: &str = "queued";

/// The newest version a file without the versions table can be at.
const ADOPTABLE: u32 = 3;

/// The shape of `journal_intents` at `version` (1..=[`ADOPTABLE`]).
fn expected(version: u32) -> Shape {
    let owned = |items: &[&str]| items.iter().map(|&item| item.to_owned()).collect();
    let indexes = |items: &[(&str, &[&str])]| {
        items
            .iter()
            .map(|(name, columns)| shape::index(name, columns))
            .collect::<BTreeSet<_>>()
    };
    let mut shape = Shape {
        columns: owned(V1_COLUMNS),
        states: owned(V1_STATES),
        indexes: indexes(V1_INDEXES),
    };
    if version >= 2 {
        shape.columns.insert(V2_COLUMN.to_owned());
        shape.indexes.extend(indexes(V2_INDEXES));
    }
    if version >= 3 {
        shape.states.insert(V3_STATE.to_owned());
    }
    shape
}

/// How a file's table differs from one version's shape. Extra indexes are the
/// operator's own and do not count; extra columns or states do.
#[derive(Debug, Default)]
struct Difference {
    lacks: Vec<String>,
    has_beyond: Vec<String>,
}

impl Difference {
    fn between(expected: &Shape, found: &Shape) -> Self {
        let mut difference = Self::default();
        for column in expected.columns.difference(&found.columns) {
            difference.lacks.push(format!("column `{column}`"));
        }
        for state in expected.states.difference(&found.states) {
            difference
                .lacks
                .push(format!("state '{state}' in the CHECK"));
        }
        for index in expected.indexes.difference(&found.indexes) {
            difference.lacks.push(format!("index `{index}`"));
        }
        for column in found.columns.difference(&expected.columns) {
            difference.has_beyond.push(format!("column `{column}`"));
        }
        for state in found.states.difference(&expected.states) {
            difference
                .has_beyond
                .push(format!("state '{state}' in the CHECK"));
        }
        difference
    }

    fn is_empty(&self) -> bool {
        self.lacks.is_empty() && self.has_beyond.is_empty()
    }

    fn len(&self) -> usize {
        self.lacks.len() + self.has_beyond.len()
    }
}

/// The adoption check `idempotency_storage::sqlite::migrate_adopting` asks
/// when `journal_schema_versions` is empty (the rule: see the module docs).
pub(super) fn adopt(conn: &Connection, user_version: u32) -> Result<Option<u32>, BoxError> {
    let found = match shape::read(conn, TABLE)? {
        Found::Nothing => return Ok(None),
        Found::Other(kind) => {
            return Err(format!("`{TABLE}` is a {kind}, not the journal's table").into())
        }
        Found::Table(found) => found,
    };
    let differences: Vec<(u32, Difference)> = (1..=ADOPTABLE)
        .map(|version| (version, Difference::between(&expected(version), &found)))
        .collect();
    if let Some((version, _)) = differences
        .iter()
        .find(|(_, difference)| difference.is_empty())
    {
        tracing::info!(
            version,
            user_version,
            "adopting a journal file made before journal_schema_versions: \
             its tables are at this version"
        );
        return Ok(Some(*version));
    }
    // The nearest version: fewest differences; on a tie, the one user_version
    // names, then the newer.
    let nearest = differences.into_iter().min_by_key(|(version, difference)| {
        (
            difference.len(),
            *version != user_version,
            std::cmp::Reverse(*version),
        )
    });
    let Some((version, difference)) = nearest else {
        return Err(format!("`{TABLE}` matches no journal schema version").into());
    };
    let mut reason = format!(
        "`{TABLE}` (user_version {user_version}) matches no journal schema version; \
         the nearest is version {version}"
    );
    if !difference.lacks.is_empty() {
        reason.push_str(", and the table lacks ");
        reason.push_str(&difference.lacks.join(", "));
    }
    if !difference.has_beyond.is_empty() {
        reason.push_str(", and the table has beyond it ");
        reason.push_str(&difference.has_beyond.join(", "));
    }
    Err(reason.into())
}
