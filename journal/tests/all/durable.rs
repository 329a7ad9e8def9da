//! Durable send: written ahead before the first byte, refused when it cannot be,
//! first results recorded, credentials never journaled.

use std::sync::Arc;
use std::time::Duration;

use reqwest_resilience::ResponseExt;
use reqwest_resilience_journal::{
    journal_error, DurableExt, IntentState, Journal, JournalError, JournalStore, SqliteStore,
};

use crate::support::backend::{client, Backend};
use crate::support::server::{Act, Server};

const BODY: &[u8] = br#"{"amount":500,"currency":"EUR"}"#;

crate::e2e_on_both_backends!(
    row_exists_before_the_server_receives_attempt_1,
    secrets_are_never_journaled_and_resume_signs_again,
    first_results_are_recorded,
    an_unkeyed_idempotent_request_is_journaled_under_a_local_key,
);

async fn row_exists_before_the_server_receives_attempt_1(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let reader = journal.clone();
    let probe = Arc::new(move |key: String| {
        let reader = reader.clone();
        Box::pin(async move {
            let row = reader.get(&key).await.expect("journal readable");
            row.map(|row| row.state.to_string())
        }) as _
    });
    let server = Server::scripted(|_, _| Act::Normal, Some(probe)).await;
    let response = client(3)
        .post(&server.url)
        .idempotency_key("ahead-1")
        .body(BODY)
        .durable(&journal)
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 201);
    let seen = server.seen_with_key("ahead-1");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].journal_state.as_deref(), Some("in_flight"));
    let row = journal.get("ahead-1").await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Succeeded);
    assert_eq!(row.locator.as_deref(), Some("/payments/1"));
    assert_eq!(row.body, BODY);
}

/// A PUT carries no key by default: it is journaled under a key of the
/// journal's own, never sent on the wire, and its answer recorded.
async fn an_unkeyed_idempotent_request_is_journaled_under_a_local_key(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let server = Server::start().await;
    let response = client(1)
        .put(&server.url)
        .body(BODY)
        .durable(&journal)
        .send()
        .await
        .expect("a final answer");
    // The test server answers a request without a key 400, a final answer.
    assert_eq!(response.status(), 400);
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "sent once");
    assert_eq!(seen[0].key, None, "no Idempotency-Key on the wire");
    let rows = journal.list(IntentState::Failed, 10).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert!(row.key.starts_with("local-"), "{}", row.key);
    assert!(!row.key_on_wire);
    assert_eq!((row.method.as_str(), row.status), ("PUT", Some(400)));
    assert_eq!(row.body, BODY);
}

async fn secrets_are_never_journaled_and_resume_signs_again(backend: Backend) {
    const TOKEN: &str = "tok-7f3a9c-very-secret";
    let journal = backend
        .journal(|b| {
            b.exclude_header(http::HeaderName::from_static("x-api-key"))
                .unknown_retry_after(Duration::ZERO)
        })
        .await;
    // The first response is lost: the intent stays unknown in the journal.
    let server = Server::scripted(
        |_, before| {
            if before == 0 {
                Act::CommitThenDrop
            } else {
                Act::Normal
            }
        },
        None,
    )
    .await;
    let with_userinfo = server
        .url
        .replacen("http://", &format!("http://user:{TOKEN}@"), 1);
    let error = client(1)
        .post(&with_userinfo)
        .idempotency_key("secret-1")
        .bearer_auth(TOKEN)
        .header("cookie", format!("session={TOKEN}"))
        .header("proxy-authorization", format!("Basic {TOKEN}"))
        .header("x-api-key", TOKEN)
        .header("x-trace-tag", "kept")
        .body(BODY)
        .durable(&journal)
        .send()
        .await
        .expect_err("response lost");
    assert!(error.is_outcome_unknown(), "{error}");

    let row = journal.get("secret-1").await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Unknown);
    for name in [
        "authorization",
        "cookie",
        "proxy-authorization",
        "x-api-key",
        "idempotency-key",
    ] {
        assert!(row.headers.get(name).is_none(), "{name} journaled");
    }
    assert_eq!(row.headers.get("x-trace-tag").unwrap(), "kept");
    assert_eq!(row.url, server.url, "no user:password@ in the stored URL");
    if let Backend::Sqlite(path) = &backend {
        // The bytes on disk (database and write-ahead log) never hold the token.
        for file in [path.clone(), path.with_extension("sqlite-wal")] {
            let bytes = std::fs::read(&file).unwrap_or_default();
            assert!(
                !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                "{file:?}"
            );
        }
    }

    let report = journal
        .resumer(&client(3))
        .resign(|request, _| request.bearer_auth(TOKEN).header("x-api-key", TOKEN))
        .run_once()
        .await
        .unwrap();
    assert_eq!((report.claimed, report.succeeded), (1, 1));
    let seen = server.seen_with_key("secret-1");
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1].header("authorization"),
        Some(&*format!("Bearer {TOKEN}"))
    );
    assert_eq!(seen[1].header("x-api-key"), Some(TOKEN));
    assert_eq!(seen[1].header("cookie"), None, "not re-added by the hook");
    assert_eq!(seen[1].header("x-trace-tag"), Some("kept"));
    assert_eq!(server.effects(), 1);
}

async fn first_results_are_recorded(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let server = Server::start().await;
    server.precommit("taken", b"another body");
    let client = client(3);
    let send = |key: &'static str| {
        client
            .post(&server.url)
            .idempotency_key(key)
            .body(BODY)
            .durable(&journal)
            .send()
    };
    assert_eq!(send("fresh").await.unwrap().status(), 201);
    assert_eq!(send("taken").await.unwrap().status(), 422);
    let fresh = journal.get("fresh").await.unwrap().unwrap();
    assert_eq!(
        (fresh.state, fresh.status),
        (IntentState::Succeeded, Some(201))
    );
    let taken = journal.get("taken").await.unwrap().unwrap();
    assert_eq!(
        (taken.state, taken.status),
        (IntentState::Failed, Some(422))
    );
}

#[tokio::test]
async fn refused_without_sending_when_the_intent_cannot_be_journaled() {
    let journal = Journal::new(SqliteStore::open_in_memory().unwrap());
    let server = Server::start().await;
    let client = client(3);

    // A POST without a key could never be resumed safely.
    let error = client
        .post(&server.url)
        .without_idempotency_key()
        .body(BODY)
        .durable(&journal)
        .send()
        .await
        .unwrap_err();
    assert!(error.is_write_ahead_refused(), "{error}");
    assert!(matches!(
        journal_error(&error),
        Some(JournalError::KeyRequired { .. })
    ));

    // A stream has no bytes to journal.
    let stream = futures_util::stream::iter([Ok::<_, std::io::Error>(BODY.to_vec())]);
    let error = client
        .post(&server.url)
        .idempotency_key("stream-1")
        .body(reqwest::Body::wrap_stream(stream))
        .durable(&journal)
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(journal_error(&error), Some(JournalError::BodyNotInMemory)),
        "{error}"
    );

    // The same key is the same intent: a second send joins it. Done already,
    // it is sent again unjournaled and the server replays its answer.
    let first = client
        .post(&server.url)
        .idempotency_key("dup-1")
        .body(BODY)
        .durable(&journal)
        .send()
        .await
        .unwrap();
    let again = client
        .post(&server.url)
        .idempotency_key("dup-1")
        .body(BODY)
        .durable(&journal)
        .send()
        .await
        .unwrap();
    assert_eq!(
        again.headers().get("location"),
        first.headers().get("location"),
        "the server's replay"
    );
    assert_eq!(server.effects_with_key("dup-1"), 1);
    let row = journal.get("dup-1").await.unwrap().unwrap();
    assert_eq!(
        (row.state, row.runs),
        (IntentState::Succeeded, 1),
        "one row"
    );
    // Another body under the key is another intent: refused, nothing sent.
    let seen_before = server.seen_with_key("dup-1").len();
    let error = client
        .post(&server.url)
        .idempotency_key("dup-1")
        .body(&b"{\"amount\":1}"[..])
        .durable(&journal)
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(journal_error(&error), Some(JournalError::KeyInUse { .. })),
        "{error}"
    );
    assert!(!error.is_outcome_unknown(), "{error}");
    assert_eq!(server.seen_with_key("dup-1").len(), seen_before);

    // The journal is down: nothing is sent.
    let broken = Journal::new(BrokenStore);
    let error = client
        .post(&server.url)
        .idempotency_key("down-1")
        .body(BODY)
        .durable(&broken)
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(journal_error(&error), Some(JournalError::Storage(_))),
        "{error}"
    );

    assert_eq!(
        server.seen().len(),
        2,
        "only dup-1's send and its replay reached the server"
    );
    assert!(journal.get("stream-1").await.unwrap().is_none());
}

#[tokio::test]
async fn a_body_fn_is_called_once_and_its_bytes_journaled() {
    let journal = Journal::new(SqliteStore::open_in_memory().unwrap());
    let server = Server::start().await;
    let response = client(3)
        .put(&server.url)
        .idempotency_key("fn-1")
        .body_fn(|| reqwest::Body::from(BODY))
        .durable(&journal)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(journal.get("fn-1").await.unwrap().unwrap().body, BODY);
    assert_eq!(server.seen()[0].body, BODY);
}

/// A store whose database is unreachable.
struct BrokenStore;

impl JournalStore for BrokenStore {
    fn write_ahead<'a>(
        &'a self,
        _: &'a reqwest_resilience_journal::NewIntent,
        _: &'a reqwest_resilience_journal::Worker,
        _: Duration,
    ) -> reqwest_resilience_journal::StoreFuture<'a, reqwest_resilience_journal::Lease> {
        Box::pin(async { Err(JournalError::Storage("connection refused".into())) })
    }
    fn claim<'a>(
        &'a self,
        _: &'a reqwest_resilience_journal::Worker,
        _: Duration,
        _: usize,
    ) -> reqwest_resilience_journal::StoreFuture<'a, Vec<reqwest_resilience_journal::Claimed>> {
        Box::pin(async { Err(JournalError::Storage("connection refused".into())) })
    }
    fn take_over<'a>(
        &'a self,
        _: &'a str,
        _: &'a reqwest_resilience_journal::Worker,
        _: Duration,
    ) -> reqwest_resilience_journal::StoreFuture<'a, Option<reqwest_resilience_journal::Claimed>>
    {
        Box::pin(async { Err(JournalError::Storage("connection refused".into())) })
    }
    fn record<'a>(
        &'a self,
        _: &'a reqwest_resilience_journal::Lease,
        _: &'a reqwest_resilience_journal::Outcome,
    ) -> reqwest_resilience_journal::StoreFuture<'a, ()> {
        Box::pin(async { Err(JournalError::Storage("connection refused".into())) })
    }
    fn get<'a>(
        &'a self,
        _: &'a str,
    ) -> reqwest_resilience_journal::StoreFuture<'a, Option<reqwest_resilience_journal::IntentRecord>>
    {
        Box::pin(async { Ok(None) })
    }
    fn list<'a>(
        &'a self,
        _: IntentState,
        _: Option<&'a reqwest_resilience_journal::ListCursor>,
        _: usize,
    ) -> reqwest_resilience_journal::StoreFuture<'a, Vec<reqwest_resilience_journal::IntentRecord>>
    {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn backlog<'a>(
        &'a self,
        _: &'a reqwest_resilience_journal::Worker,
    ) -> reqwest_resilience_journal::StoreFuture<'a, reqwest_resilience_journal::Backlog> {
        Box::pin(async { Err(JournalError::Storage("connection refused".into())) })
    }
    fn abandon<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
    ) -> reqwest_resilience_journal::StoreFuture<'a, bool> {
        Box::pin(async { Ok(false) })
    }
    fn prune<'a>(&'a self, _: Duration) -> reqwest_resilience_journal::StoreFuture<'a, u64> {
        Box::pin(async { Ok(0) })
    }
}

/// A SQLite journal with injected faults: every read fails (`unreadable`), or
/// the first `record_failures` terminal writes fail.
struct FaultyStore {
    inner: SqliteStore,
    unreadable: bool,
    record_failures: std::sync::atomic::AtomicUsize,
}

impl FaultyStore {
    fn unreadable(inner: SqliteStore) -> Self {
        Self {
            inner,
            unreadable: true,
            record_failures: 0.into(),
        }
    }

    fn failing_records(inner: SqliteStore, failures: usize) -> Self {
        Self {
            inner,
            unreadable: false,
            record_failures: failures.into(),
        }
    }
}

type Fut<'a, T> = reqwest_resilience_journal::StoreFuture<'a, T>;

impl JournalStore for FaultyStore {
    fn write_ahead<'a>(
        &'a self,
        intent: &'a reqwest_resilience_journal::NewIntent,
        worker: &'a reqwest_resilience_journal::Worker,
        lease: Duration,
    ) -> Fut<'a, reqwest_resilience_journal::Lease> {
        self.inner.write_ahead(intent, worker, lease)
    }
    fn claim<'a>(
        &'a self,
        worker: &'a reqwest_resilience_journal::Worker,
        lease: Duration,
        limit: usize,
    ) -> Fut<'a, Vec<reqwest_resilience_journal::Claimed>> {
        self.inner.claim(worker, lease, limit)
    }
    fn take_over<'a>(
        &'a self,
        key: &'a str,
        worker: &'a reqwest_resilience_journal::Worker,
        lease: Duration,
    ) -> Fut<'a, Option<reqwest_resilience_journal::Claimed>> {
        self.inner.take_over(key, worker, lease)
    }
    fn record<'a>(
        &'a self,
        lease: &'a reqwest_resilience_journal::Lease,
        outcome: &'a reqwest_resilience_journal::Outcome,
    ) -> Fut<'a, ()> {
        use std::sync::atomic::Ordering;
        let fail = self
            .record_failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if fail {
            return Box::pin(async { Err(JournalError::Storage("connection reset".into())) });
        }
        self.inner.record(lease, outcome)
    }
    fn get<'a>(
        &'a self,
        key: &'a str,
    ) -> Fut<'a, Option<reqwest_resilience_journal::IntentRecord>> {
        if self.unreadable {
            return Box::pin(async { Err(JournalError::Storage("disk I/O error".into())) });
        }
        self.inner.get(key)
    }
    fn list<'a>(
        &'a self,
        state: IntentState,
        after: Option<&'a reqwest_resilience_journal::ListCursor>,
        limit: usize,
    ) -> Fut<'a, Vec<reqwest_resilience_journal::IntentRecord>> {
        self.inner.list(state, after, limit)
    }
    fn backlog<'a>(
        &'a self,
        worker: &'a reqwest_resilience_journal::Worker,
    ) -> Fut<'a, reqwest_resilience_journal::Backlog> {
        self.inner.backlog(worker)
    }
    fn abandon<'a>(&'a self, key: &'a str, reason: &'a str) -> Fut<'a, bool> {
        self.inner.abandon(key, reason)
    }
    fn prune<'a>(&'a self, older_than: Duration) -> Fut<'a, u64> {
        self.inner.prune(older_than)
    }
}

#[tokio::test]
async fn a_send_that_cannot_join_the_journaled_intent_is_outcome_unknown() {
    let store = SqliteStore::open_in_memory().unwrap();
    // Another sender wrote the intent ahead and holds it.
    let mut intent = reqwest_resilience_journal::NewIntent::new(
        "held-1",
        reqwest::Method::POST,
        "http://127.0.0.1:9/payments",
    );
    intent.body = BODY.to_vec();
    store
        .write_ahead(
            &intent,
            &reqwest_resilience_journal::Worker::new("other"),
            Duration::from_secs(3600),
        )
        .await
        .unwrap();
    let journal = Journal::new(FaultyStore::unreadable(store));
    let server = Server::start().await;
    let error = client(1)
        .post(&server.url)
        .idempotency_key("held-1")
        .body(BODY)
        .durable(&journal)
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(
            journal_error(&error),
            Some(JournalError::JoinUnknown { .. })
        ),
        "{error}"
    );
    assert!(
        error.is_outcome_unknown(),
        "the other sender may still send it: {error}"
    );
    assert!(server.seen().is_empty(), "nothing sent by this call");
}

#[tokio::test]
async fn a_terminal_write_that_fails_is_tried_again_before_it_is_left_unrecorded() {
    let server = Server::start().await;
    for (failures, recorded) in [(2, true), (3, false)] {
        let key = format!("flaky-{failures}");
        let journal = Journal::new(FaultyStore::failing_records(
            SqliteStore::open_in_memory().unwrap(),
            failures,
        ));
        let response = client(1)
            .post(&server.url)
            .idempotency_key(&key)
            .body(BODY)
            .durable(&journal)
            .send()
            .await
            .expect("the caller keeps its response either way");
        assert_eq!(response.status(), 201);
        // The caller can tell that the journal will send it again.
        assert_eq!(
            response.end_not_recorded(),
            !recorded,
            "{failures} failed writes"
        );
        let row = journal.get(&key).await.unwrap().unwrap();
        let expected = if recorded {
            IntentState::Succeeded
        } else {
            IntentState::InFlight // resent under its key once the lease ends
        };
        assert_eq!(row.state, expected, "{failures} failed writes");
    }
}
