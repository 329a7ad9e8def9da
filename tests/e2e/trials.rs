//! Randomized trials: each trial is one intent against a seeded random sequence of
//! faults (lost responses, rollbacks, crashes, 503s, 429s with Retry-After, 504s
//! after commit, holds, slow responses past the attempt timeout). `E2E_TRIALS` sets the number (default 200), `E2E_SEED` the
//! seed; a failure message names both and the trial, so it can be replayed.
//!
//! For every trial:
//! * `Ok` → exactly one effect, and the caller's result id is the server's;
//! * `Err` with `is_outcome_unknown()` → at most one effect, and a later resend
//!   with `error.idempotency_key()` converges to exactly one;
//! * `Err` with a known outcome → no effect at all (and the resend makes one);
//! * the server never saw more deliveries than the client's attempt log, and
//!   every request id it saw is one of the log's (no hidden resend below us).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest_resilience::{AttemptLog, AttemptOutcome, Backoff, ResilientClient, RetryPolicy};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::support::{
    payment, post_payment, read_payment, recording_client, within, Config, Fault, IdempotentServer,
    ReferenceServer, MS,
};

const DEFAULT_TRIALS: usize = 200;
const DEFAULT_SEED: u64 = 0x5EED_2026;
/// Trials run this many at a time (each has its own key, so they do not interact).
const CONCURRENT_TRIALS: usize = 8;
/// Attempt timeout of the trial client; the slow faults exceed it.
const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(120);

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(default)
}

fn random_fault(rng: &mut StdRng) -> Fault {
    match rng.random_range(0..10) {
        0 => Fault::Clean,
        8 => Fault::TooManyRequests {
            retry_after_secs: Some(1),
        },
        9 => Fault::GatewayTimeoutAfterCommit,
        1 => Fault::Unavailable {
            retry_after_secs: None,
        },
        2 => Fault::DropBeforeCommit,
        3 => Fault::RollbackBeforeCommit,
        4 => Fault::DropAfterCommit,
        // Committed, answered after the client gave up: a lost response by timeout.
        5 => Fault::SlowResponse(ATTEMPT_TIMEOUT + Duration::from_millis(80)),
        // Held in progress past the client's timeout: its retries meet 409.
        6 => Fault::HoldInProgress(ATTEMPT_TIMEOUT + Duration::from_millis(80)),
        _ => Fault::SlowResponse(Duration::from_millis(rng.random_range(1..40))),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Ending {
    Succeeded,
    FailedKnown,
    FailedUnknown,
}

/// The server saw no delivery the client did not log.
fn assert_deliveries_match(server: &ReferenceServer, key: &str, log: &AttemptLog, context: &str) {
    let sent: HashSet<String> = log
        .attempts()
        .iter()
        .map(|attempt| attempt.request_id().to_string())
        .collect();
    assert_eq!(sent.len(), log.len(), "request ids repeat; {context}");
    let received = server.received_with(key);
    assert!(
        received.len() <= log.len(),
        "the server saw {} deliveries for {} logged attempts; {context}",
        received.len(),
        log.len()
    );
    for delivery in &received {
        let id = delivery.request_id.clone().unwrap_or_default();
        assert!(sent.contains(&id), "unknown request id {id}; {context}");
    }
    // Every attempt that got a status was delivered.
    for attempt in log.attempts() {
        if let AttemptOutcome::Status(_) = attempt.outcome() {
            let id = attempt.request_id().to_string();
            assert!(
                received
                    .iter()
                    .any(|d| d.request_id.as_deref() == Some(id.as_str())),
                "attempt {} got a status but the server never saw it; {context}",
                attempt.number()
            );
        }
    }
}

async fn run_trial(
    server: &ReferenceServer,
    client: &ResilientClient,
    resend_client: &ResilientClient,
    seed: u64,
    trial: usize,
) -> Ending {
    let mut rng = StdRng::seed_from_u64(seed ^ (trial as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let faults: Vec<Fault> = (0..rng.random_range(0..=5))
        .map(|_| random_fault(&mut rng))
        .collect();
    let amount = rng.random_range(1..100_000);
    let key = format!("trial-{seed:x}-{trial}");
    server.plan(&key, faults.iter().copied());
    let context = |what: &str| {
        format!(
            "{what}: trial {trial} (E2E_SEED={seed}), faults {faults:?}; server log:\n{:#?}",
            server.received_with(&key)
        )
    };

    let result = post_payment(client, server, &key, &payment(amount))
        .send()
        .await;
    // Holds and slow responses of abandoned attempts finish (or commit) first.
    server.wait_idle_for(&key, Duration::from_secs(5)).await;

    match result {
        Ok(response) => {
            let log = reqwest_resilience::ResponseExt::attempt_log(&response)
                .cloned()
                .expect("attempt log");
            let (code, id, outcomes) = read_payment(response).await;
            assert_eq!(code, 201, "{}", context(&format!("{outcomes:?}")));
            let id = id.expect("a result id");
            // Exactly one effect, and the caller holds its id.
            assert_eq!(
                server.result_ids(&key),
                vec![id],
                "{}",
                context("success must mean exactly one effect with the caller's id")
            );
            assert_deliveries_match(server, &key, &log, &context("deliveries"));
            Ending::Succeeded
        }
        Err(error) => {
            assert_eq!(
                error.idempotency_key().map(|k| k.as_str()),
                Some(key.as_str()),
                "{}",
                context("the error carries the intent's key")
            );
            let effects = server.effects_for(&key);
            let ending = if error.is_outcome_unknown() {
                assert!(
                    effects <= 1,
                    "{}",
                    context(&format!("{error}: {effects} effects"))
                );
                Ending::FailedUnknown
            } else {
                assert_eq!(
                    effects,
                    0,
                    "{}",
                    context(&format!("{error}: a known outcome must mean no effect"))
                );
                Ending::FailedKnown
            };
            assert_deliveries_match(server, &key, error.attempt_log(), &context("deliveries"));

            // Later, resend as the same intent: converges to exactly one effect.
            server.clear_plan(&key);
            let same_key = error.idempotency_key().unwrap().as_str().to_owned();
            let response = post_payment(resend_client, server, &same_key, &payment(amount))
                .send()
                .await
                .unwrap_or_else(|e| panic!("{}", context(&format!("resend failed: {e}"))));
            let (code, id, _) = read_payment(response).await;
            assert_eq!(code, 201, "{}", context("resend"));
            assert_eq!(
                server.result_ids(&key),
                vec![id.expect("a result id")],
                "{}",
                context("the resend must converge to exactly one effect")
            );
            ending
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_random_fault_sequences_end_in_one_effect_or_a_typed_error() {
    let trials = env_or("E2E_TRIALS", DEFAULT_TRIALS);
    let seed = env_or("E2E_SEED", DEFAULT_SEED);
    let server = Arc::new(ReferenceServer::start(Config::default()).await);
    let (client, _) = recording_client(|p| {
        p.rng_seed(seed)
            .max_attempts(4)
            .attempt_timeout(ATTEMPT_TIMEOUT)
            .deadline(Duration::from_secs(5))
            .backoff(Backoff::full_jitter(MS, 10 * MS))
    });
    let resend_client = ResilientClient::with_policy(
        RetryPolicy::builder()
            .max_attempts(5)
            .attempt_timeout(Duration::from_secs(3))
            .deadline(Duration::from_secs(5))
            .backoff(Backoff::constant(20 * MS))
            .no_budget()
            .build()
            .unwrap(),
    );

    let permits = Arc::new(Semaphore::new(CONCURRENT_TRIALS));
    let mut running = JoinSet::new();
    for trial in 0..trials {
        let (server, client, resend_client, permits) = (
            server.clone(),
            client.clone(),
            resend_client.clone(),
            permits.clone(),
        );
        running.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("semaphore open");
            run_trial(&server, &client, &resend_client, seed, trial).await
        });
    }
    let limit = Duration::from_secs(30 + trials as u64 / 4);
    let endings = within(limit, "the trials", async {
        let mut endings = Vec::new();
        while let Some(joined) = running.join_next().await {
            match joined {
                Ok(ending) => endings.push(ending),
                Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                Err(error) => panic!("trial task failed: {error}"),
            }
        }
        endings
    })
    .await;

    assert_eq!(endings.len(), trials);
    let count = |wanted| endings.iter().filter(|e| **e == wanted).count();
    let (ok, known, unknown) = (
        count(Ending::Succeeded),
        count(Ending::FailedKnown),
        count(Ending::FailedUnknown),
    );
    println!(
        "{trials} trials (E2E_SEED={seed}): {ok} succeeded, {known} failed with a known \
         outcome, {unknown} failed with an unknown outcome; {} effects in all",
        server.effects()
    );
    assert_eq!(
        server.effects(),
        trials,
        "one effect per intent, in the end"
    );
    if trials >= 100 {
        // The loop really exercised both main endings (a known-outcome failure
        // needs every attempt refused, which is rarer).
        assert!(ok > 0 && unknown > 0, "{ok}/{known}/{unknown}");
    }
}
