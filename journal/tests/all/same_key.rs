//! The same key means the same intent: a caller told "outcome unknown, retry
//! with the same key" who does so joins the journaled intent — never a second
//! row, never a second effect.

use std::time::Duration;

use reqwest_resilience_journal::IntentState;

use crate::support::backend::{client, Backend};
use crate::support::server::{Act, Server};

const BODY: &[u8] = br#"{"amount":900,"currency":"EUR"}"#;

crate::e2e_on_both_backends!(
    an_unknown_intent_retried_with_its_key_is_taken_over_and_sent_once,
    a_retry_while_the_first_send_is_in_flight_waits_for_it,
);

async fn send(
    journal: &reqwest_resilience_journal::Journal,
    url: &str,
    key: &str,
    deadline: Duration,
) -> Result<reqwest::Response, reqwest_resilience::Error> {
    client(1)
        .post(url)
        .idempotency_key(key)
        .header("content-type", "application/json")
        .body(BODY)
        .deadline(deadline)
        .durable(journal)
        .send()
        .await
}

use reqwest_resilience_journal::DurableExt;

async fn an_unknown_intent_retried_with_its_key_is_taken_over_and_sent_once(backend: Backend) {
    // The first request commits and its answer is lost; later ones replay.
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
    let journal = backend.journal(|b| b).await;
    let error = send(&journal, &server.url, "same-1", Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(error.is_outcome_unknown(), "{error}");
    let row = journal.get("same-1").await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Unknown);

    let response = send(&journal, &server.url, "same-1", Duration::from_secs(5))
        .await
        .expect("the retry with the same key joins the intent");
    assert_eq!(response.status(), 201);
    let row = journal.get("same-1").await.unwrap().unwrap();
    assert_eq!(
        (row.state, row.runs, row.fence),
        (IntentState::Succeeded, 2, 2),
        "one row, taken over"
    );
    assert_eq!(row.locator.as_deref(), Some("/payments/1"));
    assert_eq!(server.seen_with_key("same-1").len(), 2);
    assert_eq!(server.effects(), 1, "one payment");
}

async fn a_retry_while_the_first_send_is_in_flight_waits_for_it(backend: Backend) {
    // The first request commits and hangs until its 1 s deadline; its lease
    // (deadline plus margin) then ends and the waiting retry takes it over.
    let server = Server::scripted(
        |_, before| {
            if before == 0 {
                Act::CommitThenHold
            } else {
                Act::Normal
            }
        },
        None,
    )
    .await;
    let journal = backend
        .journal(|b| b.lease_margin(Duration::from_millis(200)))
        .await;
    let first = {
        let (journal, url) = (journal.clone(), server.url.clone());
        tokio::spawn(async move { send(&journal, &url, "same-2", Duration::from_secs(1)).await })
    };
    server.wait_for_effects(1).await;
    let retry = send(&journal, &server.url, "same-2", Duration::from_secs(10))
        .await
        .expect("the retry waits, then takes the intent over");
    assert_eq!(retry.status(), 201);
    let first = first.await.unwrap().unwrap_err();
    assert!(first.is_outcome_unknown(), "{first}");
    let row = journal.get("same-2").await.unwrap().unwrap();
    assert_eq!((row.state, row.runs), (IntentState::Succeeded, 2));
    assert_eq!(server.effects(), 1, "one payment");
    assert_eq!(server.seen_with_key("same-2").len(), 2);
}
