//! The business transactions: each inserts an order row and enqueues its
//! `POST /payments` intent in the same transaction (PostgreSQL through
//! tokio-postgres, or SQLite through rusqlite on the journal's own file), then
//! commits (and wakes the relays) or, by a seeded draw, rolls back.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::{Journal, OutboxIntent};
use tokio_postgres::NoTls;
use tower_idempotency::rusqlite::{self, TransactionBehavior};

use crate::verdict::Order;

/// The business table, in the database that holds the journal's table (the
/// same statement on both).
pub const ORDERS_TABLE: &str =
    "CREATE TABLE orders (id BIGINT PRIMARY KEY, key TEXT NOT NULL UNIQUE, amount BIGINT NOT NULL)";

/// How long a SQLite business transaction waits for the file's write lock
/// (the relays, in other processes, write to the same file).
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the business transactions run: the database of the journal's table.
#[derive(Debug, Clone)]
pub enum Database {
    Postgres {
        conninfo: String,
    },
    /// The journal's own file.
    Sqlite {
        path: PathBuf,
    },
}

impl Database {
    /// The orders committed, read back after the run.
    pub async fn orders(&self) -> Vec<Order> {
        const SELECT: &str = "SELECT key, amount FROM orders ORDER BY id";
        match self {
            Database::Postgres { conninfo } => {
                let (pg, connection) = tokio_postgres::connect(conninfo, NoTls)
                    .await
                    .expect("connect to the cluster");
                tokio::spawn(connection);
                let rows = pg.query(SELECT, &[]).await.expect("read the orders");
                rows.iter()
                    .map(|row| Order {
                        key: row.get(0),
                        amount: row.get(1),
                    })
                    .collect()
            }
            Database::Sqlite { path } => {
                let conn = rusqlite::Connection::open(path).expect("open the journal's file");
                let mut select = conn.prepare(SELECT).expect("the orders table");
                let rows = select
                    .query_map([], |row| {
                        Ok(Order {
                            key: row.get(0)?,
                            amount: row.get(1)?,
                        })
                    })
                    .expect("read the orders");
                rows.map(|row| row.expect("an order row")).collect()
            }
        }
    }

    /// Creates the business table.
    pub async fn create_orders(&self) {
        match self {
            Database::Postgres { conninfo } => {
                let (pg, connection) = tokio_postgres::connect(conninfo, NoTls)
                    .await
                    .expect("connect to the cluster");
                tokio::spawn(connection);
                pg.batch_execute(ORDERS_TABLE)
                    .await
                    .expect("the orders table");
            }
            Database::Sqlite { path } => {
                rusqlite::Connection::open(path)
                    .and_then(|conn| conn.execute_batch(ORDERS_TABLE))
                    .expect("the orders table");
            }
        }
    }
}

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
    journal: Journal,
    client: ResilientClient,
    database: Database,
    /// Where the intents go (the fault proxy in front of the server).
    url: String,
    /// The credential each intent is built with (and the journal strips).
    token: String,
    seed: u64,
    total: u64,
    rollbacks: Arc<BTreeSet<u64>>,
    next: Arc<AtomicU64>,
    /// Transactions finished (committed or rolled back): the killer's clock.
    pub finished: Arc<AtomicU64>,
    pub rolled_back: Arc<Mutex<Vec<Order>>>,
}

impl Producer {
    pub fn new(
        journal: Journal,
        database: Database,
        url: String,
        token: &str,
        seed: u64,
        total: u64,
    ) -> Producer {
        Producer {
            journal,
            // It only builds the requests the intents are decided from.
            client: ResilientClient::new(),
            database,
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
        match self.database.clone() {
            Database::Postgres { conninfo } => self.on_postgres(&conninfo).await,
            Database::Sqlite { path } => self.on_sqlite(&path).await,
        }
    }

    async fn on_postgres(&self, conninfo: &str) {
        let (mut pg, connection) = tokio_postgres::connect(conninfo, NoTls)
            .await
            .expect("a producer's connection");
        tokio::spawn(connection);
        while let Some(i) = self.take() {
            let (order, intent) = self.decide(i);
            let tx = pg.transaction().await.expect("begin");
            tx.execute(
                "INSERT INTO orders (id, key, amount) VALUES ($1, $2, $3)",
                &[&order_id(i), &order.key, &order.amount],
            )
            .await
            .expect("the order row");
            intent
                .enqueue_tokio_postgres(&tx)
                .await
                .expect("the intent enqueued");
            if self.rolls_back(i) {
                tx.rollback().await.expect("rollback");
            } else {
                tx.commit().await.expect("commit");
            }
            self.finish(i, order).await;
        }
    }

    async fn on_sqlite(&self, path: &Path) {
        let mut conn = rusqlite::Connection::open(path).expect("open the journal's file");
        conn.busy_timeout(SQLITE_BUSY_TIMEOUT)
            .expect("a busy timeout");
        while let Some(i) = self.take() {
            let (order, intent) = self.decide(i);
            // rusqlite blocks (on the file's lock, too): off the runtime's turn.
            tokio::task::block_in_place(|| {
                // The write lock at once: a deferred transaction that upgrades
                // could meet a relay's write and fail busy.
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .expect("begin");
                tx.execute(
                    "INSERT INTO orders (id, key, amount) VALUES (?1, ?2, ?3)",
                    rusqlite::params![order_id(i), order.key, order.amount],
                )
                .expect("the order row");
                intent.enqueue_rusqlite(&tx).expect("the intent enqueued");
                if self.rolls_back(i) {
                    tx.rollback().expect("rollback");
                } else {
                    tx.commit().expect("commit");
                }
            });
            self.finish(i, order).await;
        }
    }

    /// The next transaction's number, until none is left.
    fn take(&self) -> Option<u64> {
        let i = self.next.fetch_add(1, Ordering::SeqCst);
        (i < self.total).then_some(i)
    }

    fn rolls_back(&self, i: u64) -> bool {
        self.rollbacks.contains(&i)
    }

    /// Transaction `i`'s order and its intent, decided before it begins.
    fn decide(&self, i: u64) -> (Order, OutboxIntent) {
        let order = Order {
            key: format!("order-{}-{i}", self.seed),
            amount: order_id(i) + 1,
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
        (order, intent)
    }

    /// After commit, the relays are woken; a rolled-back order is kept for the
    /// verdict.
    async fn finish(&self, i: u64, order: Order) {
        if self.rolls_back(i) {
            self.rolled_back.lock().unwrap().push(order);
        } else {
            self.journal.wake_relays().await;
        }
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
}

fn order_id(i: u64) -> i64 {
    i64::try_from(i).expect("a transaction count below i64::MAX")
}

#[cfg(test)]
mod table {
    use super::*;

    #[test]
    fn exactly_a_fifth_rolls_back_drawn_by_the_seed() {
        for (total, seed) in [(300, 31), (10_000, 31), (10_000, 32), (4, 31), (0, 31)] {
            let drawn = rollbacks(total, seed);
            assert_eq!(drawn.len() as u64, total / 5, "{total} transactions");
            assert!(drawn.iter().all(|&i| i < total));
            assert_eq!(drawn, rollbacks(total, seed));
        }
        assert_ne!(rollbacks(300, 31), rollbacks(300, 32));
    }
}
