//! Cancellation: the caller's future is the intent. Dropping it (or aborting its
//! task) during a backoff pause ends the intent there: no further attempt.

use std::time::{Duration, Instant};

use reqwest_resilience::{DelayReason, ResilientClient, RetryPolicy, TokioSleeper};

use crate::support::{
    payment, post_payment, read_payment, wait_until, Config, Expected, Fault, Handled,
    IdempotentServer, ReferenceServer,
};

/// How long the server is watched after the drop: past the 1 s Retry-After.
const WATCH: Duration = Duration::from_millis(1500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_dropping_send_during_the_pause_sends_no_further_attempt() {
    let server = ReferenceServer::start(Config::default()).await;
    let unavailable = Fault::Unavailable {
        retry_after_secs: Some(1),
    };
    let (dropped, aborted, control) = ("cancel-dropped", "cancel-aborted", "cancel-control");
    for key in [dropped, aborted, control] {
        server.plan(key, [unavailable]);
    }
    // Expected after the watch: the dropped and the aborted intents were delivered
    // once and made no payment; the control (not cancelled) retried after ≥ 1 s
    // and made one.
    let cancelled = Expected {
        effects: 0,
        deliveries: Some(1),
    };
    let completed = Expected {
        effects: 1,
        deliveries: Some(2),
    };
    // The real timer: the pause is a real 1 s sleep.
    let client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .sleeper(TokioSleeper)
            .no_budget()
            .build()
            .unwrap(),
    );
    let answered = |key: &'static str| {
        let server = &server;
        move || {
            server
                .received_with(key)
                .first()
                .is_some_and(|r| r.handled == Handled::Unavailable503 && r.responded)
        }
    };

    let control_task = tokio::spawn(post_payment(&client, &server, control, &payment(3)).send());
    let aborted_task = tokio::spawn(post_payment(&client, &server, aborted, &payment(2)).send());
    let send = post_payment(&client, &server, dropped, &payment(1)).send();
    tokio::select! {
        result = send => panic!("send ended during its 1 s pause: {result:?}"),
        () = async {
            wait_until("the first attempt to be answered", Duration::from_secs(5), answered(dropped)).await;
            wait_until("the other first attempt", Duration::from_secs(5), answered(aborted)).await;
            // Let the client read the 503 and enter its pause.
            tokio::time::sleep(Duration::from_millis(150)).await;
        } => {}
    }
    // `select!` has dropped the `send` future: the intent is cancelled.
    aborted_task.abort();
    let cancelled_at = Instant::now();

    tokio::time::sleep(WATCH).await;
    assert!(cancelled_at.elapsed() >= WATCH);
    server.assert_state(dropped, &cancelled);
    server.assert_state(aborted, &cancelled);
    assert!(aborted_task.await.unwrap_err().is_cancelled());

    // The control shows what would have happened: a retry ≥ 1 s after the first.
    let response = control_task
        .await
        .unwrap()
        .expect("the control intent completes");
    let log = reqwest_resilience::ResponseExt::attempt_log(&response)
        .cloned()
        .unwrap();
    assert_eq!(read_payment(response).await.0, 201);
    let pause = log.attempts()[0].delay_after().unwrap();
    assert_eq!(pause.reason, DelayReason::RetryAfter);
    assert_eq!(pause.delay, Duration::from_secs(1));
    server.assert_state(control, &completed);
    let received = server.received_with(control);
    assert!(received[1].at - received[0].at >= Duration::from_secs(1));
}
