//! P12's business transactions: one order row, alone or with an outbox intent
//! beside it, on PostgreSQL (tokio-postgres) and SQLite (rusqlite), and the rate
//! at which a set of producers commits them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::{Dialect, Journal, OutboxIntent, OutboxValue};
use tokio_postgres::types::ToSql;

/// The request each intent stands for (the relay re-signs it).
const BODY: &[u8] = br#"{"amount":500,"currency":"EUR","order":"p12","customer":"c-1842"}"#;
const AMOUNT: i64 = 500;

/// The business table, the same on both databases.
pub const ORDERS_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS p12_orders (id TEXT PRIMARY KEY, amount BIGINT NOT NULL)";
const INSERT_ORDER_PG: &str = "INSERT INTO p12_orders (id, amount) VALUES ($1, $2)";
const INSERT_ORDER_SQLITE: &str = "INSERT INTO p12_orders (id, amount) VALUES (?1, ?2)";

/// What one business transaction holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Txn {
    /// `BEGIN; INSERT INTO p12_orders …; COMMIT`.
    Order,
    /// Two order rows: what any second statement of the same kind costs.
    TwoOrders,
    /// The same, and the intent's enqueue before `COMMIT`.
    OrderAndIntent,
    /// As [`Txn::OrderAndIntent`], the enqueue through its driver-neutral
    /// statement prepared once per connection (no parse, no plan per call).
    IntentPrepared,
    /// As [`Txn::OrderAndIntent`], and `pg_notify` inside the transaction: the
    /// wake-up the issue measures before choosing against it.
    IntentNotifyInside,
    /// As [`Txn::OrderAndIntent`], then `wake_relays()` after `COMMIT` (the
    /// journal's choice: its `NOTIFY` outside the business transaction).
    IntentWakeAfter,
    /// The order and the peer queue's enqueue (underway 0.2.0's statement and
    /// trigger, see `underway`), the same payload: the intent's method, URL
    /// and body as its JSON input.
    OrderAndPeer,
}

impl Txn {
    pub fn name(self) -> &'static str {
        match self {
            Txn::Order => "order only",
            Txn::TwoOrders => "two order rows",
            Txn::OrderAndIntent => "order + enqueue",
            Txn::IntentPrepared => "order + enqueue, statement prepared once",
            Txn::IntentNotifyInside => "order + enqueue + pg_notify inside",
            Txn::IntentWakeAfter => "order + enqueue, wake_relays() after COMMIT",
            Txn::OrderAndPeer => "order + underway 0.2's enqueue (its SQL, prepared once)",
        }
    }

    /// What this kind is measured against: the plain order, or — for a
    /// wake-up — the plain enqueue.
    pub fn against(self) -> Txn {
        match self {
            Txn::IntentNotifyInside | Txn::IntentWakeAfter => Txn::OrderAndIntent,
            _ => Txn::Order,
        }
    }

    fn enqueues(self) -> bool {
        !matches!(self, Txn::Order | Txn::TwoOrders | Txn::OrderAndPeer)
    }
}

/// What every producer shares: the journal that decides intents, the client
/// whose policy decides them, where they go.
#[derive(Clone)]
pub struct Outbox {
    pub journal: Journal,
    pub client: ResilientClient,
    pub url: Arc<str>,
}

impl Outbox {
    /// A new intent: a POST with a generated key, credentials the relay adds back.
    pub fn intent(&self) -> OutboxIntent {
        let request = self.client.post(&*self.url).bearer_auth("p12").body(BODY);
        self.journal
            .outbox(request)
            .unwrap_or_else(|error| panic!("P12: an outbox intent: {error}"))
    }
}

/// A committed business transaction: the intent's key, and when `COMMIT`
/// returned (before any wake-up).
pub struct Committed {
    pub key: Option<String>,
    pub at: Instant,
}

/// One PostgreSQL connection of the application's, committing orders.
pub struct PgProducer {
    conn: tokio_postgres::Client,
    /// The enqueue's statement, prepared on this connection.
    enqueue: tokio_postgres::Statement,
    /// The peer queue's enqueue, prepared on this connection.
    peer: tokio_postgres::Statement,
    outbox: Outbox,
}

impl PgProducer {
    pub async fn connect(conninfo: &str, outbox: Outbox) -> PgProducer {
        let (conn, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|error| panic!("P12: a producer's connection: {error}"));
        tokio::spawn(connection);
        let sql = outbox.intent().statement(Dialect::Postgres).sql;
        let enqueue = conn.prepare(sql).await.expect("P12 prepare the enqueue");
        let peer = conn
            .prepare(super::underway::ENQUEUE)
            .await
            .expect("P12 prepare the peer's enqueue");
        PgProducer {
            conn,
            enqueue,
            peer,
            outbox,
        }
    }

    /// Runs one business transaction of kind `txn`, as an application writes
    /// it (statements as text, as in the outbox's documentation).
    pub async fn transaction(&mut self, txn: Txn) -> Committed {
        let intent = txn.enqueues().then(|| self.outbox.intent());
        let id = uuid::Uuid::new_v4().to_string();
        let tx = self.conn.transaction().await.expect("P12 BEGIN");
        tx.execute(INSERT_ORDER_PG, &[&id, &AMOUNT])
            .await
            .expect("P12 INSERT order");
        if txn == Txn::TwoOrders {
            let second = format!("{id}-2");
            tx.execute(INSERT_ORDER_PG, &[&second, &AMOUNT])
                .await
                .expect("P12 INSERT order");
        }
        match &intent {
            Some(intent) if txn == Txn::IntentPrepared => {
                let values = intent.statement(Dialect::Postgres).params;
                let bound: Vec<Box<dyn ToSql + Sync + Send>> = values.iter().map(bind).collect();
                let params: Vec<&(dyn ToSql + Sync)> =
                    bound.iter().map(|v| v.as_ref() as _).collect();
                let rows = tx
                    .execute(&self.enqueue, &params)
                    .await
                    .expect("P12 prepared enqueue");
                assert_eq!(rows, 1, "P12 prepared enqueue: no row inserted");
            }
            Some(intent) => {
                intent
                    .enqueue_tokio_postgres(&tx)
                    .await
                    .unwrap_or_else(|error| panic!("P12 enqueue: {error}"));
            }
            None => {}
        }
        if txn == Txn::OrderAndPeer {
            let input = format!(
                r#"{{"method":"POST","url":"{}","body":{}}}"#,
                self.outbox.url,
                std::str::from_utf8(BODY).expect("a JSON body")
            );
            let task = uuid::Uuid::new_v4().to_string();
            let rows = tx
                .execute(&self.peer, &[&task, &input])
                .await
                .expect("P12 peer enqueue");
            assert_eq!(rows, 1, "P12 peer enqueue: no row inserted");
        }
        if txn == Txn::IntentNotifyInside {
            // The journal's own announcement, moved inside the transaction.
            tx.batch_execute("SELECT pg_notify('reqwest_resilience_journal', '')")
                .await
                .expect("P12 pg_notify");
        }
        tx.commit().await.expect("P12 COMMIT");
        let at = Instant::now();
        if txn == Txn::IntentWakeAfter {
            self.outbox.journal.wake_relays().await;
        }
        Committed {
            key: intent.map(|i| i.key().to_owned()),
            at,
        }
    }

    /// Runs `statements` on this producer's connection (set-up, clean-up).
    pub async fn batch(&self, statements: &str) {
        self.conn
            .batch_execute(statements)
            .await
            .unwrap_or_else(|error| panic!("P12: {statements}: {error}"));
    }

    /// As [`batch`](Self::batch), the error returned.
    pub async fn try_batch(&self, statements: &str) -> Result<(), tokio_postgres::Error> {
        self.conn.batch_execute(statements).await
    }

    /// Statements `pg_stat_statements` counted since its last reset, this count
    /// itself left out.
    pub async fn statements_since_reset(&self) -> i64 {
        self.conn
            .query_one(
                "SELECT COALESCE(sum(calls), 0)::bigint FROM pg_stat_statements
                 WHERE query NOT LIKE '%pg_stat_statements%'",
                &[],
            )
            .await
            .expect("P12 pg_stat_statements")
            .get(0)
    }

    /// Enqueues `count` intents in transactions of up to 100 (no order rows):
    /// a backlog for a relay.
    pub async fn backlog(&mut self, count: usize) {
        let mut left = count;
        while left > 0 {
            let tx = self.conn.transaction().await.expect("P12 BEGIN");
            for _ in 0..left.min(100) {
                let intent = self.outbox.intent();
                intent
                    .enqueue_tokio_postgres(&tx)
                    .await
                    .unwrap_or_else(|error| panic!("P12 enqueue: {error}"));
            }
            tx.commit().await.expect("P12 COMMIT");
            left = left.saturating_sub(100);
        }
    }

    /// `SELECT count(*)` of journal rows by state: `(state, rows)`.
    pub async fn intents_by_state(&self) -> Vec<(String, i64)> {
        self.conn
            .query(
                "SELECT state, count(*) FROM journal_intents GROUP BY state ORDER BY state",
                &[],
            )
            .await
            .expect("P12 intents by state")
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect()
    }
}

/// An enqueue parameter bound as its column's type.
fn bind(value: &OutboxValue) -> Box<dyn ToSql + Sync + Send> {
    match value {
        OutboxValue::Text(text) => Box::new(text.clone()),
        OutboxValue::Bool(flag) => Box::new(*flag),
        OutboxValue::Bytes(bytes) => Box::new(bytes.clone()),
        OutboxValue::BigInt(n) => Box::new(*n),
        OutboxValue::NullBigInt => Box::new(None::<i64>),
        other => panic!("P12: an enqueue parameter this benchmark cannot bind: {other:?}"),
    }
}

/// A set of producers, each committing one transaction at a time.
pub trait Producers {
    /// Transactions of kind `txn` committed per second by all producers for `length`.
    fn rate(&mut self, txn: Txn, length: Duration) -> impl std::future::Future<Output = f64>;

    /// The first producer alone, cycling through `kinds` one transaction at a
    /// time for `length` (`A B C A B C …`, so that every kind meets the same
    /// machine): each kind's transactions per second of its own time.
    fn interleaved(
        &mut self,
        kinds: &[Txn],
        length: Duration,
    ) -> impl std::future::Future<Output = Vec<f64>>;
}

/// Each kind's time and count, one transaction at a time.
struct Interleaved {
    time: Vec<Duration>,
    count: Vec<u32>,
}

impl Interleaved {
    fn new(kinds: usize) -> Interleaved {
        Interleaved {
            time: vec![Duration::ZERO; kinds],
            count: vec![0; kinds],
        }
    }

    fn add(&mut self, kind: usize, took: Duration) {
        self.time[kind] += took;
        self.count[kind] += 1;
    }

    fn rates(&self) -> Vec<f64> {
        self.time
            .iter()
            .zip(&self.count)
            .map(|(time, &count)| f64::from(count) / time.as_secs_f64())
            .collect()
    }
}

impl Producers for Vec<PgProducer> {
    async fn rate(&mut self, txn: Txn, length: Duration) -> f64 {
        let done = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let stop_at = started + length;
        let tasks: Vec<_> = self
            .drain(..)
            .map(|mut producer| {
                let done = done.clone();
                tokio::spawn(async move {
                    while Instant::now() < stop_at {
                        producer.transaction(txn).await;
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    producer
                })
            })
            .collect();
        for task in tasks {
            self.push(task.await.expect("P12 producer task"));
        }
        done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
    }

    async fn interleaved(&mut self, kinds: &[Txn], length: Duration) -> Vec<f64> {
        let producer = self.first_mut().expect("a producer");
        let mut times = Interleaved::new(kinds.len());
        let stop_at = Instant::now() + length;
        while Instant::now() < stop_at {
            for (at, &txn) in kinds.iter().enumerate() {
                let started = Instant::now();
                producer.transaction(txn).await;
                times.add(at, started.elapsed());
            }
        }
        times.rates()
    }
}

/// One SQLite connection of the application's on the journal's own file (WAL,
/// the connection's default `synchronous`), committing orders.
pub struct SqliteProducer {
    conn: rusqlite::Connection,
    outbox: Outbox,
}

impl SqliteProducer {
    pub fn open(path: &std::path::Path, outbox: Outbox) -> SqliteProducer {
        let conn = rusqlite::Connection::open(path).expect("P12 SQLite connection");
        // Writers take turns on one file: wait for the lock rather than fail.
        conn.busy_timeout(Duration::from_secs(10))
            .expect("busy timeout");
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .expect("WAL");
        conn.execute(ORDERS_TABLE, []).expect("P12 orders table");
        SqliteProducer { conn, outbox }
    }

    /// The connection's `synchronous` level (0 off, 1 normal, 2 full, 3 extra).
    pub fn synchronous(&self) -> i64 {
        self.conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .expect("PRAGMA synchronous")
    }

    /// One business transaction of kind `txn` (`BEGIN IMMEDIATE`: it writes).
    fn transaction(&mut self, txn: Txn) {
        let intent = txn.enqueues().then(|| self.outbox.intent());
        let id = uuid::Uuid::new_v4().to_string();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .expect("P12 SQLite BEGIN");
        tx.prepare_cached(INSERT_ORDER_SQLITE)
            .and_then(|mut insert| insert.execute(rusqlite::params![id, AMOUNT]))
            .expect("P12 SQLite INSERT order");
        if txn == Txn::TwoOrders {
            tx.prepare_cached(INSERT_ORDER_SQLITE)
                .and_then(|mut insert| insert.execute(rusqlite::params![format!("{id}-2"), AMOUNT]))
                .expect("P12 SQLite INSERT order");
        }
        if let Some(intent) = &intent {
            intent
                .enqueue_rusqlite(&tx)
                .unwrap_or_else(|error| panic!("P12 SQLite enqueue: {error}"));
        }
        tx.commit().expect("P12 SQLite COMMIT");
    }
}

impl Producers for Vec<SqliteProducer> {
    async fn rate(&mut self, txn: Txn, length: Duration) -> f64 {
        assert!(
            matches!(txn, Txn::Order | Txn::TwoOrders | Txn::OrderAndIntent),
            "P12: {} is a PostgreSQL row",
            txn.name()
        );
        let mut producers = std::mem::take(self);
        let (producers, rate) = tokio::task::spawn_blocking(move || {
            let done = AtomicUsize::new(0);
            let started = Instant::now();
            let stop_at = started + length;
            std::thread::scope(|scope| {
                for producer in &mut producers {
                    let done = &done;
                    scope.spawn(move || {
                        while Instant::now() < stop_at {
                            producer.transaction(txn);
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                }
            });
            let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
            (producers, rate)
        })
        .await
        .expect("P12 SQLite producers");
        *self = producers;
        rate
    }

    async fn interleaved(&mut self, kinds: &[Txn], length: Duration) -> Vec<f64> {
        let mut producers = std::mem::take(self);
        let kinds = kinds.to_vec();
        let (producers, rates) = tokio::task::spawn_blocking(move || {
            let producer = producers.first_mut().expect("a producer");
            let mut times = Interleaved::new(kinds.len());
            let stop_at = Instant::now() + length;
            while Instant::now() < stop_at {
                for (at, &txn) in kinds.iter().enumerate() {
                    let started = Instant::now();
                    producer.transaction(txn);
                    times.add(at, started.elapsed());
                }
            }
            (producers, times.rates())
        })
        .await
        .expect("P12 SQLite producer");
        *self = producers;
        rates
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kinds_rate_is_its_count_over_its_own_time() {
        let mut times = Interleaved::new(2);
        times.add(0, Duration::from_millis(10));
        times.add(0, Duration::from_millis(30));
        times.add(1, Duration::from_millis(50));
        let rates = times.rates();
        assert!((rates[0] - 50.0).abs() < 1e-9, "{rates:?}");
        assert!((rates[1] - 20.0).abs() < 1e-9, "{rates:?}");
    }

    #[test]
    fn wake_ups_are_measured_against_the_enqueue_the_rest_against_the_order() {
        for (kind, against) in [
            (Txn::TwoOrders, Txn::Order),
            (Txn::OrderAndIntent, Txn::Order),
            (Txn::IntentPrepared, Txn::Order),
            (Txn::IntentNotifyInside, Txn::OrderAndIntent),
            (Txn::IntentWakeAfter, Txn::OrderAndIntent),
        ] {
            assert_eq!(kind.against(), against, "{}", kind.name());
        }
    }
}
