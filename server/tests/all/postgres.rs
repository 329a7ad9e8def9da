//! The PostgreSQL store: the conformance table, and a fleet of four servers sharing
//! one database under 64 concurrent identical requests per key.

use std::collections::HashSet;
use std::sync::Arc;

use tower_idempotency::{IdempotencyLayer, PostgresStore};

use crate::support::{account, send, serve, Effects, Req};
use crate::throwaway_pg::Cluster;

const INSTANCES: usize = 4;
const CONCURRENT: usize = 64;

fn rounds() -> usize {
    std::env::var("TOWER_IDEMPOTENCY_PG_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_store() {
    let Some(cluster) = Cluster::start() else {
        return;
    };

    // The draft's and Stripe's cases, one database per case.
    let mut n = 0;
    let mut conninfos = Vec::new();
    for _ in crate::conformance::case_names() {
        n += 1;
        conninfos.push(cluster.database(&format!("case_{n}")).await);
    }
    let mut stores = Vec::new();
    for conninfo in &conninfos {
        stores.push(PostgresStore::connect(conninfo).await.unwrap());
    }
    let mut stores = stores.into_iter();
    crate::conformance::run_cases(|| stores.next().expect("a store per case")).await;

    // A fleet: four servers, each its own connection, one database.
    let fleet = cluster.database("fleet").await;
    let effects = Arc::new(Effects::default());
    let mut addrs = Vec::new();
    for _ in 0..INSTANCES {
        let store = PostgresStore::connect(&fleet).await.unwrap();
        let layer = IdempotencyLayer::builder(store)
            .principal(account)
            .build()
            .unwrap();
        addrs.push(serve(layer, effects.clone()).await);
    }
    let (mut conflicts, mut replays) = (0, 0);
    for round in 0..rounds() {
        let key = format!("fleet-{round}");
        let before = effects.count();
        let tasks: Vec<_> = (0..CONCURRENT)
            .map(|i| {
                let (addr, req) = (
                    addrs[i % INSTANCES],
                    Req::post("/payments", &key, "slow payment"),
                );
                tokio::spawn(async move { send(addr, &req).await })
            })
            .collect();
        let mut bodies = HashSet::new();
        for task in tasks {
            let answer = task.await.unwrap();
            match answer.status {
                201 => {
                    replays += usize::from(answer.replayed());
                    bodies.insert(answer.text());
                }
                409 => conflicts += 1,
                other => panic!("round {round}: unexpected {other}: {}", answer.text()),
            }
        }
        assert_eq!(
            effects.count(),
            before + 1,
            "round {round}: one effect across the fleet"
        );
        assert_eq!(bodies.len(), 1, "round {round}: one result");
    }

    // The server cuts every connection (a restart, a failover): the stores reconnect.
    let (admin, connection) = tokio_postgres::connect(&fleet, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = 'fleet' AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let before = effects.count();
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let answer = send(addrs[0], &Req::post("/payments", "after-the-cut", "a")).await;
        statuses.push(answer.status);
        if answer.status == 201 {
            break;
        }
        assert_eq!(
            answer.status, 503,
            "a cut connection is a 503, nothing executed"
        );
    }
    assert_eq!(statuses.last(), Some(&201), "reconnected: {statuses:?}");
    assert_eq!(effects.count(), before + 1);

    eprintln!(
        "postgres fleet: instances: {INSTANCES}, rounds: {}, concurrent: {CONCURRENT}, effects: {}, \
         conflicts (409): {conflicts}, replays: {replays}",
        rounds(),
        effects.count()
    );
}

/// The wall clock, for the retention the strong mode counts from the finish.
fn clock() -> Arc<dyn tower_idempotency::Clock> {
    Arc::new(tower_idempotency::SystemClock)
}

/// The strong mode's effect in these tests: one payment row and its receipt.
fn pay<'t>(
    tx: &'t tokio_postgres::Transaction<'t>,
    amount: i64,
) -> tower_idempotency::EffectFuture<'t, tokio_postgres::Error> {
    Box::pin(async move {
        let row = tx
            .query_one(
                "INSERT INTO payments (amount) VALUES ($1) RETURNING id",
                &[&amount],
            )
            .await?;
        let id: i64 = row.get(0);
        Ok(tower_idempotency::StoredResponse {
            status: http::StatusCode::CREATED,
            headers: vec![],
            body: bytes::Bytes::from(id.to_string()),
        })
    })
}

/// The strong mode on PostgreSQL: the claim, the effect's row and the response commit
/// together; a rolled-back effect leaves nothing; concurrent callers of one key see
/// one execution.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_strong_mode() {
    use std::time::{Duration, SystemTime};

    use tower_idempotency::{ClaimRequest, EffectFuture, Fingerprint, ScopeId, Transacted};

    let Some(cluster) = Cluster::start() else {
        return;
    };
    let conninfo = cluster.database("strong").await;
    let store = Arc::new(PostgresStore::connect(&conninfo).await.unwrap());
    let (admin, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute("CREATE TABLE payments (id BIGSERIAL PRIMARY KEY, amount BIGINT NOT NULL)")
        .await
        .unwrap();
    let request = |scope: u8| ClaimRequest {
        scope: ScopeId::from_bytes([scope; 32]),
        fingerprint: Fingerprint::from_bytes(vec![scope]),
        now: SystemTime::now(),
        lease: Duration::from_secs(30),
    };
    let count = || async {
        admin
            .query_one("SELECT count(*) FROM payments", &[])
            .await
            .unwrap()
            .get::<_, i64>(0)
    };

    // A failing effect: its insert and the claim roll back; the key stays free.
    let failed = store
        .transact(
            request(1),
            Duration::from_secs(60),
            clock(),
            |tx| -> EffectFuture<'_, tokio_postgres::Error> {
                Box::pin(async move {
                    tx.execute("INSERT INTO payments (amount) VALUES (1)", &[])
                        .await?;
                    tx.execute("INSERT INTO no_such_table VALUES (1)", &[])
                        .await?;
                    unreachable!("the statement above fails")
                })
            },
        )
        .await;
    assert!(
        failed.is_err() || matches!(failed, Ok(Transacted::RolledBack(_))),
        "{failed:?}"
    );
    assert_eq!(count().await, 0);

    // 16 concurrent callers with one key: one row, one result.
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, req) = (store.clone(), request(2));
            tokio::spawn(async move {
                store
                    .transact(req, Duration::from_secs(60), clock(), |tx| pay(tx, 500))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let (mut executed, mut existing) = (0, 0);
    for task in tasks {
        match task.await.unwrap() {
            Transacted::Executed(_) => executed += 1,
            Transacted::Existing(_) => existing += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((executed, existing), (1, 15));
    assert_eq!(count().await, 1);
    // The failed key is still free: it executes now.
    assert!(matches!(
        store
            .transact(request(1), Duration::from_secs(60), clock(), |tx| pay(
                tx, 7
            ))
            .await
            .unwrap(),
        Transacted::Executed(_)
    ));
    assert_eq!(count().await, 2);
}

/// The strong mode's HTTP front on PostgreSQL: 32 concurrent identical requests → one
/// payment row; the same key with another body → 422; a failing effect → nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_strong_mode_over_http() {
    use axum::extract::{Request, State};
    use axum::routing::post;
    use tower_idempotency::{EffectFuture, Rollback, StoredResponse, Transactional};

    fn charge<'t>(
        tx: &'t tokio_postgres::Transaction<'t>,
        _: http::request::Parts,
        body: bytes::Bytes,
    ) -> EffectFuture<'t, Rollback> {
        Box::pin(async move {
            let text = String::from_utf8_lossy(&body).into_owned();
            if text == "fail" {
                tx.execute("INSERT INTO payments (body) VALUES ('fail')", &[])
                    .await?;
                tx.execute("INSERT INTO no_such_table VALUES (1)", &[])
                    .await?;
            }
            let row = tx
                .query_one(
                    "INSERT INTO payments (body) VALUES ($1) RETURNING id",
                    &[&text],
                )
                .await?;
            Ok(StoredResponse {
                status: http::StatusCode::CREATED,
                headers: vec![],
                body: bytes::Bytes::from(row.get::<_, i64>(0).to_string()),
            })
        })
    }

    let Some(cluster) = Cluster::start() else {
        return;
    };
    let conninfo = cluster.database("strong_http").await;
    let (admin, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute("CREATE TABLE payments (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL)")
        .await
        .unwrap();
    let store = Arc::new(PostgresStore::connect(&conninfo).await.unwrap());
    let layer = IdempotencyLayer::builder(store.clone())
        .principal(account)
        .build()
        .unwrap();
    let app = axum::Router::new()
        .route(
            "/payments",
            post(
                |State(strong): State<Transactional<Arc<PostgresStore>>>, req: Request| async move {
                    strong.handle(req, charge).await
                },
            ),
        )
        .with_state(layer.transactional(store));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let answers = futures_util::future::join_all(
        (0..32).map(|_| async move { send(addr, &Req::post("/payments", "k", "pay")).await }),
    )
    .await;
    let results: HashSet<_> = answers.iter().map(|a| (a.status, a.text())).collect();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(answers.iter().filter(|a| !a.replayed()).count(), 1);
    assert_eq!(
        send(addr, &Req::post("/payments", "k", "other"))
            .await
            .status,
        422
    );
    let failed = send(addr, &Req::post("/payments", "k2", "fail")).await;
    assert_eq!(failed.status, 500);
    let rows: i64 = admin
        .query_one("SELECT count(*) FROM payments", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 1, "one payment; the failed effect rolled back");
}

/// Four server processes (the `strong_payments_postgres` example) sharing one database:
/// 64 concurrent identical requests per key, spread over the four, make one payment;
/// every answer is that payment (fresh once, replayed otherwise) or a 409.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_server_processes_one_payment_per_key() {
    use crate::processes::{Db, Server};

    let Some(cluster) = Cluster::start() else {
        return;
    };
    let db = Db::Postgres(cluster.database("processes").await);
    let servers: Vec<Server> = (0..INSTANCES).map(|_| Server::start(&db)).collect();
    let addrs: Vec<_> = servers.iter().map(|s| s.addr).collect();
    let (mut conflicts, mut replays) = (0, 0);
    for round in 0..rounds() {
        let key = format!("process-round-{round}");
        let tasks: Vec<_> = (0..CONCURRENT)
            .map(|i| {
                let addr = addrs[i % INSTANCES];
                let req = Req {
                    account: Some("acct_1"),
                    ..Req::post("/payments", &key, "1500")
                };
                tokio::spawn(async move { send(addr, &req).await })
            })
            .collect();
        let (mut bodies, mut fresh) = (HashSet::new(), 0);
        for task in tasks {
            let answer = task.await.unwrap();
            match answer.status {
                201 if answer.replayed() => {
                    replays += 1;
                    bodies.insert(answer.text());
                }
                201 => {
                    fresh += 1;
                    bodies.insert(answer.text());
                }
                409 => conflicts += 1,
                other => panic!("round {round}: unexpected {other}: {}", answer.text()),
            }
        }
        assert_eq!(fresh, 1, "round {round}: one execution");
        assert_eq!(bodies.len(), 1, "round {round}: one result");
    }
    for server in servers {
        server.kill();
    }
    let rows = db.payments().await;
    assert_eq!(rows.len(), rounds(), "one payment row per key");
    eprintln!(
        "postgres processes: {INSTANCES} server processes, rounds: {}, concurrent: {CONCURRENT}, \
         payment rows: {}, conflicts (409): {conflicts}, replays: {replays}",
        rounds(),
        rows.len()
    );
}

/// While its database is away the store answers `503` with a `Retry-After`
/// and a problem body that names no driver detail (never a 500), runs nothing,
/// and takes requests again within seconds of the database's return.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_is_away_is_a_503_with_retry_after_never_a_500() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let conninfo = cluster.database("outage").await;
    let store = PostgresStore::connect(&conninfo).await.unwrap();
    let layer = IdempotencyLayer::builder(store)
        .principal(account)
        .build()
        .unwrap();
    let effects = Arc::new(Effects::default());
    let addr = serve(layer, effects.clone()).await;

    tokio::task::block_in_place(|| cluster.stop());
    for attempt in 0..3 {
        let answer = send(addr, &Req::post("/payments", "during-the-outage", "a")).await;
        assert_eq!(answer.status, 503, "attempt {attempt}: {}", answer.text());
        let retry_after = answer
            .headers
            .get(http::header::RETRY_AFTER)
            .expect("a Retry-After");
        assert!(retry_after.to_str().unwrap().parse::<u64>().is_ok());
        let body = answer.text().to_lowercase();
        for leak in ["db error", "os error", "connection", "postgres", "refused"] {
            assert!(
                !body.contains(leak),
                "the body names a driver detail: {body}"
            );
        }
    }
    assert_eq!(effects.count(), 0, "nothing ran");

    tokio::task::block_in_place(|| cluster.restart());
    let back = std::time::Instant::now();
    let mut statuses = Vec::new();
    while back.elapsed() < std::time::Duration::from_secs(5) {
        let answer = send(addr, &Req::post("/payments", "during-the-outage", "a")).await;
        statuses.push(answer.status);
        if answer.status == 201 {
            break;
        }
        assert_eq!(answer.status, 503, "{}", answer.text());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(statuses.last(), Some(&201), "back within 5 s: {statuses:?}");
    assert_eq!(effects.count(), 1);
}
