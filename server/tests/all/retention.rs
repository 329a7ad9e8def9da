//! One retention rule in both modes and every store: a response is kept for the
//! retention counted from when the handler (or effect) finished, not from the claim.
//!
//! The handler moves the clock past most of the retention while it runs, so a rule
//! counted from the claim would expire the response long before `finish + retention`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::routing::post;
use axum::Router;
use http::StatusCode;
use tower_idempotency::{Clock, IdempotencyLayer, ManualClock, Store};

use crate::support::{account, send, Req};

const LEASE: Duration = Duration::from_secs(60);
const RETENTION: Duration = Duration::from_secs(100);
/// How far the clock moves while the handler runs: most of the retention.
const WORK: Duration = Duration::from_secs(90);

/// The modes and stores of the table.
#[derive(Debug, Clone, Copy)]
enum Case {
    LayerMemory,
    #[cfg(feature = "sqlite")]
    LayerSqlite,
    #[cfg(feature = "postgres")]
    LayerPostgres,
    #[cfg(feature = "sqlite")]
    StrongSqlite,
    #[cfg(feature = "postgres")]
    StrongPostgres,
}

/// What a case's server shares with the test.
#[derive(Clone)]
struct World {
    clock: Arc<ManualClock>,
    runs: Arc<AtomicU64>,
}

impl World {
    /// The handler's (or effect's) work: one run, during which the clock moves by [`WORK`].
    fn work(&self) -> String {
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        self.clock.advance(WORK);
        format!("run {run}")
    }

    fn layer(&self, store: impl Store) -> IdempotencyLayer {
        IdempotencyLayer::builder(store)
            .principal(account)
            .clock(self.clock.clone() as Arc<dyn Clock>)
            .lease(LEASE)
            .retention(RETENTION)
            .build()
            .unwrap()
    }
}

async fn listen(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// The layer in front of a handler that does the work.
fn layered(world: &World, layer: IdempotencyLayer) -> Router {
    let world = world.clone();
    Router::new()
        .route(
            "/payments",
            post(move || async move { (StatusCode::CREATED, world.work()) }),
        )
        .layer(layer)
}

#[cfg(feature = "sqlite")]
fn strong_sqlite(world: &World, store: tower_idempotency::SqliteStore) -> Router {
    use axum::extract::Request;
    use tower_idempotency::StoredResponse;
    let strong = world.layer(store.clone()).transactional(store);
    let world = world.clone();
    Router::new().route(
        "/payments",
        post(move |req: Request| async move {
            strong
                .handle(req, move |_, _, _| {
                    Ok(StoredResponse {
                        status: StatusCode::CREATED,
                        headers: vec![],
                        body: world.work().into(),
                    })
                })
                .await
        }),
    )
}

#[cfg(feature = "postgres")]
fn strong_postgres(world: &World, store: Arc<tower_idempotency::PostgresStore>) -> Router {
    use axum::extract::Request;
    use tower_idempotency::StoredResponse;
    let strong = world.layer(store.clone()).transactional(store);
    let world = world.clone();
    Router::new().route(
        "/payments",
        post(move |req: Request| async move {
            let world = world.clone();
            strong
                .handle(req, move |_, _, _| {
                    Box::pin(async move {
                        Ok(StoredResponse {
                            status: StatusCode::CREATED,
                            headers: vec![],
                            body: world.work().into(),
                        })
                    })
                })
                .await
        }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_is_kept_for_the_retention_counted_from_the_finish() {
    #[cfg(feature = "sqlite")]
    let dir = crate::support::TempDir::new("retention");
    #[cfg(feature = "postgres")]
    let cluster = crate::throwaway_pg::Cluster::start();
    let cases = [
        Some(Case::LayerMemory),
        #[cfg(feature = "sqlite")]
        Some(Case::LayerSqlite),
        #[cfg(feature = "postgres")]
        cluster.as_ref().map(|_| Case::LayerPostgres),
        #[cfg(feature = "sqlite")]
        Some(Case::StrongSqlite),
        #[cfg(feature = "postgres")]
        cluster.as_ref().map(|_| Case::StrongPostgres),
    ];
    for (n, case) in cases.into_iter().flatten().enumerate() {
        let world = World {
            clock: Arc::new(ManualClock::new(
                SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            )),
            runs: Arc::new(AtomicU64::new(0)),
        };
        let app = match case {
            Case::LayerMemory => {
                layered(&world, world.layer(tower_idempotency::MemoryStore::new()))
            }
            #[cfg(feature = "sqlite")]
            Case::LayerSqlite => {
                let store =
                    tower_idempotency::SqliteStore::open(dir.path().join(format!("{n}.db")))
                        .unwrap();
                layered(&world, world.layer(store))
            }
            #[cfg(feature = "sqlite")]
            Case::StrongSqlite => {
                let store =
                    tower_idempotency::SqliteStore::open(dir.path().join(format!("{n}.db")))
                        .unwrap();
                strong_sqlite(&world, store)
            }
            #[cfg(feature = "postgres")]
            Case::LayerPostgres | Case::StrongPostgres => {
                let cluster = cluster.as_ref().expect("only with a cluster");
                let conninfo = cluster.database(&format!("retention_{n}")).await;
                let store = tower_idempotency::PostgresStore::connect(&conninfo)
                    .await
                    .unwrap();
                if matches!(case, Case::LayerPostgres) {
                    layered(&world, world.layer(store))
                } else {
                    strong_postgres(&world, Arc::new(store))
                }
            }
        };
        let addr = listen(app).await;
        let req = Req::post("/payments", "retained", "pay");

        let first = send(addr, &req).await;
        assert_eq!((first.status, first.replayed()), (201, false), "{case:?}");
        assert_eq!(first.text(), "run 1", "{case:?}");

        // Just before `finish + retention` (the claim was WORK earlier): kept.
        world.clock.advance(RETENTION - Duration::from_secs(1));
        let replay = send(addr, &req).await;
        assert_eq!(
            (replay.status, replay.replayed(), replay.text()),
            (201, true, "run 1".to_owned()),
            "{case:?}: kept until the finish plus the retention"
        );
        assert_eq!(world.runs.load(Ordering::SeqCst), 1, "{case:?}");

        // Just after it: expired, the key executes again.
        world.clock.advance(Duration::from_secs(2));
        let again = send(addr, &req).await;
        assert_eq!(
            (again.status, again.replayed(), again.text()),
            (201, false, "run 2".to_owned()),
            "{case:?}: expired at the finish plus the retention"
        );
        assert_eq!(world.runs.load(Ordering::SeqCst), 2, "{case:?}");
    }
}
