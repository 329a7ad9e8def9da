//! Resume: expiry, 409, 422, terminal rows, run limits, the retry budget and the
//! background loop.

use std::time::{Duration, SystemTime};

use reqwest_resilience::{RecordingSleeper, ResilientClient, RetryBudget, RetryPolicy};
use reqwest_resilience_journal::{IntentState, Journal, NewIntent, Outcome, Worker};

use crate::support::backend::{client, Backend};
use crate::support::server::{Act, Server};

const HOUR: Duration = Duration::from_secs(3600);

crate::e2e_on_both_backends!(
    expiry_past_retention_abandons_without_sending,
    conflict_409_stays_unknown_with_a_later_due_time,
    mismatch_422_is_failed,
    terminal_rows_are_never_resumed,
    drain_resumes_until_nothing_is_due_and_reports_each_intent,
);

/// Journals an intent for `url` as if its first run had ended with an unknown
/// outcome.
async fn unknown_intent(journal: &Journal, url: &str, key: &str, retention: Duration) -> NewIntent {
    let mut intent = NewIntent::new(key, http::Method::POST, url);
    intent.body = format!(r#"{{"pay":"{key}"}}"#).into_bytes();
    intent.deadline = Some(Duration::from_secs(5));
    intent.retention = retention;
    let store = journal.store();
    let lease = store
        .write_ahead(&intent, &Worker::unique(), HOUR)
        .await
        .unwrap();
    let lost = Outcome::Unknown {
        status: None,
        retry_in: Duration::ZERO,
        reason: "response lost".into(),
    };
    store.record(&lease, &lost).await.unwrap();
    intent
}

async fn expiry_past_retention_abandons_without_sending(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let server = Server::start().await;
    // The server's key window is over by the time the resume runs.
    unknown_intent(&journal, &server.url, "expired-1", Duration::from_millis(1)).await;
    let report = journal.resume(&client(3), 10).await.unwrap();
    assert_eq!((report.claimed, report.abandoned), (1, 1));
    assert!(
        server.seen().is_empty(),
        "nothing resent past the retention"
    );
    let row = journal.get("expired-1").await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Abandoned);
    assert!(row.detail.unwrap().contains("retention"));
}

async fn conflict_409_stays_unknown_with_a_later_due_time(backend: Backend) {
    let journal = backend
        .journal(|b| b.unknown_retry_after(Duration::from_secs(60)))
        .await;
    let server = Server::scripted(|_, _| Act::Conflict, None).await;
    unknown_intent(&journal, &server.url, "busy-1", HOUR).await;
    let before = SystemTime::now();
    let report = journal.resume(&client(2), 10).await.unwrap();
    assert_eq!((report.claimed, report.unknown), (1, 1));
    // A 409 "in progress" does not use up the client's 2 attempts: it is waited out
    // while the run's deadline holds (the recording sleeper takes no time, so the
    // count of waits the deadline holds ends it), then the intent stays unknown.
    let seen = server.seen_with_key("busy-1").len();
    assert!(
        (3..=12).contains(&seen),
        "the client waited the 409s out: {seen}"
    );
    let row = journal.get("busy-1").await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Unknown);
    assert_eq!(row.status, Some(409));
    // The intent's second run: due again 2 s later (1 s after the first run,
    // doubling per run), far below the longest pause of 60 s.
    assert_eq!(row.runs, 2);
    let due_at = row.due_at.unwrap();
    assert!(due_at >= before + Duration::from_secs(2), "{due_at:?}");
    assert!(due_at < before + Duration::from_secs(59), "{due_at:?}");
    // The report says it waits, and until when.
    let backlog = report.backlog.expect("counted");
    assert_eq!((backlog.due, backlog.leased, backlog.waiting), (0, 0, 1));
    assert_eq!(report.next_due(), row.due_at);
    assert_eq!(journal.next_due().await.unwrap(), row.due_at);
    let again = journal.resume(&client(2), 10).await.unwrap();
    assert_eq!(again.claimed, 0, "not due before its later time");
}

async fn mismatch_422_is_failed(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let server = Server::start().await;
    server.precommit("reused-1", b"a different payment");
    unknown_intent(&journal, &server.url, "reused-1", HOUR).await;
    let report = journal.resume(&client(3), 10).await.unwrap();
    assert_eq!((report.claimed, report.failed), (1, 1));
    let row = journal.get("reused-1").await.unwrap().unwrap();
    assert_eq!((row.state, row.status), (IntentState::Failed, Some(422)));
    assert_eq!(server.effects(), 1, "no new payment");
}

async fn terminal_rows_are_never_resumed(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let server = Server::start().await;
    let store = journal.store();
    let outcomes = [
        Outcome::Succeeded {
            status: 201,
            locator: None,
        },
        Outcome::Failed {
            status: Some(422),
            reason: "mismatch".into(),
        },
        Outcome::Abandoned {
            reason: "by hand".into(),
        },
    ];
    for (i, outcome) in outcomes.iter().enumerate() {
        let intent = NewIntent::new(format!("done-{i}"), http::Method::POST, server.url.as_str());
        // An expired lease: only the terminal state keeps the row from a resume.
        let lease = store
            .write_ahead(&intent, &Worker::unique(), Duration::ZERO)
            .await
            .unwrap();
        store.record(&lease, outcome).await.unwrap();
    }
    let report = journal.resume(&client(3), 10).await.unwrap();
    assert_eq!(report.claimed, 0);
    assert!(server.seen().is_empty());
}

async fn drain_resumes_until_nothing_is_due_and_reports_each_intent(backend: Backend) {
    let journal = backend.journal(|b| b).await;
    let server = Server::start().await;
    for i in 0..70 {
        unknown_intent(&journal, &server.url, &format!("drain-{i:02}"), HOUR).await;
    }
    let results = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = results.clone();
    let report = journal
        .resumer(&client(3))
        .batch(32)
        .on_result(move |result| {
            seen.lock().unwrap().push((
                result.record.key.clone(),
                result.outcome.state(),
                result.error.is_some(),
            ));
        })
        .drain()
        .await
        .unwrap();
    assert_eq!((report.claimed, report.succeeded), (70, 70), "{report:?}");
    assert_eq!(report.due(), 0, "nothing due after the drain");
    assert_eq!(report.next_due(), None, "nothing open");
    let mut results = results.lock().unwrap().clone();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(results.len(), 70, "one callback per intent");
    assert!(results
        .iter()
        .all(|(_, state, failed)| *state == IntentState::Succeeded && !failed));
    assert_eq!(results[0].0, "drain-00");
    assert_eq!(server.effects(), 70);

    // The journal lists them page by page: 32, 32, 6, then no next cursor.
    let mut sizes = Vec::new();
    let mut cursor = None;
    for _ in 0..5 {
        let page = journal
            .list_page(IntentState::Succeeded, cursor.as_ref(), 32)
            .await
            .unwrap();
        sizes.push(page.records.len());
        cursor = page.next;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(sizes, [32, 32, 6]);
}

#[tokio::test]
async fn too_many_runs_abandons_without_sending() {
    let backend = Backend::sqlite("too_many_runs");
    let journal = backend
        .journal(|b| b.max_runs(2).unknown_retry_after(Duration::ZERO))
        .await;
    let server = Server::scripted(|_, _| Act::Conflict, None).await;
    unknown_intent(&journal, &server.url, "stuck-1", HOUR).await; // run 1
    let second = journal.resume(&client(1), 10).await.unwrap(); // run 2: 409 again
    assert_eq!(second.unknown, 1);
    let third = journal.resume(&client(1), 10).await.unwrap();
    assert_eq!((third.claimed, third.abandoned), (1, 1));
    assert_eq!(server.seen().len(), 1, "only run 2 was sent");
    let row = journal.get("stuck-1").await.unwrap().unwrap();
    assert_eq!(row.state, IntentState::Abandoned);
}

#[tokio::test]
async fn resumes_draw_from_the_retry_budget() {
    let backend = Backend::sqlite("budget");
    let journal = backend
        .journal(|b| b.unknown_retry_after(Duration::ZERO))
        .await;
    let server = Server::scripted(|_, _| Act::Unavailable, None).await;
    for i in 0..10 {
        unknown_intent(&journal, &server.url, &format!("storm-{i}"), HOUR).await;
    }
    // A budget of 2 retries plus 10 % of the resumes' first attempts (1 here).
    let budget = RetryBudget::builder()
        .ratio(0.1)
        .reserve(2)
        .window(Duration::from_secs(60))
        .build()
        .unwrap();
    let client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .max_attempts(4)
            .sleeper(RecordingSleeper::new())
            .rng_seed(3)
            .budget(budget)
            .build()
            .unwrap(),
    );
    let report = journal.resumer(&client).batch(10).run_once().await.unwrap();
    assert_eq!((report.claimed, report.unknown), (10, 10));
    let requests = server.seen().len();
    // Without a budget: 10 × 4 = 40 requests. With it: 10 first attempts + 3 retries.
    assert_eq!(requests, 13, "first attempts deposit, retries withdraw");
    let rows = journal.list(IntentState::Unknown, 100).await.unwrap();
    let exhausted = rows
        .iter()
        .filter(|row| row.detail.as_deref() == Some("budget_exhausted"))
        .count();
    assert!(exhausted >= 7, "{exhausted} intents stopped by the budget");
}

#[tokio::test]
async fn the_background_loop_resumes_until_stopped() {
    let backend = Backend::sqlite("loop");
    let journal = backend
        .journal(|b| b.unknown_retry_after(Duration::ZERO))
        .await;
    let server = Server::start().await;
    for i in 0..5 {
        unknown_intent(&journal, &server.url, &format!("bg-{i}"), HOUR).await;
    }
    let handle = journal
        .resumer(&client(3))
        .batch(2)
        .spawn(Duration::from_millis(20));
    server.wait_for_effects(5).await;
    let totals = tokio::time::timeout(Duration::from_secs(10), handle.stop())
        .await
        .expect("the loop stops");
    assert_eq!((totals.claimed, totals.succeeded), (5, 5));
    assert!(journal
        .list(IntentState::Unknown, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(server.seen().len(), 5);
}
