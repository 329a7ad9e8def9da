//! The outbox: an intent enqueued in the caller's own transaction is sent by a
//! relay after commit — once, with its one key and exact body, re-signed — and
//! never when the transaction rolled back.

use std::time::{Duration, Instant};

use reqwest_resilience_journal::{
    Dialect, IntentState, Journal, JournalError, OutboxValue, SqliteStore,
};

use crate::support::backend::client;
use crate::support::server::Server;
use crate::support::sqlite_path;

/// The longest a woken relay may take in these tests: generous, since the
/// poll interval it must beat is a minute.
const PROMPT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_secs(60);

/// A journal file and a business connection on the same file.
fn sqlite_journal(test: &str) -> (Journal, rusqlite::Connection) {
    let path = sqlite_path(test);
    let journal = Journal::builder(SqliteStore::open(&path).unwrap())
        .worker_name("relay-1")
        .build()
        .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, payment_key TEXT NOT NULL)")
        .unwrap();
    (journal, conn)
}

fn orders(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("SELECT COUNT(*) FROM orders", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_enqueue_is_sent_once_with_its_key_and_body_re_signed() {
    let (journal, mut conn) = sqlite_journal("outbox-commit");
    let server = Server::start().await;
    let client = client(3);
    let intent = journal
        .outbox(
            client
                .post(&server.url)
                .bearer_auth("secret")
                .header("content-type", "application/json")
                .body(r#"{"order":1,"amount":500}"#),
        )
        .unwrap();
    let key = intent.key().to_owned();

    let tx = conn.transaction().unwrap();
    tx.execute(
        "INSERT INTO orders (id, payment_key) VALUES (1, ?1)",
        [&key],
    )
    .unwrap();
    assert_eq!(intent.enqueue_rusqlite(&tx).unwrap(), key);
    tx.commit().unwrap();

    let queued = journal.get(&key).await.unwrap().expect("committed");
    assert_eq!(queued.state, IntentState::Queued);
    assert_eq!((queued.runs, queued.fence), (0, 0));
    assert!(
        queued.headers.get("authorization").is_none(),
        "credentials are never journaled"
    );
    assert!(
        server.seen().is_empty(),
        "nothing is sent before a relay claims it"
    );

    let report = journal
        .resumer(&client)
        .resign(|request, _| request.bearer_auth("secret"))
        .drain()
        .await
        .unwrap();
    assert_eq!((report.claimed, report.succeeded), (1, 1));
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].key.as_deref(), Some(key.as_str()));
    assert_eq!(seen[0].body, br#"{"order":1,"amount":500}"#);
    assert_eq!(seen[0].header("authorization"), Some("Bearer secret"));
    assert_eq!(seen[0].header("content-type"), Some("application/json"));
    assert_eq!(server.effects_with_key(&key), 1);
    let done = journal.get(&key).await.unwrap().unwrap();
    assert_eq!(done.state, IntentState::Succeeded);
    assert_eq!(done.locator.as_deref(), Some("/payments/1"));
    assert_eq!((done.runs, done.fence), (1, 1));
    // Terminal: a second relay pass sends nothing.
    let again = journal.resumer(&client).drain().await.unwrap();
    assert_eq!(again.claimed, 0);
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolled_back_enqueue_leaves_nothing_a_relay_can_claim() {
    let (journal, mut conn) = sqlite_journal("outbox-rollback");
    let server = Server::start().await;
    let client = client(3);
    let intent = journal.outbox(client.post(&server.url).body("{}")).unwrap();

    let tx = conn.transaction().unwrap();
    tx.execute(
        "INSERT INTO orders (id, payment_key) VALUES (1, ?1)",
        [intent.key()],
    )
    .unwrap();
    intent.enqueue_rusqlite(&tx).unwrap();
    tx.rollback().unwrap();

    assert_eq!(orders(&conn), 0);
    assert!(journal.get(intent.key()).await.unwrap().is_none());
    for state in IntentState::ALL {
        assert!(journal.list(state, 10).await.unwrap().is_empty(), "{state}");
    }
    let report = journal.resumer(&client).drain().await.unwrap();
    assert_eq!(report.claimed, 0);
    assert!(
        server.seen().is_empty(),
        "0 sends for a rolled-back enqueue"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wake_relays_sends_at_once_instead_of_at_the_next_poll() {
    let (journal, mut conn) = sqlite_journal("outbox-wake");
    let server = Server::start().await;
    let client = client(3);
    let relay = journal.resumer(&client).spawn(POLL);
    // The relay's first pass finds nothing and waits for its poll.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let intent = journal.outbox(client.post(&server.url).body("{}")).unwrap();
    let tx = conn.transaction().unwrap();
    intent.enqueue_rusqlite(&tx).unwrap();
    tx.commit().unwrap();
    let committed = Instant::now();
    journal.wake_relays().await;
    tokio::time::timeout(PROMPT, server.wait_for_effects(1))
        .await
        .expect("woken, the relay sent long before its poll");
    assert!(committed.elapsed() < PROMPT);
    let totals = relay.stop().await;
    assert_eq!(totals.succeeded, 1);
    assert_eq!(server.seen_with_key(intent.key()).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_already_journaled_is_refused_and_the_transaction_stays_usable() {
    let (journal, mut conn) = sqlite_journal("outbox-duplicate");
    let client = client(3);
    let first = journal
        .outbox(
            client
                .post("http://127.0.0.1:9/p")
                .idempotency_key("order-7"),
        )
        .unwrap();
    let tx = conn.transaction().unwrap();
    first.enqueue_rusqlite(&tx).unwrap();
    tx.commit().unwrap();

    let tx = conn.transaction().unwrap();
    let error = first.enqueue_rusqlite(&tx).unwrap_err();
    assert!(
        matches!(error, JournalError::DuplicateKey { .. }),
        "{error}"
    );
    tx.execute(
        "INSERT INTO orders (id, payment_key) VALUES (7, 'order-7')",
        [],
    )
    .unwrap();
    tx.commit().unwrap();
    assert_eq!(orders(&conn), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_send_would_refuse_is_refused_at_enqueue() {
    let (journal, _) = sqlite_journal("outbox-refused");
    let client = client(3);
    let stream = reqwest::Body::wrap_stream(futures_util::stream::iter(vec![Ok::<
        _,
        std::io::Error,
    >(b"x".to_vec())]));
    let refused = |r: Result<_, JournalError>| {
        r.map(|_: reqwest_resilience_journal::OutboxIntent| ())
            .unwrap_err()
    };
    let streamed = refused(journal.outbox(client.post("http://127.0.0.1:9/").body(stream)));
    assert!(
        matches!(streamed, JournalError::BodyNotInMemory),
        "{streamed}"
    );
    let keyless =
        refused(journal.outbox(client.post("http://127.0.0.1:9/").without_idempotency_key()));
    assert!(
        matches!(keyless, JournalError::KeyRequired { .. }),
        "{keyless}"
    );
    let bad_url = refused(journal.outbox(client.post("no url")));
    assert!(
        matches!(bad_url, JournalError::InvalidRequest(_)),
        "{bad_url}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_neutral_statement_enqueues_on_sqlite() {
    let (journal, mut conn) = sqlite_journal("outbox-neutral");
    let server = Server::start().await;
    let client = client(3);
    let intent = journal
        .outbox(client.post(&server.url).body("neutral"))
        .unwrap();
    let statement = intent.statement(Dialect::Sqlite);
    let params: Vec<rusqlite::types::Value> = statement
        .params
        .iter()
        .map(|value| match value {
            OutboxValue::Text(text) => rusqlite::types::Value::Text(text.clone()),
            OutboxValue::Bool(flag) => rusqlite::types::Value::Integer(i64::from(*flag)),
            OutboxValue::Bytes(bytes) => rusqlite::types::Value::Blob(bytes.clone()),
            OutboxValue::BigInt(n) => rusqlite::types::Value::Integer(*n),
            OutboxValue::NullBigInt => rusqlite::types::Value::Null,
            other => panic!("a value this test does not bind: {other:?}"),
        })
        .collect();
    let tx = conn.transaction().unwrap();
    let rows = tx
        .execute(statement.sql, rusqlite::params_from_iter(params))
        .unwrap();
    assert_eq!(rows, 1);
    tx.commit().unwrap();
    journal.resumer(&client).drain().await.unwrap();
    let seen = server.seen_with_key(intent.key());
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body, b"neutral");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_without_the_journal_table_is_a_storage_error() {
    let conn = rusqlite::Connection::open(sqlite_path("outbox-no-table")).unwrap();
    let (journal, _) = sqlite_journal("outbox-no-table-journal");
    let intent = journal
        .outbox(client(1).post("http://127.0.0.1:9/"))
        .unwrap();
    let error = intent.enqueue_rusqlite(&conn).unwrap_err();
    assert!(matches!(error, JournalError::Storage(_)), "{error}");
    assert!(
        error.to_string().contains("journal_intents")
            || format!("{error:?}").contains("journal_intents"),
        "{error:?}"
    );
}
