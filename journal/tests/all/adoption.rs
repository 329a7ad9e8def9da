//! Journal files made before `journal_schema_versions` — when the version was
//! `PRAGMA user_version` (0.2.0 before its release) or nothing at all (0.1.0) —
//! are adopted at the version their `journal_intents` table has, migrated
//! forward with their rows, and their `user_version` is left as it was. A table
//! of no shape the journal ever had is refused, naming what it lacks, and the
//! file is left unchanged.

use std::path::PathBuf;
use std::time::Duration;

use reqwest_resilience_journal::rusqlite::Connection;
use reqwest_resilience_journal::{IntentState, JournalError, JournalStore, SqliteStore, Worker};

use crate::support::schema::{all_steps, journal_versions, user_version, LATEST};
use crate::support::sqlite_path;

/// The SQLite migrations as they shipped; an older release ran the first
/// `version` of them.
const STEPS: [&str; 3] = [
    include_str!("../../migrations/sqlite/0001_initial.sql"),
    include_str!("../../migrations/sqlite/0002_worker_incarnation.sql"),
    include_str!("../../migrations/sqlite/0003_outbox_queued.sql"),
];

/// A row in version 1's columns (every later version has them): an `unknown`
/// intent due long ago.
const ROW: &str = "INSERT INTO journal_intents (key, key_on_wire, method, url, headers,
    body, deadline_ms, retention_end_ms, state, owner, lease_until_ms, fence, runs, due_at_ms,
    status, locator, detail, created_ms, updated_ms)
    VALUES ('old-1', 1, 'POST', 'http://127.0.0.1:9/payments',
    X'636F6E74656E742D747970653A206170706C69636174696F6E2F6A736F6E0D0A',
    X'7B7D', 5000, 9999999999999, 'unknown', 'worker-old', NULL, 3, 3, 1000,
    NULL, NULL, 'response lost', 1000, 1000)";

/// A journal file as an older release left it: its schema at `version`, the
/// `user_version` it holds, one intent.
fn old_journal(test: &str, version: usize, user_version: u32) -> PathBuf {
    let path = sqlite_path(test);
    let conn = Connection::open(&path).unwrap();
    for sql in &STEPS[..version] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", user_version)
        .unwrap();
    conn.execute(ROW, []).unwrap();
    path
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Opens the file with this crate and checks that it is a latest-version
/// journal holding the old row, claimable, and that `queued` is now allowed.
fn open_and_check(path: &PathBuf, case: &str) {
    let store = SqliteStore::open(path).unwrap_or_else(|error| panic!("{case}: {error}"));
    assert_eq!(store.schema_version().unwrap(), LATEST, "{case}");
    runtime().block_on(async {
        let row = store.get("old-1").await.unwrap().expect("the old row");
        assert_eq!(row.state, IntentState::Unknown, "{case}");
        assert_eq!((row.fence, row.runs), (3, 3), "{case}");
        assert_eq!(row.body, b"{}", "{case}");
        assert_eq!(row.headers["content-type"], "application/json", "{case}");
        let claimed = store
            .claim(&Worker::new("upgraded"), Duration::from_secs(60), 10)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1, "{case}: the old row is claimable");
        assert_eq!(claimed[0].record.fence, 4, "{case}");
    });
    drop(store);
    // Version 3's CHECK: an outbox row may be written.
    Connection::open(path)
        .unwrap()
        .execute("UPDATE journal_intents SET state = 'queued'", [])
        .unwrap_or_else(|error| panic!("{case}: state queued refused: {error}"));
}

#[test]
fn older_journal_files_are_adopted_migrated_and_keep_their_rows() {
    // (release, schema version it wrote, user_version it left)
    let cases = [
        // 0.1.0 had one schema, version 1, and recorded no version.
        ("0.1.0", 1, 0),
        // 0.2.0 before the outbox (a9decec): schema 2 in user_version.
        ("0.2.0-schema-2", 2, 2),
        // 0.2.0 as it stood before this change: schema 3 in user_version.
        ("0.2.0", 3, 3),
    ];
    for (release, version, old_user_version) in cases {
        let path = old_journal(release, version, old_user_version);
        open_and_check(&path, release);
        assert_eq!(journal_versions(&path), all_steps(), "{release}");
        assert_eq!(
            user_version(&path),
            old_user_version,
            "{release}: user_version is not the journal's to write"
        );
        // The next open reads the table and changes nothing.
        SqliteStore::open(&path).unwrap();
        assert_eq!(journal_versions(&path), all_steps(), "{release}: again");
    }
}

#[test]
fn an_old_journal_whose_user_version_the_application_rewrote_is_adopted_by_its_table() {
    // The application's migrations wrote user_version after the old journal did:
    // the table, not the pragma, says where the journal is. (5 over a version 3
    // journal was refused as "newer than this crate's 3; upgrade".)
    let cases = [(3, 5), (3, 1), (1, 2), (2, 7)];
    for (version, application) in cases {
        let case = format!("schema {version} under user_version {application}");
        let path = old_journal(&format!("rewritten-{version}-{application}"), version, 0);
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", application)
            .unwrap();
        open_and_check(&path, &case);
        assert_eq!(journal_versions(&path), all_steps(), "{case}");
        assert_eq!(user_version(&path), application, "{case}");
    }
}

#[test]
fn a_journal_table_of_no_known_shape_is_refused_naming_what_it_lacks() {
    // (name, schema version, what the file's owner changed, what the error says)
    let cases: [(&str, usize, &str, &[&str]); 5] = [
        (
            "dropped-column",
            3,
            "ALTER TABLE journal_intents DROP COLUMN detail",
            &["nearest is version 3", "lacks column `detail TEXT`"],
        ),
        (
            "extra-column",
            1,
            "ALTER TABLE journal_intents ADD COLUMN note TEXT",
            &["nearest is version 1", "has beyond it column `note TEXT`"],
        ),
        (
            "dropped-index",
            2,
            "DROP INDEX journal_intents_listing",
            &[
                "nearest is version 2",
                "lacks index `journal_intents_listing (state, created_ms, key)`",
            ],
        ),
        (
            "half-of-version-2",
            1,
            "ALTER TABLE journal_intents ADD COLUMN incarnation TEXT",
            // One difference from version 1, two (indexes) from version 2.
            &[
                "nearest is version 1",
                "has beyond it column `incarnation TEXT`",
            ],
        ),
        (
            "a-view",
            0,
            "CREATE TABLE intents (key TEXT);
             CREATE VIEW journal_intents AS SELECT key FROM intents",
            &["`journal_intents` is a view"],
        ),
    ];
    for (name, version, change, expected) in cases {
        let path = sqlite_path(name);
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &STEPS[..version] {
                conn.execute_batch(sql).unwrap();
            }
            conn.execute_batch(change).unwrap();
            conn.pragma_update(None, "user_version", 3).unwrap();
        }
        let error = SqliteStore::open(&path).unwrap_err();
        assert!(
            matches!(error, JournalError::Schema(_)),
            "{name}: {error:?}"
        );
        let text = error.to_string();
        for words in expected {
            assert!(text.contains(words), "{name}: {text:?} lacks {words:?}");
        }
        assert!(
            journal_versions(&path).is_empty(),
            "{name}: nothing recorded"
        );
        assert_eq!(user_version(&path), 3, "{name}: user_version untouched");
    }
}

#[test]
fn an_old_journal_opened_on_several_connections_at_once_is_adopted_once() {
    // Adoption runs inside the migration's write transaction: the first open
    // records the versions, the others wait on the lock and find them.
    let path = old_journal("adopted-together", 2, 2);
    let opens: Vec<_> = (0..6)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || SqliteStore::open(path).map(|s| s.schema_version()))
        })
        .collect();
    for open in opens {
        let version = open.join().unwrap().expect("opened").expect("version");
        assert_eq!(version, LATEST);
    }
    assert_eq!(journal_versions(&path), all_steps(), "each version once");
    assert_eq!(user_version(&path), 2);
}
