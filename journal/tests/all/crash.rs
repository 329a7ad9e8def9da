//! A process is SIGKILLed after the server committed, while the server holds the
//! response; a new process resumes the intent from the journal.

use std::time::{Duration, SystemTime};

use reqwest_resilience_journal::IntentState;

use crate::support::backend::{client, Backend};
use crate::support::server::{Act, Server};

pub const KEY: &str = "crash-payment-1842";
pub const BODY: &[u8] = br#"{"amount":500,"currency":"EUR","order":"1842"}"#;
pub const URL_ENV: &str = "JOURNAL_TEST_URL";

crate::e2e_on_both_backends!(crash_after_commit_is_resumed_with_one_effect);

async fn crash_after_commit_is_resumed_with_one_effect(backend: Backend) {
    // The first request commits and never gets its answer; later ones replay.
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
    let mut child = backend.spawn_child("crash", &[(URL_ENV, &server.url)]);
    tokio::select! {
        () = server.wait_for_effects(1) => {}
        status = child.wait() => panic!("the child ended before the server committed: {status:?}"),
    }
    child.kill().await.expect("SIGKILL the child");

    let journal = backend.journal(|b| b).await;
    let row = journal
        .get(KEY)
        .await
        .unwrap()
        .expect("written ahead by the child");
    assert_eq!(row.state, IntentState::InFlight, "killed mid-flight");
    assert_eq!(row.runs, 1);
    // Wait out the dead worker's lease (its deadline plus margin: about 2 s).
    let lease_left = row
        .lease_until
        .unwrap()
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    assert!(lease_left < Duration::from_secs(10), "{lease_left:?}");
    tokio::time::sleep(lease_left + Duration::from_millis(50)).await;

    let report = journal.resume(&client(3), 10).await.unwrap();
    assert_eq!((report.claimed, report.succeeded), (1, 1), "{report:?}");

    let seen = server.seen_with_key(KEY);
    assert_eq!(seen.len(), 2, "the child's attempt and the resume");
    assert!(seen.iter().all(|s| s.body == BODY), "the same body bytes");
    let ids: Vec<_> = seen
        .iter()
        .map(|s| s.request_id.clone().expect("request id"))
        .collect();
    assert_ne!(ids[0], ids[1], "a fresh request id per attempt");
    assert_eq!(server.effects(), 1, "one payment");
    let row = journal.get(KEY).await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Succeeded);
    assert_eq!(row.locator.as_deref(), Some("/payments/1"));
    assert_eq!(row.runs, 2);
}
