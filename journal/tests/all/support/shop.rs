//! The application of the delivery tests: orders in the journal's own database,
//! and the one transaction that applies a payment's result — acknowledge it
//! there, and only when that acknowledgement is the first, count the order paid
//! and write an audit row. A child process may be told to die at a point of
//! that transaction.

use std::time::Duration;

use reqwest_resilience_journal::{IntentRecord, IntentState, Journal, OutboxIntent};

use super::backend::Backend;

const TABLES: &str = "
    CREATE TABLE IF NOT EXISTS orders (
        id          BIGINT PRIMARY KEY,
        payment_key TEXT NOT NULL,
        paid_count  BIGINT NOT NULL DEFAULT 0);
    CREATE TABLE IF NOT EXISTS payment_applied (payment_key TEXT NOT NULL);";

/// Where a child process applying a result dies (SIGABRT: no destructor,
/// no commit, no rollback runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    Never,
    /// After the acknowledgement and the update, before the commit.
    BeforeCommit,
    /// Right after the commit.
    AfterCommit,
}

impl Crash {
    fn at(self, point: Crash) {
        if self == point {
            std::process::abort();
        }
    }
}

pub enum Shop {
    Sqlite(rusqlite::Connection),
    #[cfg(feature = "postgres")]
    Postgres(tokio_postgres::Client),
}

impl Shop {
    /// Connects to the journal's database and creates the shop's tables.
    pub async fn open(backend: &Backend) -> Shop {
        match backend {
            Backend::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).unwrap();
                conn.busy_timeout(Duration::from_secs(5)).unwrap();
                conn.execute_batch(TABLES).unwrap();
                Shop::Sqlite(conn)
            }
            #[cfg(not(feature = "postgres"))]
            Backend::Postgres(_) => unreachable!("built without the postgres feature"),
            #[cfg(feature = "postgres")]
            Backend::Postgres(conninfo) => {
                let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(connection);
                client.batch_execute(TABLES).await.unwrap();
                Shop::Postgres(client)
            }
        }
    }

    /// The order and its payment's enqueue, in one transaction.
    pub async fn order_with_payment(&mut self, id: i64, payment: &OutboxIntent) {
        let insert = "INSERT INTO orders (id, payment_key) VALUES ";
        match self {
            Shop::Sqlite(conn) => {
                let tx = conn.transaction().unwrap();
                tx.execute(&format!("{insert} (?1, ?2)"), (id, payment.key()))
                    .unwrap();
                payment.enqueue_rusqlite(&tx).unwrap();
                tx.commit().unwrap();
            }
            #[cfg(feature = "postgres")]
            Shop::Postgres(client) => {
                let tx = client.transaction().await.unwrap();
                tx.execute(&format!("{insert} ($1, $2)"), &[&id, &payment.key()])
                    .await
                    .unwrap();
                payment.enqueue_tokio_postgres(&tx).await.unwrap();
                tx.commit().await.unwrap();
            }
        }
    }

    /// Applies one result in one transaction; true when this applied it.
    pub async fn apply(&mut self, journal: &Journal, result: &IntentRecord, crash: Crash) -> bool {
        let key = result.key.as_str();
        let paid = i64::from(result.state == IntentState::Succeeded);
        let first = match self {
            Shop::Sqlite(conn) => {
                let tx = conn.transaction().unwrap();
                let first = journal.acknowledge_rusqlite(&tx, key).unwrap();
                if first {
                    tx.execute(
                        "UPDATE orders SET paid_count = paid_count + ?2 WHERE payment_key = ?1",
                        (key, paid),
                    )
                    .unwrap();
                    tx.execute("INSERT INTO payment_applied VALUES (?1)", [key])
                        .unwrap();
                }
                crash.at(Crash::BeforeCommit);
                tx.commit().unwrap();
                first
            }
            #[cfg(feature = "postgres")]
            Shop::Postgres(client) => {
                let tx = client.transaction().await.unwrap();
                let first = journal.acknowledge_tokio_postgres(&tx, key).await.unwrap();
                if first {
                    tx.execute(
                        "UPDATE orders SET paid_count = paid_count + $2 WHERE payment_key = $1",
                        &[&key, &paid],
                    )
                    .await
                    .unwrap();
                    tx.execute("INSERT INTO payment_applied VALUES ($1)", &[&key])
                        .await
                        .unwrap();
                }
                crash.at(Crash::BeforeCommit);
                tx.commit().await.unwrap();
                first
            }
        };
        crash.at(Crash::AfterCommit);
        first
    }

    /// The catch-up: applies every unacknowledged result, a page at a time,
    /// until none is left (bounded: 100 pages). Returns how many it applied.
    pub async fn catch_up(&mut self, journal: &Journal, crash: Crash) -> usize {
        let mut applied = 0;
        for _ in 0..100 {
            let page = journal.unacknowledged(10).await.unwrap();
            if page.is_empty() {
                return applied;
            }
            for result in &page {
                applied += usize::from(self.apply(journal, result, crash).await);
            }
        }
        panic!("the catch-up did not end after 100 pages");
    }

    /// How often order `id` was counted paid, and how many audit rows its
    /// payment has.
    pub async fn paid(&self, id: i64) -> (i64, i64) {
        let sql = "SELECT o.paid_count, (SELECT COUNT(*) FROM payment_applied a
                   WHERE a.payment_key = o.payment_key) FROM orders o WHERE o.id = ";
        match self {
            Shop::Sqlite(conn) => conn
                .query_row(&format!("{sql} ?1"), [id], |row| {
                    Ok((row.get(0)?, row.get(1)?))
                })
                .unwrap(),
            #[cfg(feature = "postgres")]
            Shop::Postgres(client) => {
                let row = client
                    .query_one(&format!("{sql} $1"), &[&id])
                    .await
                    .unwrap();
                (row.get(0), row.get(1))
            }
        }
    }
}
