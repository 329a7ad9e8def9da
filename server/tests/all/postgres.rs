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
    eprintln!(
        "postgres fleet: instances: {INSTANCES}, rounds: {}, concurrent: {CONCURRENT}, effects: {}, \
         conflicts (409): {conflicts}, replays: {replays}",
        rounds(),
        effects.count()
    );
}
