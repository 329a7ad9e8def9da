//! "Refused" means never sent: an intent the caller was told was refused before
//! its first byte is never sent later. Before its first byte an intent can be
//! refused by a gate (before the journal is asked) or by the journal itself (its
//! own refusals are in `durable` and `commit_fault`); an intent has one
//! write-ahead, so nothing else can refuse it after the journal wrote it ahead.

use reqwest_resilience::{Gate, GateRefusal, GateScope};
use reqwest_resilience_journal::{DurableExt, IntentState, Journal};

use crate::support::backend::{client, Backend};
use crate::support::server::Server;

const BODY: &[u8] = br#"{"amount":500,"currency":"EUR"}"#;

crate::e2e_on_both_backends!(
    a_second_journal_replaces_the_first_and_the_intent_is_written_once,
    a_gate_refusing_the_first_attempt_leaves_no_row,
);

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

async fn a_second_journal_replaces_the_first_and_the_intent_is_written_once(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let server = Server::start().await;
    let response = client(3)
        .post(&server.url)
        .idempotency_key("twice")
        .body(BODY)
        .durable(&journal)
        .durable(&journal)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{response:?}");
    let row = journal.get("twice").await.unwrap().expect("written ahead");
    assert_eq!(row.state, IntentState::Succeeded, "{row:?}");
    assert_eq!(server.seen().len(), 1);
    let report = journal
        .resumer(&client(3))
        .batch(32)
        .run_once()
        .await
        .unwrap();
    assert_eq!(report.claimed, 0, "{report:?}");
    assert_eq!(
        server.seen().len(),
        1,
        "a finished intent is not sent again"
    );
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
