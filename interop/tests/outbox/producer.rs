//! The business transactions: each inserts an order row and enqueues its
//! `POST /payments` intent in the same PostgreSQL transaction, then commits
//! (and wakes the relays) or, by a seeded draw, rolls back.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand::rngs::StdRng;
use rand::SeedableRng;
use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::Journal;
use tokio_postgres::{Client, NoTls};

use crate::verdict::Order;

/// The business table, in the database that holds the journal's table.
pub const ORDERS_TABLE: &str =
    "CREATE TABLE orders (id BIGINT PRIMARY KEY, key TEXT NOT NULL UNIQUE, amount BIGINT NOT NULL)";

/// Which of `total` transactions roll back: exactly a fifth, drawn by the seed.
pub fn rollbacks(total: u64, seed: u64) -> BTreeSet<u64> {
    // "roll" in ASCII: these draws are not the killer's or the proxy's.
    let mut rng = StdRng::seed_from_u64(seed ^ 0x726f_6c6c);
    let total = usize::try_from(total).expect("a count that fits in memory");
    rand::seq::index::sample(&mut rng, total, total / 5)
        .into_iter()
        .map(|i| i as u64)
        .collect()
}

/// What the producing tasks share: the next transaction, what was rolled back.
#[derive(Clone)]
pub struct Producer {
    pub journal: Journal,
    pub client: ResilientClient,
    pub conninfo: String,
    /// Where the intents go (the fault proxy in front of the server).
    pub url: String,
    /// The credential each intent is built with (and the journal strips).
    pub token: String,
    pub seed: u64,
    pub total: u64,
    pub rollbacks: Arc<BTreeSet<u64>>,
    next: Arc<AtomicU64>,
    /// Transactions finished (committed or rolled back): the killer's clock.
    pub finished: Arc<AtomicU64>,
    pub rolled_back: Arc<Mutex<Vec<Order>>>,
}

impl Producer {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        journal: Journal,
        client: ResilientClient,
        conninfo: &str,
        url: String,
        token: &str,
        seed: u64,
        total: u64,
    ) -> Producer {
        Producer {
            journal,
            client,
            conninfo: conninfo.to_owned(),
            url,
            token: token.to_owned(),
            seed,
            total,
            rollbacks: Arc::new(rollbacks(total, seed)),
            next: Arc::new(AtomicU64::new(0)),
            finished: Arc::new(AtomicU64::new(0)),
            rolled_back: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// One producing task on its own connection: transactions until none is left.
    pub async fn produce(self) {
        let (mut pg, connection) = tokio_postgres::connect(&self.conninfo, NoTls)
            .await
            .expect("a producer's connection");
        tokio::spawn(connection);
        loop {
            let i = self.next.fetch_add(1, Ordering::SeqCst);
            if i >= self.total {
                return;
            }
            self.transaction(&mut pg, i).await;
            self.finished.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Business transaction `i`: its order row and its intent, together.
    async fn transaction(&self, pg: &mut Client, i: u64) {
        let id = i64::try_from(i).expect("bounded by total");
        let order = Order {
            key: format!("order-{}-{i}", self.seed),
            amount: id + 1,
        };
        let intent = self
            .journal
            .outbox(
                self.client
                    .post(&self.url)
                    .idempotency_key(&order.key)
                    .bearer_auth(&self.token)
                    .body(order.amount.to_string()),
            )
            .expect("an intent decided");
        assert_eq!(intent.key(), order.key, "the intent keeps the caller's key");
        let tx = pg.transaction().await.expect("begin");
        tx.execute(
            "INSERT INTO orders (id, key, amount) VALUES ($1, $2, $3)",
            &[&id, &order.key, &order.amount],
        )
        .await
        .expect("the order row");
        intent
            .enqueue_tokio_postgres(&tx)
            .await
            .expect("the intent enqueued");
        if self.rollbacks.contains(&i) {
            tx.rollback().await.expect("rollback");
            self.rolled_back.lock().unwrap().push(order);
        } else {
            tx.commit().await.expect("commit");
            self.journal.wake_relays().await;
        }
    }
}
