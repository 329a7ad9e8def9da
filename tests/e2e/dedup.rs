//! The server's deduplication, end to end: each scenario written once and run
//! against both servers — the reference server (the oracle) and
//! `tower-idempotency`'s layer in front of an axum route — asserting on what each
//! server did (payments made, what it made of every request), not only on statuses.

use std::time::{Duration, Instant};

use reqwest_resilience::{AttemptOutcome, Backoff, ResilientClient, RetryPolicy, TransportFailure};
use tokio::task::JoinSet;

use crate::support::{
    payment, post_payment, read_payment, recording_client, status, within, Config, Expected, Fault,
    Handled, IdempotentServer, LOST, MS,
};

/// Two tests for one scenario: `SCENARIO::reference` and `SCENARIO::layer`.
macro_rules! against_both_servers {
    ($scenario:ident $(, $runtime:tt)?) => {
        mod $scenario {
            #[tokio::test $($runtime)?]
            async fn reference() {
                super::$scenario::<crate::support::ReferenceServer>().await;
            }

            #[tokio::test $($runtime)?]
            async fn layer() {
                super::$scenario::<crate::support::LayerServer>().await;
            }
        }
    };
}

against_both_servers!(lost_response_after_commit_retry_gets_the_same_result_id_and_one_effect);
against_both_servers!(
    concurrent_100_sends_of_one_intent_make_exactly_one_effect,
    (flavor = "multi_thread", worker_threads = 2)
);
against_both_servers!(concurrent_retry_of_a_timed_out_attempt_waits_out_409_then_gets_the_result);
against_both_servers!(
    payload_mismatch_same_key_different_payload_is_refused_with_422_and_no_effect
);
against_both_servers!(
    payload_mismatch_while_in_progress_is_422_not_409,
    (flavor = "multi_thread", worker_threads = 2)
);
against_both_servers!(expired_key_before_the_retry_allows_a_second_effect);
against_both_servers!(contract_key_scope_is_client_method_route_and_key);

fn assert_distinct_request_ids(server: &impl IdempotentServer, key: &str) {
    let mut ids: Vec<String> = server
        .received_with(key)
        .into_iter()
        .map(|r| r.request_id.expect("every attempt carries a request id"))
        .collect();
    let all = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all, "a request id was reused across attempts");
}

/// The server commits the payment, then the connection closes with no response:
/// the client cannot tell this from "never arrived". The retry carries the same
/// key and gets the stored result: the same id, one effect.
async fn lost_response_after_commit_retry_gets_the_same_result_id_and_one_effect<
    S: IdempotentServer,
>() {
    let server = S::start(Config::default()).await;
    let key = "order-1842-payment";
    server.plan(key, &[Fault::DropAfterCommit]);
    // Expected: one payment; two deliveries (the committed one whose response was
    // lost, and the retry that gets the stored result).
    let expected = Expected {
        effects: 1,
        deliveries: Some(2),
    };
    let (client, sleeper) = recording_client(|p| p);

    let response = post_payment(&client, &server, key, &payment(500))
        .send()
        .await
        .expect("the retry gets the stored result");

    let (status_code, id, outcomes) = read_payment(response).await;
    assert_eq!(status_code, 201);
    // The client really saw a connection closed with no response.
    assert_eq!(outcomes, vec![LOST, status(201)]);
    server.assert_state(key, &expected);
    let id = id.expect("a result id");
    assert_eq!(server.result_ids(key), vec![id.clone()]);
    let received = server.received_with(key);
    assert_eq!(received[0].handled, Handled::Created(id.clone()));
    assert!(!received[0].responded, "the first response was lost");
    assert_eq!(received[1].handled, Handled::Replayed(id));
    assert_distinct_request_ids(&server, key);
    assert_eq!(sleeper.delays().len(), 1);
}

/// 100 concurrent sends of one intent (a double-click storm: same caller key, same
/// body). The first claims the key and is held in progress; the others get 409,
/// wait it out, and receive the stored result.
async fn concurrent_100_sends_of_one_intent_make_exactly_one_effect<S: IdempotentServer>() {
    let server = S::start(Config::default()).await;
    let key = "checkout-7f3a-submit";
    // Whichever request claims the key holds it for 300 ms.
    server.plan(
        key,
        &[Fault::HoldInProgress(Duration::from_millis(300)); 100],
    );
    // Expected: exactly one payment; every caller sees its id (or a typed error).
    let expected = Expected {
        effects: 1,
        deliveries: None,
    };
    let policy = RetryPolicy::builder()
        .max_attempts(50)
        .deadline(Duration::from_secs(15))
        .backoff(Backoff::full_jitter(20 * MS, 100 * MS))
        .no_budget()
        .build()
        .unwrap();
    let client = ResilientClient::with_policy(policy);

    let mut callers = JoinSet::new();
    for _ in 0..100 {
        let request = post_payment(&client, &server, key, &payment(4200));
        callers.spawn(async move {
            match request.send().await {
                Ok(response) => Ok(read_payment(response).await),
                Err(error) => Err(error),
            }
        });
    }
    let mut ids = Vec::new();
    let mut errors = Vec::new();
    let joined = within(Duration::from_secs(30), "100 callers", async {
        let mut joined = 0;
        while let Some(result) = callers.join_next().await {
            joined += 1;
            match result.expect("no caller panics") {
                Ok((201, Some(id), _)) => ids.push(id),
                Ok(other) => panic!("unexpected final response {other:?}"),
                Err(error) => errors.push(error),
            }
        }
        joined
    })
    .await;

    assert_eq!(joined, 100);
    server.wait_idle(Duration::from_secs(2)).await;
    server.assert_state(key, &expected);
    let stored = server.result_ids(key);
    assert!(
        ids.iter().all(|id| *id == stored[0]),
        "{ids:?} vs {stored:?}"
    );
    for error in &errors {
        // Allowed, but typed, with the key to reconcile with.
        assert_eq!(error.idempotency_key().map(|k| k.as_str()), Some(key));
    }
    assert!(
        errors.len() <= 5,
        "most callers wait the 409s out: {errors:?}"
    );
    let log = server.received_with(key);
    let count = |wanted: fn(&Handled) -> bool| log.iter().filter(|r| wanted(&r.handled)).count();
    assert_eq!(count(|h| matches!(h, Handled::Created(_))), 1);
    assert!(
        count(|h| *h == Handled::InProgress409) > 0,
        "duplicates arrived while the first was in progress"
    );
    assert_eq!(count(|h| matches!(h, Handled::Replayed(_))), ids.len() - 1);
    assert_eq!(count(|h| *h == Handled::Mismatch422), 0);
}

/// Same key, different payload: 422 before any effect, returned at once as
/// `Ok(response)` after one request. Same payload with another key order and
/// whitespace is the same intent (replay).
async fn payload_mismatch_same_key_different_payload_is_refused_with_422_and_no_effect<
    S: IdempotentServer,
>() {
    let server = S::start(Config::default()).await;
    let key = "order-1845-payment";
    let (client, sleeper) = recording_client(|p| p);

    // Expected after the first send: one payment, one delivery.
    let first = post_payment(&client, &server, key, &payment(500))
        .send()
        .await
        .unwrap();
    let (code, id, _) = read_payment(first).await;
    assert_eq!(code, 201);
    let id = id.unwrap();
    server.assert_state(
        key,
        &Expected {
            effects: 1,
            deliveries: Some(1),
        },
    );

    // Expected: still one payment, two deliveries; the same id replayed.
    let reordered = client
        .post(server.at("/payments"))
        .bearer_auth("tok_alice")
        .idempotency_key(key)
        .body("{ \"customer\": \"cus_42\",\n  \"currency\": \"EUR\", \"amount\": 500 }")
        .send()
        .await
        .unwrap();
    let (code, replayed, _) = read_payment(reordered).await;
    assert_eq!((code, replayed.as_deref()), (201, Some(id.as_str())));
    server.assert_state(
        key,
        &Expected {
            effects: 1,
            deliveries: Some(2),
        },
    );

    // Expected: still one payment, three deliveries; 422 after one attempt.
    let started = Instant::now();
    let mismatch = post_payment(&client, &server, key, &payment(900))
        .send()
        .await
        .expect("422 is a final response, not an error");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(mismatch.status(), 422);
    let (_, _, outcomes) = read_payment(mismatch).await;
    assert_eq!(outcomes, vec![status(422)], "returned at once");
    assert!(sleeper.delays().is_empty(), "no pause for a 422");
    server.assert_state(
        key,
        &Expected {
            effects: 1,
            deliveries: Some(3),
        },
    );
    assert_eq!(server.received_with(key)[2].handled, Handled::Mismatch422);
    assert_eq!(server.result_ids(key), vec![id]);
}

/// A different payload arriving while the first is still in progress is a 422 too
/// (not a 409 to wait out): the mismatch is refused before any effect.
async fn payload_mismatch_while_in_progress_is_422_not_409<S: IdempotentServer>() {
    let server = S::start(Config::default()).await;
    let key = "order-1846-payment";
    server.plan(key, &[Fault::HoldInProgress(Duration::from_millis(400))]);
    // Expected: one payment (the first payload), two deliveries.
    let (client, sleeper) = recording_client(|p| p);
    let first = tokio::spawn(post_payment(&client, &server, key, &payment(500)).send());
    crate::support::wait_until("the first to claim the key", Duration::from_secs(5), || {
        server.is_in_progress(key)
    })
    .await;

    let mismatch = post_payment(&client, &server, key, &payment(501))
        .send()
        .await
        .unwrap();
    assert_eq!(mismatch.status(), 422);
    assert!(sleeper.delays().is_empty());
    let first = first.await.unwrap().expect("the first completes");
    assert_eq!(first.status(), 201);
    server.assert_state(
        key,
        &Expected {
            effects: 1,
            deliveries: Some(2),
        },
    );
}

/// **Documented limitation.** The server forgets a key after its TTL. A response
/// lost after commit, retried only after the key expired, is a *new* intent to the
/// server: a second payment. This is the boundary of deduplication, and the reason
/// the crate promises at-least-once delivery plus deduplication inside the
/// server's window, never exactly-once: keep retries (deadline, Retry-After
/// ceiling, resends of `Error::idempotency_key`) well inside the server's TTL.
async fn expired_key_before_the_retry_allows_a_second_effect<S: IdempotentServer>() {
    let server = S::start(Config {
        ttl: Some(Duration::from_millis(50)),
        ..Config::default()
    })
    .await;
    let key = "order-1850-payment";
    server.plan(key, &[Fault::DropAfterCommit]);
    // Expected: TWO payments (the lost one and the retry's), two deliveries.
    let expected = Expected {
        effects: 2,
        deliveries: Some(2),
    };
    let policy = RetryPolicy::builder()
        .backoff(Backoff::constant(300 * MS))
        .no_budget()
        .build()
        .unwrap();
    let client = ResilientClient::with_policy(policy);

    let response = post_payment(&client, &server, key, &payment(500))
        .send()
        .await
        .unwrap();

    let (code, id, outcomes) = read_payment(response).await;
    assert_eq!((code, outcomes), (201, vec![LOST, status(201)]));
    server.assert_state(key, &expected);
    let ids = server.result_ids(key);
    assert_eq!(ids.len(), 2);
    assert_eq!(
        id.as_deref(),
        Some(ids[1].as_str()),
        "the caller sees the second"
    );
    assert_ne!(ids[0], ids[1]);
}

/// The key scope is (client, method, route, key): the same key from another client
/// or on another route is another intent; from the same client it is a replay.
async fn contract_key_scope_is_client_method_route_and_key<S: IdempotentServer>() {
    let server = S::start(Config::default()).await;
    let key = "shared-looking-key-1";
    let (client, _) = recording_client(|p| p);
    // Expected: alice/payments, bob/payments, alice/refunds → three effects;
    // alice/payments again → replay.
    let mut ids = Vec::new();
    for (token, route) in [
        ("tok_alice", "/payments"),
        ("tok_bob", "/payments"),
        ("tok_alice", "/refunds"),
        ("tok_alice", "/payments"),
    ] {
        let response = client
            .post(server.at(route))
            .bearer_auth(token)
            .idempotency_key(key)
            .body(payment(500).to_string())
            .send()
            .await
            .unwrap();
        let (code, id, _) = read_payment(response).await;
        assert_eq!(code, 201);
        ids.push(id.unwrap());
    }
    server.assert_state(
        key,
        &Expected {
            effects: 3,
            deliveries: Some(4),
        },
    );
    assert_eq!(ids[0], ids[3]);
    assert!(ids[2].starts_with("re_"), "{ids:?}");
    assert_ne!(ids[0], ids[1]);
}

/// A single intent whose first attempt timed out while the server still holds the
/// key: the retries get 409 until the effect commits, then the stored result.
async fn concurrent_retry_of_a_timed_out_attempt_waits_out_409_then_gets_the_result<
    S: IdempotentServer,
>() {
    let server = S::start(Config::default()).await;
    let key = "order-1844-payment";
    server.plan(key, &[Fault::HoldInProgress(Duration::from_millis(500))]);
    // Expected: one payment; at least 3 deliveries (timeout, ≥1 × 409, replay).
    let policy = RetryPolicy::builder()
        .max_attempts(30)
        .attempt_timeout(Duration::from_millis(150))
        .deadline(Duration::from_secs(5))
        .backoff(Backoff::constant(50 * MS))
        .no_budget()
        .build()
        .unwrap();
    let client = ResilientClient::with_policy(policy);

    let response = post_payment(&client, &server, key, &payment(500))
        .send()
        .await
        .expect("replayed after the hold");

    let (status_code, id, outcomes) = read_payment(response).await;
    assert_eq!(status_code, 201);
    assert_eq!(
        outcomes[0],
        AttemptOutcome::Failed(TransportFailure::Timeout)
    );
    assert!(outcomes.contains(&status(409)), "{outcomes:?}");
    assert_eq!(*outcomes.last().unwrap(), status(201));
    server.assert_state(
        key,
        &Expected {
            effects: 1,
            deliveries: Some(outcomes.len()),
        },
    );
    assert_eq!(server.result_ids(key), vec![id.unwrap()]);
}
