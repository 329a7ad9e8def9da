//! The strong mode on PostgreSQL under duplicates of a key in flight: each waits for
//! the holder's row lock at most `PostgresStore::CLAIM_LOCK_TIMEOUT`, answers 409 and
//! gives its pooled connection back, so other keys still execute; a request dropped
//! mid-effect rolls back and frees its key.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::routing::post;
use axum::Router;
use bytes::Bytes;
use http::StatusCode;
use tower_idempotency::{
    EffectFuture, IdempotencyLayer, PostgresStore, Rollback, StoredResponse, Transactional,
    MAX_POSTGRES_TRANSACTIONS,
};

use crate::support::{account, send, Req};
use crate::throwaway_pg::Cluster;

/// What the effect does: records its run in `payments`; a body starting with `slow`
/// then sleeps in the database (holding its transaction and the key's row lock).
#[derive(Clone)]
struct Effect {
    runs: Arc<AtomicU64>,
    slow: &'static str,
}

impl Effect {
    fn call<'t>(
        self,
        tx: &'t tokio_postgres::Transaction<'t>,
        body: Bytes,
    ) -> EffectFuture<'t, Rollback> {
        Box::pin(async move {
            let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
            let text = String::from_utf8_lossy(&body).into_owned();
            tx.execute(
                "INSERT INTO payments (run, body) VALUES ($1, $2)",
                &[&(run as i64), &text],
            )
            .await?;
            if text.starts_with("slow") {
                tx.execute(&format!("SELECT pg_sleep({})", self.slow), &[])
                    .await?;
            }
            Ok(StoredResponse {
                status: StatusCode::CREATED,
                headers: vec![],
                body: Bytes::from(format!("run {run}")),
            })
        })
    }
}

struct Server {
    addr: SocketAddr,
    strong: Transactional<Arc<PostgresStore>>,
    effect: Effect,
    admin: tokio_postgres::Client,
}

impl Server {
    async fn start(cluster: &Cluster, name: &str, slow: &'static str) -> Self {
        let conninfo = cluster.database(name).await;
        let (admin, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        admin
            .batch_execute("CREATE TABLE payments (run BIGINT NOT NULL, body TEXT NOT NULL)")
            .await
            .unwrap();
        let store = Arc::new(PostgresStore::connect(&conninfo).await.unwrap());
        let strong = IdempotencyLayer::builder(store.clone())
            .principal(account)
            .build()
            .unwrap()
            .transactional(store);
        let effect = Effect {
            runs: Arc::new(AtomicU64::new(0)),
            slow,
        };
        let app = {
            let (strong, effect) = (strong.clone(), effect.clone());
            Router::new().route(
                "/payments",
                post(move |req: Request| async move {
                    strong
                        .handle(req, move |tx, _, body| effect.call(tx, body))
                        .await
                }),
            )
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            addr,
            strong,
            effect,
            admin,
        }
    }

    fn runs(&self) -> u64 {
        self.effect.runs.load(Ordering::SeqCst)
    }

    /// Waits (bounded) until `n` effects have started.
    async fn wait_for_runs(&self, n: u64) {
        let start = Instant::now();
        while self.runs() < n {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "effect {n} never started"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The committed payments, as (run, body).
    async fn payments(&self) -> Vec<(i64, String)> {
        self.admin
            .query("SELECT run, body FROM payments ORDER BY run", &[])
            .await
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_of_a_key_in_flight_answer_409_quickly_and_free_their_connections() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let server = Server::start(&cluster, "locks", "1.5").await;
    let first = {
        let addr = server.addr;
        tokio::spawn(async move { send(addr, &Req::post("/payments", "k", "slow")).await })
    };
    server.wait_for_runs(1).await;

    // More duplicates than the pool has connections, and another key beside them.
    let duplicates: Vec<_> = (0..MAX_POSTGRES_TRANSACTIONS + 2)
        .map(|_| {
            let addr = server.addr;
            tokio::spawn(async move {
                let sent = Instant::now();
                let answer = send(addr, &Req::post("/payments", "k", "slow")).await;
                (answer, sent.elapsed())
            })
        })
        .collect();
    let other = send(server.addr, &Req::post("/payments", "other", "fast")).await;
    assert_eq!((other.status, other.replayed()), (201, false));
    assert!(
        !first.is_finished(),
        "the other key executed while `k` was in flight"
    );

    for duplicate in duplicates {
        let (answer, took) = duplicate.await.unwrap();
        assert_eq!(answer.status, 409, "{}", answer.text());
        assert!(answer.headers.contains_key("retry-after"));
        assert!(
            took < Duration::from_millis(1200),
            "a duplicate waited {took:?} (the holder's effect takes 1.5 s)"
        );
    }
    let first = first.await.unwrap();
    assert_eq!((first.status, first.replayed()), (201, false));
    let replay = send(server.addr, &Req::post("/payments", "k", "slow")).await;
    assert_eq!((replay.status, replay.replayed()), (201, true));
    assert_eq!(server.runs(), 2, "`k` once, `other` once");
    assert_eq!(server.payments().await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_strong_request_rolls_back_and_its_retry_executes_once() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let server = Server::start(&cluster, "dropped", "1").await;
    let request = || {
        http::Request::post("/payments")
            .header("idempotency-key", "dropped")
            .header("x-account", "acct_alice")
            .body(http_body_util::Full::new(Bytes::from_static(b"slow")))
            .unwrap()
    };
    let effect = server.effect.clone();
    let handle = server
        .strong
        .handle(request(), move |tx, _, body| effect.call(tx, body));
    // The caller gives up mid-effect (during its pg_sleep): the future is dropped.
    let gave_up = tokio::time::timeout(Duration::from_millis(300), handle).await;
    assert!(gave_up.is_err(), "answered before the effect's sleep ended");
    assert_eq!(server.runs(), 1);

    // Until the dropped transaction's rollback reaches the server the key is in
    // flight (409); then the retry executes.
    let start = Instant::now();
    let retry = loop {
        let effect = server.effect.clone();
        let answer = server
            .strong
            .handle(request(), move |tx, _, body| effect.call(tx, body))
            .await;
        if answer.status() != StatusCode::CONFLICT {
            break answer;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the key was never freed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(retry.status(), StatusCode::CREATED);
    assert!(!retry.headers().contains_key("idempotent-replayed"));
    assert_eq!(server.runs(), 2, "the dropped run and the retry");
    assert_eq!(
        server.payments().await,
        vec![(2, "slow".to_owned())],
        "the dropped run's row rolled back; the retry's committed"
    );
}
