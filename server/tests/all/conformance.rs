//! The IETF draft's cases and Stripe's, each over real HTTP against a fresh server,
//! each asserting the handler's effect count as well as the answers.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tower_idempotency::{IdempotencyLayer, ManualClock, MemoryStore, Store};

use crate::support::{account, send, serve, Answer, Effects, Req};

const LEASE: Duration = Duration::from_secs(10);
const RETENTION: Duration = Duration::from_secs(60);

/// What a step expects back.
#[derive(Debug, Clone, Copy)]
struct Expect {
    status: u16,
    replayed: bool,
    /// The payment id in the body (`{"payment":N}`), where the route returns one.
    payment: Option<u64>,
}

const fn fresh(status: u16, payment: u64) -> Expect {
    Expect {
        status,
        replayed: false,
        payment: Some(payment),
    }
}

const fn replay(status: u16, payment: u64) -> Expect {
    Expect {
        status,
        replayed: true,
        payment: Some(payment),
    }
}

const fn refused(status: u16) -> Expect {
    Expect {
        status,
        replayed: false,
        payment: None,
    }
}

enum Step {
    Send(Req, Expect),
    /// Sends in the background; its handler waits (body `hold…`) until `Finish`.
    Start(Req),
    /// Lets the earliest held handler go and checks its answer.
    Finish(Expect),
    Advance(Duration),
    Prune(u64),
}

use Step::*;

fn post(key: &str, body: &str) -> Req {
    Req::post("/payments", key, body)
}

fn cases() -> Vec<(&'static str, Vec<Step>, u64)> {
    let k = "key-1";
    let no_key = Req {
        key: None,
        ..post(k, "a")
    };
    let long_key = Req {
        key: Some("k".repeat(256)),
        ..post(k, "a")
    };
    let two_keys = Req {
        key: Some("key-1\nkey-2".to_owned()),
        ..post(k, "a")
    };
    let longest_key = Req {
        key: Some("k".repeat(255)),
        ..post(k, "a")
    };
    let bob = Req {
        account: Some("acct_bob"),
        ..post(k, "a")
    };
    let nobody = Req {
        account: None,
        ..post(k, "a")
    };
    let new_token = Req {
        token: "token-2",
        ..post(k, "a")
    };
    let quoted = Req {
        key: Some(format!("\"{k}\"")),
        ..post(k, "a")
    };
    let get = Req {
        method: "GET",
        key: None,
        ..post(k, "")
    };
    let put = Req {
        method: "PUT",
        key: None,
        ..post(k, "x")
    };
    #[rustfmt::skip]
    let cases = vec![
        ("draft: a missing key is refused with 400", vec![Send(no_key, refused(400))], 0),
        ("stripe: a key over 255 characters is refused", vec![Send(long_key, refused(400))], 0),
        ("two keys on one request are refused", vec![Send(two_keys, refused(400))], 0),
        ("stripe: a key of 255 characters is accepted", vec![Send(longest_key, fresh(201, 1))], 1),
        ("no principal: 401, nothing executed", vec![Send(nobody, refused(401))], 0),
        ("the first request executes", vec![Send(post(k, "a"), fresh(201, 1))], 1),
        ("draft: a retry of a finished key replays", vec![Send(post(k, "a"), fresh(201, 1)), Send(post(k, "a"), replay(201, 1)), Send(post(k, "a"), replay(201, 1))], 1),
        ("a quoted key is the same key", vec![Send(post(k, "a"), fresh(201, 1)), Send(quoted, replay(201, 1))], 1),
        ("a refreshed credential is the same caller", vec![Send(post(k, "a"), fresh(201, 1)), Send(new_token, replay(201, 1))], 1),
        ("draft: reuse with another body is refused with 422", vec![Send(post(k, "a"), fresh(201, 1)), Send(post(k, "b"), refused(422))], 1),
        ("draft: a key in progress answers 409", vec![Start(post(k, "hold")), Send(post(k, "hold"), refused(409)), Finish(fresh(201, 1)), Send(post(k, "hold"), replay(201, 1))], 1),
        ("a key in progress with another body answers 422", vec![Start(post(k, "hold")), Send(post(k, "other"), refused(422)), Finish(fresh(201, 1))], 1),
        ("another principal's key is its own", vec![Send(post(k, "a"), fresh(201, 1)), Send(bob.clone(), fresh(201, 2)), Send(bob, replay(201, 2))], 2),
        ("another endpoint's key is its own", vec![Send(post(k, "a"), fresh(201, 1)), Send(Req::post("/refunds", k, "a"), fresh(201, 2))], 2),
        ("stripe: an expired key executes again", vec![Send(post(k, "a"), fresh(201, 1)), Advance(RETENTION + Duration::from_secs(1)), Send(post(k, "b"), fresh(201, 2))], 2),
        ("a key kept for the retention still replays", vec![Send(post(k, "a"), fresh(201, 1)), Advance(RETENTION - Duration::from_secs(1)), Send(post(k, "a"), replay(201, 1))], 1),
        ("an expired key is pruned, then executes", vec![Send(post(k, "a"), fresh(201, 1)), Prune(0), Advance(RETENTION), Prune(1), Send(post(k, "a"), fresh(201, 2))], 2),
        ("a lapsed lease is reclaimed; the late result is dropped", vec![Start(post(k, "hold")), Send(post(k, "hold"), refused(409)), Advance(LEASE), Start(post(k, "hold")), Finish(fresh(201, 1)), Finish(fresh(201, 2)), Send(post(k, "hold"), replay(201, 2))], 2),
        ("an oversized request body is refused with 413", vec![Send(post(k, &"x".repeat(4097)), refused(413))], 0),
        ("a request body at the limit is accepted", vec![Send(post(k, &"x".repeat(4096)), fresh(201, 1))], 1),
        ("an oversized response is not stored: its retry gets 410", vec![Send(Req::post("/reports", k, ""), refused(200)), Send(Req::post("/reports", k, ""), refused(410))], 1),
        ("a streamed response is not stored: its retry gets 410", vec![Send(Req::post("/stream", k, ""), refused(200)), Send(Req::post("/stream", k, ""), refused(410))], 1),
        ("stripe: a 5xx is stored and replayed", vec![Send(Req::post("/fail", k, ""), refused(500)), Send(Req::post("/fail", k, ""), Expect { status: 500, replayed: true, payment: None })], 1),
        ("GET passes through without a key", vec![Send(get, refused(200))], 0),
        ("PUT passes through without a key", vec![Send(put.clone(), refused(204)), Send(put, refused(204))], 2),
    ];
    cases
}

fn check(name: &str, step: usize, answer: &Answer, want: Expect) {
    let at = format!("{name}, step {step}: {answer:?}");
    assert_eq!(answer.status, want.status, "{at}");
    assert_eq!(answer.replayed(), want.replayed, "{at}");
    if let Some(id) = want.payment {
        assert_eq!(answer.text(), format!("{{\"payment\":{id}}}"), "{at}");
        let location = format!("/payments/{id}");
        assert_eq!(answer.headers["location"], location.as_str(), "{at}");
        assert_eq!(answer.headers["content-type"], "application/json", "{at}");
        // Only the chosen headers are kept for a replay.
        assert_eq!(
            answer.headers.contains_key("x-not-replayed"),
            !want.replayed,
            "{at}"
        );
    }
    if want.status >= 400 && want.status != 500 {
        assert_eq!(
            answer.headers["content-type"], "application/problem+json",
            "{at}"
        );
        let problem: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(problem["status"], want.status, "{at}");
        assert!(
            problem["title"].is_string() && problem["type"].is_string(),
            "{at}"
        );
    }
    if want.status == 409 {
        let after: u64 = answer.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=LEASE.as_secs()).contains(&after), "{at}");
    }
}

#[tokio::test]
async fn draft_and_stripe_cases_in_memory() {
    run_cases(MemoryStore::new).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn draft_and_stripe_cases_in_sqlite() {
    let dir = crate::support::TempDir::new("conformance");
    let mut n = 0;
    run_cases(|| {
        n += 1;
        tower_idempotency::SqliteStore::open(dir.path().join(format!("case-{n}.db"))).unwrap()
    })
    .await;
}

/// The cases' names, in order (a caller preparing one store per case counts them).
#[allow(dead_code)]
pub fn case_names() -> Vec<&'static str> {
    cases().into_iter().map(|(name, _, _)| name).collect()
}

pub async fn run_cases<S: Store>(mut make_store: impl FnMut() -> S) {
    for (name, steps, effects_after) in cases() {
        eprintln!("case: {name}");
        let clock = Arc::new(ManualClock::new(
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000),
        ));
        let layer = IdempotencyLayer::builder(make_store())
            .principal(account)
            .lease(LEASE)
            .retention(RETENTION)
            .max_request_body(4096)
            .max_stored_body(1024)
            .clock(clock.clone())
            .build()
            .unwrap();
        let effects = Arc::new(Effects::default());
        let addr = serve(layer.clone(), effects.clone()).await;
        let mut held = std::collections::VecDeque::new();
        for (i, step) in steps.into_iter().enumerate() {
            match step {
                Send(req, want) => check(name, i, &send(addr, &req).await, want),
                Start(req) => {
                    let before = effects.count();
                    held.push_back(tokio::spawn(async move { send(addr, &req).await }));
                    effects.wait_for(before + 1).await;
                }
                Finish(want) => {
                    // The gate is fair: the earliest waiter takes the permit.
                    effects.gate.add_permits(1);
                    let answer = held.pop_front().expect("a started request").await.unwrap();
                    check(name, i, &answer, want);
                }
                Advance(by) => clock.advance(by),
                Prune(want) => assert_eq!(layer.prune().await.unwrap(), want, "{name}, step {i}"),
            }
        }
        assert_eq!(effects.count(), effects_after, "{name}: effects");
    }
}
