//! "Refused" means never sent: an intent the caller was told was refused before
//! its first byte is never sent later — whatever refused it (a later observer, a
//! gate, a second journal), and in every order of observers.

use std::sync::Arc;

use reqwest_resilience::{
    BoxError, Gate, GateRefusal, GateScope, IntentObserver, IntentStart, ObserverFuture,
};
use reqwest_resilience_journal::{DurableExt, IntentState, Journal};

use crate::support::backend::{client, Backend};
use crate::support::server::Server;

const BODY: &[u8] = br#"{"amount":500,"currency":"EUR"}"#;

crate::e2e_on_both_backends!(
    a_refusal_after_the_journal_closes_its_row_and_nothing_is_ever_sent,
    a_refusal_before_the_journal_leaves_no_row,
    a_second_journal_is_rejected_before_anything_is_written,
    a_gate_refusing_the_first_attempt_leaves_no_row,
);

/// An observer that refuses every intent (a fraud check, a quota).
struct Refuse;

impl IntentObserver for Refuse {
    fn started<'a>(&'a self, _: &'a IntentStart<'a>) -> ObserverFuture<'a, Result<(), BoxError>> {
        Box::pin(async { Err("refused by policy".into()) })
    }
}

/// Resumes whatever is due, as a worker would at start-up: a refused intent must
/// not be among it.
async fn resume_everything(journal: &Journal, server: &Server) {
    let report = journal
        .resumer(&client(3))
        .batch(32)
        .run_once()
        .await
        .unwrap();
    assert_eq!(report.claimed, 0, "{report:?}");
    assert!(server.seen().is_empty(), "a refused intent was sent later");
}

async fn a_refusal_after_the_journal_closes_its_row_and_nothing_is_ever_sent(backend: Backend) {
    // Leases that end at once: a row left in flight would be claimed right away.
    let journal = backend
        .journal(|b| b.lease_margin(std::time::Duration::ZERO))
        .await;
    let server = Server::start().await;
    let error = client(3)
        .post(&server.url)
        .idempotency_key("refused-after")
        .body(BODY)
        .durable(&journal)
        .observer(Arc::new(Refuse))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_observer_refused(), "{error}");
    assert!(!error.is_outcome_unknown(), "{error}");
    // Closed before send() returned: terminal, never resumed.
    let row = journal
        .get("refused-after")
        .await
        .unwrap()
        .expect("written ahead");
    assert_eq!(row.state, IntentState::Failed, "{row:?}");
    resume_everything(&journal, &server).await;
}

async fn a_refusal_before_the_journal_leaves_no_row(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let server = Server::start().await;
    let error = client(3)
        .post(&server.url)
        .idempotency_key("refused-before")
        .body(BODY)
        .observer(Arc::new(Refuse))
        .durable(&journal)
        .send()
        .await
        .unwrap_err();
    assert!(error.is_observer_refused(), "{error}");
    assert!(journal.get("refused-before").await.unwrap().is_none());
    resume_everything(&journal, &server).await;
}

async fn a_second_journal_is_rejected_before_anything_is_written(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let server = Server::start().await;
    let error = client(3)
        .post(&server.url)
        .idempotency_key("twice")
        .body(BODY)
        .durable(&journal)
        .durable(&journal)
        .send()
        .await
        .unwrap_err();
    assert!(error.is_invalid_request(), "{error}");
    assert!(error.to_string().contains("journal"), "{error}");
    assert!(journal.get("twice").await.unwrap().is_none());
    resume_everything(&journal, &server).await;
}

/// A gate that is open (a breaker holding back every attempt).
struct Open;

impl Gate for Open {
    fn name(&self) -> &str {
        "open"
    }

    fn admit(&self, _: &GateScope<'_>) -> Result<(), GateRefusal> {
        Err(GateRefusal::new("open"))
    }
}

async fn a_gate_refusing_the_first_attempt_leaves_no_row(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let server = Server::start().await;
    let gated = reqwest_resilience::ResilientClient::with_policy(
        reqwest_resilience::RetryPolicy::builder()
            .gate(Open)
            .build()
            .unwrap(),
    );
    let error = gated
        .post(&server.url)
        .idempotency_key("gated")
        .body(BODY)
        .durable(&journal)
        .send()
        .await
        .unwrap_err();
    assert!(error.is_gate_refused(), "{error}");
    assert!(!error.is_outcome_unknown());
    assert!(journal.get("gated").await.unwrap().is_none());
    resume_everything(&journal, &server).await;
}

/// When the journal cannot record that the intent was refused, the caller is not
/// told "nothing happened": the row may still be resumed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_terminal_write_makes_the_outcome_unknown() {
    let Backend::Sqlite(path) = Backend::sqlite("a_failed_terminal_write") else {
        unreachable!()
    };
    let journal = Backend::Sqlite(path.clone()).journal(|b| b).await;
    let server = Server::start().await;

    /// Refuses, after taking the journal's table away (a disk gone read-only, a
    /// dropped connection: any failure of the terminal write).
    struct BreakTheJournal(std::path::PathBuf);
    impl IntentObserver for BreakTheJournal {
        fn started<'a>(
            &'a self,
            _: &'a IntentStart<'a>,
        ) -> ObserverFuture<'a, Result<(), BoxError>> {
            Box::pin(async move {
                let db = rusqlite::Connection::open(&self.0)?;
                db.execute_batch("ALTER TABLE journal_intents RENAME TO journal_intents_gone")?;
                Err("refused by policy".into())
            })
        }
    }

    let error = client(3)
        .post(&server.url)
        .idempotency_key("unrecorded")
        .body(BODY)
        .durable(&journal)
        .observer(Arc::new(BreakTheJournal(path)))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_observer_refused(), "{error}");
    assert!(
        error.is_outcome_unknown(),
        "the journal did not close its row: {error}"
    );
    assert!(server.seen().is_empty());
}
