//! The seeds' scenarios against the reference server, each with the server state it
//! expects written down before the request is sent. Those about the server's
//! deduplication itself run against both servers, in `dedup`.

use std::time::Duration;

use reqwest_resilience::{AttemptOutcome, KeyFormat, TransportFailure};

use crate::support::{
    payment, post_payment, read_payment, recording_client, status, Config, Expected, Fault,
    Handled, IdempotentServer, ReferenceServer, LOST,
};

/// A response lost after commit (as in `dedup`) with the key the client generates:
/// both deliveries carry one UUID v4 the caller never saw.
#[tokio::test]
async fn lost_response_with_a_generated_key_is_replayed_not_repeated() {
    let server = ReferenceServer::start(Config::default()).await;
    server.script([Fault::DropAfterCommit]);
    // Expected: one payment, two deliveries with one generated key.
    let (client, _) = recording_client(|p| p);

    let response = client
        .post(server.at("/payments"))
        .bearer_auth("tok_alice")
        .header("content-type", "application/json")
        .body(payment(700).to_string())
        .send()
        .await
        .expect("replayed");

    let (status_code, id, outcomes) = read_payment(response).await;
    assert_eq!((status_code, outcomes), (201, vec![LOST, status(201)]));
    let received = server.received();
    assert_eq!(received.len(), 2);
    let key = received[0].key.clone().expect("a generated key");
    assert_eq!(received[1].key.as_deref(), Some(key.as_str()));
    assert_eq!(uuid::Uuid::parse_str(&key).unwrap().get_version_num(), 4);
    server.assert_state(
        &key,
        &Expected {
            effects: 1,
            deliveries: Some(2),
        },
    );
    assert_eq!(server.result_ids(&key), vec![id.unwrap()]);
    assert_eq!(server.effects(), 1);
}

/// The server commits, then answers too late: the attempt times out (outcome
/// unknown), the retry gets the stored result.
#[tokio::test]
async fn lost_response_by_attempt_timeout_after_commit_is_replayed() {
    let server = ReferenceServer::start(Config::default()).await;
    let key = "order-1843-payment";
    server.plan(key, [Fault::SlowResponse(Duration::from_millis(600))]);
    // Expected: one payment, two deliveries.
    let expected = Expected {
        effects: 1,
        deliveries: Some(2),
    };
    let (client, _) = recording_client(|p| p.attempt_timeout(Duration::from_millis(200)));

    let response = post_payment(&client, &server, key, &payment(500))
        .send()
        .await
        .expect("replayed");

    let (status_code, id, outcomes) = read_payment(response).await;
    assert_eq!(status_code, 201);
    assert_eq!(
        outcomes,
        vec![
            AttemptOutcome::Failed(TransportFailure::Timeout),
            status(201)
        ]
    );
    server.assert_state(key, &expected);
    let received = server.received_with(key);
    assert_eq!(received[1].handled, Handled::Replayed(id.unwrap()));
    server.wait_idle_for(key, Duration::from_secs(2)).await;
}

/// The transaction fails before commit: 503, nothing stored, the key released.
/// The retry runs the effect once.
#[tokio::test]
async fn rollback_before_commit_then_retry_creates_exactly_one_effect() {
    let server = ReferenceServer::start(Config::default()).await;
    let key = "order-1847-payment";
    server.plan(key, [Fault::RollbackBeforeCommit]);
    // Expected: one payment, two deliveries (rolled back, created).
    let expected = Expected {
        effects: 1,
        deliveries: Some(2),
    };
    let (client, _) = recording_client(|p| p);

    let response = post_payment(&client, &server, key, &payment(500))
        .send()
        .await
        .unwrap();

    let (code, id, outcomes) = read_payment(response).await;
    assert_eq!(code, 201);
    assert_eq!(outcomes, vec![status(503), status(201)]);
    server.assert_state(key, &expected);
    let received = server.received_with(key);
    assert_eq!(received[0].handled, Handled::RolledBack503);
    assert_eq!(received[1].handled, Handled::Created(id.unwrap()));
}

/// Every attempt rolled back: no effect. The client still reports the outcome as
/// unknown — a 503 may also come from a gateway that forwarded the request — so the
/// caller resends with the same key, which makes exactly one effect.
#[tokio::test]
async fn rollback_on_every_attempt_leaves_no_effect_and_a_resend_with_the_key_makes_one() {
    let server = ReferenceServer::start(Config::default()).await;
    let key = "order-1848-payment";
    server.plan(key, [Fault::RollbackBeforeCommit; 3]);
    // Expected after the intent: no payment, three deliveries.
    let (client, _) = recording_client(|p| p.max_attempts(3));

    let error = post_payment(&client, &server, key, &payment(500))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_attempts_exhausted(), "{error}");
    assert!(
        error.is_outcome_unknown(),
        "a 503 does not prove that nothing was done"
    );
    assert_eq!(error.last_status().map(|s| s.as_u16()), Some(503));
    server.assert_state(
        key,
        &Expected {
            effects: 0,
            deliveries: Some(3),
        },
    );

    // Expected after the resend: one payment, four deliveries.
    let again = error.idempotency_key().unwrap().as_str().to_owned();
    let response = post_payment(&client, &server, &again, &payment(500))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    server.assert_state(
        key,
        &Expected {
            effects: 1,
            deliveries: Some(4),
        },
    );
}

/// The process dies on receipt (connection closed before anything was done): the
/// client cannot know, so the outcome is unknown; the retry makes the one effect.
#[tokio::test]
async fn rollback_by_crash_before_commit_then_retry_creates_exactly_one_effect() {
    let server = ReferenceServer::start(Config::default()).await;
    let key = "order-1849-payment";
    server.plan(key, [Fault::DropBeforeCommit, Fault::DropBeforeCommit]);
    // Expected: one payment, three deliveries.
    let (client, _) = recording_client(|p| p.max_attempts(3));

    let response = post_payment(&client, &server, key, &payment(500))
        .send()
        .await
        .unwrap();

    let (code, _, outcomes) = read_payment(response).await;
    assert_eq!((code, outcomes), (201, vec![LOST, LOST, status(201)]));
    server.assert_state(
        key,
        &Expected {
            effects: 1,
            deliveries: Some(3),
        },
    );
}

/// The server's contract itself: POST without a key is refused (400, not retried).
#[tokio::test]
async fn contract_post_without_a_key_is_refused_with_400_and_nothing_stored() {
    let server = ReferenceServer::start(Config::default()).await;
    let (client, sleeper) = recording_client(|p| p);
    let response = client
        .post(server.at("/payments"))
        .without_idempotency_key()
        .body(payment(500).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(server.effects(), 0);
    assert_eq!(server.received().len(), 1);
    assert_eq!(server.received()[0].handled, Handled::MissingKey400);
    assert!(sleeper.delays().is_empty());
}

/// With the draft's sf-string wire format, the same key written two ways must be
/// one intent. Here the caller persisted the header value it sent (`"order-77"`,
/// the wire form) and, after a lost response, resends with that header set by
/// hand. The crate unquotes a hand-set sf-string header before taking it as the
/// caller's key (encoding it again, `"\"order-77\""`, would be a second key: a
/// second payment).
/// Expected: the hand-set header reaches the server unchanged; one payment.
#[tokio::test]
async fn lost_response_resent_with_the_sf_string_header_set_by_hand_is_the_same_intent() {
    let server = ReferenceServer::start(Config::default()).await;
    let wire = r#""order-77""#;
    server.plan(wire, [Fault::DropAfterCommit]);
    // Expected: one payment in all; the resend is a replay of it.
    let (client, _) = recording_client(|p| p.key_format(KeyFormat::SfString).max_attempts(1));

    let error = post_payment(&client, &server, "order-77", &payment(500))
        .send()
        .await
        .expect_err("the only attempt's response is lost");
    assert!(error.is_outcome_unknown());
    assert_eq!(server.received()[0].key.as_deref(), Some(wire));
    assert_eq!(server.effects(), 1);

    // The resend, with the header value persisted from the first send.
    let response = client
        .post(server.at("/payments"))
        .bearer_auth("tok_alice")
        .header("Idempotency-Key", wire)
        .body(payment(500).to_string())
        .send()
        .await
        .unwrap();
    let (code, id, _) = read_payment(response).await;
    assert_eq!(code, 201);
    assert_eq!(
        server.received()[1].key.as_deref(),
        Some(wire),
        "a key header set by hand must reach the server as set"
    );
    assert_eq!(server.effects(), 1, "the resend paid a second time");
    assert_eq!(server.result_ids(wire), vec![id.unwrap()]);
}
