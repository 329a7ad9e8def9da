//! The acknowledgement's statements, shared by the stores and the driver forms
//! that run them in the application's transaction. States are bound (from
//! `IntentState::as_str`), except in the unacknowledged page, which must name
//! its index's predicate (see `terminal_states!`).

use crate::state::IntentState;

/// The states with a result to deliver, in the order the statements bind them.
pub(crate) const TERMINAL: [IntentState; 3] = [
    IntentState::Succeeded,
    IntentState::Failed,
    IntentState::Abandoned,
];

/// The terminal states as the unacknowledged index's predicate writes them
/// (`migrations/*/0005_narrow_write_path.sql`): a planner uses a partial index
/// only for a statement whose condition implies its predicate, and a bound
/// state implies nothing. Checked against [`TERMINAL`] by a test below.
macro_rules! terminal_states {
    () => {
        "('succeeded', 'failed', 'abandoned')"
    };
}

/// SQLite: `?1` key, `?2` now ms, `?3`…`?5` the terminal states. One row
/// changed means this call acknowledged it.
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE_ACKNOWLEDGE: &str = "
    UPDATE journal_intents SET acknowledged_ms = ?2
    WHERE key = ?1 AND state IN (?3, ?4, ?5) AND acknowledged_ms IS NULL";

/// SQLite: `?1` key. Where the row stands when the update changed nothing.
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE_STATE: &str = "SELECT state FROM journal_intents WHERE key = ?1";

/// SQLite: `?1` limit. Walks the `journal_intents_unacknowledged` index,
/// named: left to itself, SQLite's planner takes the `state IN (…)` term to an
/// index on `state` and sorts every terminal row, acknowledged history
/// included (the test below saw it).
#[cfg(feature = "sqlite")]
pub(crate) const SQLITE_UNACKNOWLEDGED: &str = concat!(
    "SELECT * FROM journal_intents INDEXED BY journal_intents_unacknowledged
     WHERE acknowledged_ms IS NULL AND state IN ",
    terminal_states!(),
    "
     ORDER BY updated_ms, key
     LIMIT ?1"
);

/// PostgreSQL: `$1` key, `$2`…`$4` the terminal states. One statement, one
/// row: `state` as the statement's snapshot saw it (NULL: no such key) and
/// `first`, whether this statement acknowledged it. A concurrent
/// acknowledgement holds the row until it commits; this one then changes
/// nothing and reports `first` false. The condition is kept on the row (see
/// `on_the_row!` in the store's queries) so the key's index finds it.
#[cfg(any(feature = "postgres", feature = "sqlx"))]
pub(crate) const POSTGRES_ACKNOWLEDGE: &str = concat!(
    "WITH acknowledged AS (
         UPDATE journal_intents SET acknowledged_ms = ",
    pg_now_ms!(),
    "
         WHERE key = $1 AND (state IN ($2, $3, $4) AND acknowledged_ms IS NULL) IS TRUE
         RETURNING 1)
     SELECT i.state, EXISTS (SELECT 1 FROM acknowledged) AS first
     FROM (SELECT 1) one LEFT JOIN journal_intents i ON i.key = $1"
);

/// PostgreSQL: `$1` limit (see [`SQLITE_UNACKNOWLEDGED`]).
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES_UNACKNOWLEDGED: &str = concat!(
    "SELECT * FROM journal_intents
     WHERE acknowledged_ms IS NULL AND state IN ",
    terminal_states!(),
    "
     ORDER BY updated_ms, key
     LIMIT $1"
);

#[cfg(test)]
mod terminal_states_tests {
    use super::TERMINAL;
    use crate::state::IntentState;

    #[test]
    fn the_written_states_are_the_terminal_ones() {
        let names = TERMINAL.map(|state| format!("'{}'", state.as_str()));
        assert_eq!(terminal_states!(), format!("({})", names.join(", ")));
        let terminal = IntentState::ALL.iter().filter(|state| state.is_terminal());
        assert!(
            terminal.eq(TERMINAL.iter()),
            "TERMINAL is every terminal state"
        );
    }
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;

    /// The unacknowledged page walks its partial index, whose predicate names
    /// no state, though the states are bound parameters.
    #[test]
    fn the_sqlite_page_walks_the_unacknowledged_index() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        for step in crate::migrations::SQLITE.steps() {
            conn.execute_batch(step.sql()).unwrap();
        }
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {SQLITE_UNACKNOWLEDGED}"))
            .unwrap()
            .query_map(rusqlite::params![10], |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let plan = plan.join("\n");
        assert!(
            plan.contains("journal_intents_unacknowledged") && !plan.contains("TEMP B-TREE"),
            "{plan}"
        );
    }
}
