//! The journal shares its SQLite file with the application's tables (an
//! outbox): `PRAGMA user_version` is the application's, whether it is set
//! before or after the journal first opens the file, and `rusqlite_migration`
//! (which keeps its version there) runs the application's migrations over the
//! same file before and after the journal. The application's connection uses
//! the journal's re-exported rusqlite, as the README asks.

use std::path::Path;
use std::time::Duration;

use reqwest_resilience_journal::rusqlite::Connection;
use reqwest_resilience_journal::{JournalStore, NewIntent, SqliteStore, Worker};
use rusqlite_migration::{Migrations, M};

use crate::support::schema::{all_steps, journal_versions, user_version, LATEST};
use crate::support::sqlite_path;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Writes intent `key` through the journal.
fn write(store: &SqliteStore, key: &str) {
    let intent = NewIntent::new(key, http::Method::POST, "http://127.0.0.1:9/pay");
    runtime()
        .block_on(store.write_ahead(&intent, &Worker::new("w"), Duration::from_secs(60)))
        .unwrap();
}

/// Whether the journal still holds intent `key`.
fn holds(store: &SqliteStore, key: &str) -> bool {
    runtime().block_on(store.get(key)).unwrap().is_some()
}

/// Opens the journal and checks it is at the latest version, recorded in its
/// own table.
fn open_journal(path: &Path, case: &str) -> SqliteStore {
    let store = SqliteStore::open(path).unwrap_or_else(|error| panic!("{case}: {error}"));
    assert_eq!(store.schema_version().unwrap(), LATEST, "{case}");
    assert_eq!(journal_versions(path), all_steps(), "{case}");
    store
}

#[test]
fn an_application_user_version_set_before_the_journal_is_not_the_journals() {
    // 1 and 3 are versions the journal had; 5 is beyond its newest (it was
    // refused as "newer than this crate's 3"). None is the journal's: no
    // journal table is there, so the journal creates its schema.
    for application in [1, 3, 5] {
        let case = format!("user_version {application} first");
        let path = sqlite_path(&format!("app-first-{application}"));
        Connection::open(&path)
            .unwrap()
            .execute_batch(&format!(
                "CREATE TABLE orders (id INTEGER PRIMARY KEY);
                 PRAGMA user_version = {application};"
            ))
            .unwrap();
        let store = open_journal(&path, &case);
        write(&store, "k1");
        assert!(holds(&store, "k1"), "{case}");
        assert_eq!(user_version(&path), application, "{case}");
        Connection::open(&path)
            .unwrap()
            .execute("INSERT INTO orders (id) VALUES (1)", [])
            .unwrap_or_else(|error| panic!("{case}: the application's table: {error}"));
    }
}

#[test]
fn an_application_user_version_set_after_the_journal_is_left_alone() {
    for application in [1, 2, 4] {
        let case = format!("user_version {application} after");
        let path = sqlite_path(&format!("app-after-{application}"));
        let store = open_journal(&path, &case);
        write(&store, "k1");
        drop(store);
        assert_eq!(user_version(&path), 0, "{case}: the journal wrote none");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", application)
            .unwrap();
        let store = open_journal(&path, &case);
        assert!(holds(&store, "k1"), "{case}");
        write(&store, "k2");
        assert_eq!(user_version(&path), application, "{case}");
    }
}

/// The application's migrations, oldest first. Each later one needs the
/// earlier ones' tables, so one skipped shows as "no such table".
fn application_migrations(count: usize) -> Migrations<'static> {
    let all = [
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL);",
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);",
        "ALTER TABLE orders ADD COLUMN customer INTEGER REFERENCES customers (id);",
        "ALTER TABLE customers ADD COLUMN email TEXT;",
    ];
    Migrations::new(all[..count].iter().map(|sql| M::up(sql)).collect())
}

/// Runs the application's first `count` migrations over the file, as the
/// application does at start-up, and checks each one ran.
fn migrate_application(path: &Path, count: usize, case: &str) {
    let mut conn = Connection::open(path).unwrap();
    application_migrations(count)
        .to_latest(&mut conn)
        .unwrap_or_else(|error| panic!("{case}: the application's migrations: {error}"));
    assert_eq!(user_version(path), count as u32, "{case}");
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('orders') ORDER BY cid")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: &[&str] = if count >= 3 {
        &["id", "amount", "customer"]
    } else {
        &["id", "amount"]
    };
    assert_eq!(columns, expected, "{case}");
}

#[test]
fn rusqlite_migration_runs_the_applications_migrations_before_and_after_the_journal() {
    let path = sqlite_path("rusqlite-migration-before");
    migrate_application(&path, 2, "the application first");
    let store = open_journal(&path, "the journal after two application steps");
    write(&store, "k1");
    drop(store);
    // A third application step: user_version must still be 2, or it is skipped.
    migrate_application(&path, 3, "a third application step");
    let store = open_journal(&path, "the journal after three application steps");
    assert!(holds(&store, "k1"));
    drop(store);
    // A fourth: user_version 4, beyond any journal version.
    migrate_application(&path, 4, "a fourth application step");
    let store = open_journal(&path, "the journal after four application steps");
    assert!(holds(&store, "k1"));
}

#[test]
fn rusqlite_migration_runs_all_the_applications_migrations_after_the_journal_made_the_file() {
    let path = sqlite_path("rusqlite-migration-after");
    let store = open_journal(&path, "the journal first");
    write(&store, "k1");
    drop(store);
    // From user_version 0: every application step runs (had the journal left
    // 3 there, steps 1–3 would be skipped and step 4 fail: no such table).
    migrate_application(&path, 4, "the application after the journal");
    let store = open_journal(&path, "the journal again");
    assert!(holds(&store, "k1"));
    drop(store);
    migrate_application(&path, 4, "the application again: nothing to do");
}
