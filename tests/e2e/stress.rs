//! Stress: 2,000 intents at concurrency 200 against the reference server with 30 %
//! random faults (503, 429, rollbacks, crashes, lost responses, 504 after commit,
//! holds and slow responses up to 200 ms), one client and so one shared retry budget (the default: 10 % of
//! requests + 10 per 10 s window), deadline 2 s.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest_resilience::{Backoff, Error, GiveUpReason, ResilientClient, RetryPolicy};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::support::reference_server::RandomFaults;
use crate::support::{read_payment, within, Config, IdempotentServer, ReferenceServer, MS};

const INTENTS: usize = 2_000;
const CONCURRENCY: usize = 200;
const DEADLINE: Duration = Duration::from_secs(2);
/// Scheduling noise allowed past the deadline (200 tasks, 2 cores, debug build).
const MARGIN: Duration = Duration::from_millis(500);

struct Finished {
    elapsed: Duration,
    /// The attempts' request ids, to find the generated key on the server.
    request_ids: Vec<String>,
    attempts: usize,
    result: Result<(u16, Option<String>), Error>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stress_2000_intents_at_concurrency_200_with_30_percent_faults() {
    let server = ReferenceServer::start(Config {
        ttl: None,
        random_faults: Some(RandomFaults {
            probability: 0.3,
            seed: 0x57E5,
            max_delay: Duration::from_millis(200),
        }),
    })
    .await;
    // Expected: every intent ends (success or typed error) within 2 s + margin; no
    // key has more than one effect; a known-outcome failure has none; retries stay
    // within the shared budget.
    let policy = RetryPolicy::builder()
        .deadline(DEADLINE)
        // The whole deadline per attempt: the attempt timeout also bounds reading
        // the body, and 200 tasks on 2 cores can starve a read for over a second.
        .attempt_timeout(DEADLINE)
        .backoff(Backoff::full_jitter(10 * MS, 100 * MS))
        .rng_seed(0x57E5)
        .build()
        .unwrap();
    let budget = policy.budget().expect("the default budget").clone();
    let client = ResilientClient::with_policy(policy);
    let url = server.at("/payments");

    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    let mut intents = JoinSet::new();
    let started = Instant::now();
    for i in 0..INTENTS {
        let request = client
            .post(&url)
            .bearer_auth("tok_stress")
            .header("content-type", "application/json")
            .body(format!(r#"{{"amount":{},"currency":"EUR"}}"#, i + 1));
        let permits = permits.clone();
        intents.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("semaphore open");
            let sent = Instant::now();
            let result = request.send().await;
            let elapsed = sent.elapsed();
            match result {
                Ok(response) => {
                    let log = reqwest_resilience::ResponseExt::attempt_log(&response)
                        .cloned()
                        .unwrap_or_default();
                    let (status, id, _) = read_payment(response).await;
                    Finished {
                        elapsed,
                        request_ids: log
                            .attempts()
                            .iter()
                            .map(|a| a.request_id().to_string())
                            .collect(),
                        attempts: log.len(),
                        result: Ok((status, id)),
                    }
                }
                Err(error) => Finished {
                    elapsed,
                    request_ids: Vec::new(),
                    attempts: error.attempt_log().len(),
                    result: Err(error),
                },
            }
        });
    }

    let finished = within(Duration::from_secs(50), "the stress run", async {
        let mut finished = Vec::with_capacity(INTENTS);
        while let Some(joined) = intents.join_next().await {
            match joined {
                Ok(done) => finished.push(done),
                Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
                Err(error) => panic!("intent task failed: {error}"),
            }
        }
        finished
    })
    .await;
    let run_time = started.elapsed();
    // Every task joined; none is left running.
    assert_eq!(finished.len(), INTENTS);
    assert!(intents.is_empty());
    server.wait_idle(Duration::from_secs(5)).await;

    // Key of each delivery, by request id.
    let key_of: HashMap<String, String> = server
        .received()
        .into_iter()
        .filter_map(|r| Some((r.request_id?, r.key?)))
        .collect();
    let effects = server.effects_by_key();
    let mut reasons: HashMap<&'static str, usize> = HashMap::new();
    let (mut succeeded, mut unknown) = (0, 0);
    let mut slowest = Duration::ZERO;
    let mut retries = 0;
    for done in &finished {
        slowest = slowest.max(done.elapsed);
        assert!(
            done.elapsed <= DEADLINE + MARGIN,
            "an intent took {:?}",
            done.elapsed
        );
        retries += done.attempts.saturating_sub(1);
        match &done.result {
            Ok((status, id)) => {
                succeeded += 1;
                assert_eq!(*status, 201, "only a success is a final response here");
                let key = done
                    .request_ids
                    .iter()
                    .find_map(|id| key_of.get(id))
                    .expect("the server saw the intent");
                assert_eq!(
                    effects.get(key).map(Vec::as_slice),
                    Some(std::slice::from_ref(id.as_ref().expect("a result id"))),
                    "a success is exactly one effect with the caller's id"
                );
            }
            Err(error) => {
                *reasons.entry(error.reason().as_str()).or_default() += 1;
                assert!(
                    matches!(
                        error.reason(),
                        GiveUpReason::AttemptsExhausted
                            | GiveUpReason::DeadlineExceeded
                            | GiveUpReason::BudgetExhausted
                    ),
                    "unexpected give-up: {error}"
                );
                let key = error.idempotency_key().expect("a keyed intent").as_str();
                let made = effects.get(key).map_or(0, Vec::len);
                if error.is_outcome_unknown() {
                    unknown += 1;
                    assert!(made <= 1, "{error}: {made} effects");
                } else {
                    assert_eq!(made, 0, "{error}: a known outcome with an effect");
                }
            }
        }
    }
    assert!(
        effects.values().all(|ids| ids.len() <= 1),
        "a key with two effects"
    );
    // The budget: at most 10 % of the intents + 10 per window, over the ≤ 2
    // windows a short run can touch (a loose bound; without a budget 30 % faults
    // and 3 attempts would mean ~800 retries).
    let windows = run_time.as_secs() / budget.window().as_secs() + 2;
    let allowed = 2 * INTENTS / 10 + budget.reserve() as usize * windows as usize;
    assert!(retries <= allowed, "{retries} retries > {allowed}");
    assert_eq!(server.in_flight(), 0);
    println!(
        "stress: {INTENTS} intents in {run_time:?}: {succeeded} succeeded, {} failed \
         ({unknown} with an unknown outcome) {reasons:?}; {retries} retries; slowest \
         intent {slowest:?}; {} effects; {} deliveries",
        INTENTS - succeeded,
        server.effects(),
        server.received().len()
    );
}
