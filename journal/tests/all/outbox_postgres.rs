//! The outbox on PostgreSQL: an enqueue in the caller's tokio-postgres or sqlx
//! transaction, or by the driver-neutral statement; relays on other
//! connections woken by `NOTIFY`, also after their listening connection was cut.

use std::time::Duration;

use reqwest_resilience_journal::{
    Dialect, IntentState, Journal, OutboxIntent, OutboxValue, PostgresStore,
};
use tokio_postgres::types::ToSql;

use crate::support::backend::client;
use crate::support::pg::fresh_schema;
use crate::support::server::Server;

/// Far longer than any wake-up needs: a send before it proves the relay was
/// woken, not polled.
const POLL: Duration = Duration::from_secs(60);
const PROMPT: Duration = Duration::from_secs(10);

struct Database {
    conninfo: String,
    business: tokio_postgres::Client,
}

async fn database(test: &str) -> Option<Database> {
    let conninfo = fresh_schema(test).await?;
    // The journal's table is created by the store's first connection.
    PostgresStore::connect(&conninfo).await.unwrap();
    let (business, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    business
        .batch_execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, payment_key TEXT NOT NULL)")
        .await
        .unwrap();
    Some(Database { conninfo, business })
}

async fn journal(conninfo: &str, worker: &str) -> Journal {
    Journal::builder(PostgresStore::connect(conninfo).await.unwrap())
        .worker_name(worker)
        .build()
        .unwrap()
}

async fn orders(db: &Database) -> i64 {
    db.business
        .query_one("SELECT COUNT(*) FROM orders", &[])
        .await
        .unwrap()
        .get(0)
}

async fn order_with_payment(db: &mut Database, id: i64, intent: &OutboxIntent, commit: bool) {
    let tx = db.business.transaction().await.unwrap();
    tx.execute(
        "INSERT INTO orders (id, payment_key) VALUES ($1, $2)",
        &[&id, &intent.key()],
    )
    .await
    .unwrap();
    intent.enqueue_tokio_postgres(&tx).await.unwrap();
    if commit {
        tx.commit().await.unwrap();
    } else {
        tx.rollback().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_enqueues_are_sent_once_and_rolled_back_ones_never() {
    let Some(mut db) = database("outbox_pg_commit").await else {
        return;
    };
    let producer = journal(&db.conninfo, "producer").await;
    let server = Server::start().await;
    let client = client(3);
    let mut committed = Vec::new();
    let mut rolled_back = Vec::new();
    for id in 0..10 {
        let body = format!(r#"{{"order":{id}}}"#);
        let intent = producer
            .outbox(client.post(&server.url).bearer_auth("t").body(body))
            .unwrap();
        let commit = id % 3 != 0;
        order_with_payment(&mut db, id, &intent, commit).await;
        if commit {
            committed.push(intent.key().to_owned());
        } else {
            rolled_back.push(intent.key().to_owned());
        }
    }
    assert_eq!(orders(&db).await, committed.len() as i64);
    let queued = producer.list(IntentState::Queued, 100).await.unwrap();
    assert_eq!(queued.len(), committed.len());

    let relay = journal(&db.conninfo, "relay").await;
    let report = relay
        .resumer(&client)
        .resign(|request, _| request.bearer_auth("t"))
        .drain()
        .await
        .unwrap();
    assert_eq!(report.succeeded, committed.len());
    for key in &committed {
        let seen = server.seen_with_key(key);
        assert_eq!(seen.len(), 1, "sent once");
        assert_eq!(seen[0].header("authorization"), Some("Bearer t"));
        assert_eq!(server.effects_with_key(key), 1);
        let row = relay.get(key).await.unwrap().unwrap();
        assert_eq!(row.state, IntentState::Succeeded);
    }
    for key in &rolled_back {
        assert!(server.seen_with_key(key).is_empty(), "never sent");
        assert!(relay.get(key).await.unwrap().is_none(), "never written");
    }
    assert_eq!(server.seen().len(), committed.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_on_another_connection_is_woken_by_notify() {
    let Some(mut db) = database("outbox_pg_notify").await else {
        return;
    };
    let producer = journal(&db.conninfo, "producer").await;
    let relay_journal = journal(&db.conninfo, "relay").await;
    let server = Server::start().await;
    let client = client(3);
    let relay = relay_journal.resumer(&client).spawn(POLL);
    // The relay's first pass finds nothing; it now waits for its poll or a NOTIFY.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let intent = producer
        .outbox(client.post(&server.url).body("{}"))
        .unwrap();
    order_with_payment(&mut db, 1, &intent, true).await;
    producer.wake_relays().await;
    tokio::time::timeout(PROMPT, server.wait_for_effects(1))
        .await
        .expect("the NOTIFY woke the other relay long before its poll");

    // Cut the relay's listening connection: it reconnects and listens again.
    let cut = db
        .business
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE query LIKE 'LISTEN reqwest_resilience_journal%' AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    // At least this relay's (other tests' relays on the cluster reconnect too).
    assert!(
        !cut.is_empty(),
        "the relay listens on a connection of its own"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = producer
        .outbox(client.post(&server.url).body("{}"))
        .unwrap();
    order_with_payment(&mut db, 2, &second, true).await;
    producer.wake_relays().await;
    tokio::time::timeout(PROMPT, server.wait_for_effects(2))
        .await
        .expect("after a reconnect the relay is woken again");
    let totals = relay.stop().await;
    assert_eq!(totals.succeeded, 2);
    assert_eq!(server.seen_with_key(second.key()).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_neutral_statement_enqueues_on_postgres() {
    let Some(mut db) = database("outbox_pg_neutral").await else {
        return;
    };
    let journal = journal(&db.conninfo, "relay").await;
    let server = Server::start().await;
    let client = client(3);
    let intent = journal
        .outbox(client.post(&server.url).body("neutral"))
        .unwrap();
    let statement = intent.statement(Dialect::Postgres);
    let params: Vec<Box<dyn ToSql + Sync + Send>> = statement
        .params
        .iter()
        .map(|value| -> Box<dyn ToSql + Sync + Send> {
            match value {
                OutboxValue::Text(text) => Box::new(text.clone()),
                OutboxValue::Bool(flag) => Box::new(*flag),
                OutboxValue::Bytes(bytes) => Box::new(bytes.clone()),
                OutboxValue::BigInt(n) => Box::new(*n),
                OutboxValue::NullBigInt => Box::new(None::<i64>),
                other => panic!("a value this test does not bind: {other:?}"),
            }
        })
        .collect();
    let refs: Vec<&(dyn ToSql + Sync)> =
        params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect();
    let tx = db.business.transaction().await.unwrap();
    assert_eq!(tx.execute(statement.sql, &refs).await.unwrap(), 1);
    tx.commit().await.unwrap();
    journal.resumer(&client).drain().await.unwrap();
    let seen = server.seen_with_key(intent.key());
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body, b"neutral");
}

#[cfg(feature = "sqlx")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sqlx_transaction_enqueues_and_rolls_back_with_the_order() {
    use sqlx::Connection;

    let Some(db) = database("outbox_pg_sqlx").await else {
        return;
    };
    let journal = journal(&db.conninfo, "relay").await;
    let server = Server::start().await;
    let client = client(3);
    let config: tokio_postgres::Config = db.conninfo.parse().unwrap();
    let schema = config
        .get_options()
        .and_then(|o| o.strip_prefix("-csearch_path="))
        .expect("the test schema")
        .to_owned();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let options = sqlx::postgres::PgConnectOptions::new()
        .host("127.0.0.1")
        .port(port)
        .username(config.get_user().unwrap_or("postgres"))
        .database(config.get_dbname().unwrap_or("postgres"))
        .options([("search_path", schema.as_str())]);
    let mut conn = sqlx::PgConnection::connect_with(&options).await.unwrap();

    let kept = journal
        .outbox(client.post(&server.url).body("kept"))
        .unwrap();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("INSERT INTO orders (id, payment_key) VALUES (1, $1)")
        .bind(kept.key())
        .execute(&mut *tx)
        .await
        .unwrap();
    kept.enqueue_sqlx(&mut tx).await.unwrap();
    tx.commit().await.unwrap();

    let dropped = journal
        .outbox(client.post(&server.url).body("dropped"))
        .unwrap();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("INSERT INTO orders (id, payment_key) VALUES (2, $1)")
        .bind(dropped.key())
        .execute(&mut *tx)
        .await
        .unwrap();
    dropped.enqueue_sqlx(&mut tx).await.unwrap();
    tx.rollback().await.unwrap();

    assert_eq!(orders(&db).await, 1);
    let report = journal.resumer(&client).drain().await.unwrap();
    assert_eq!((report.claimed, report.succeeded), (1, 1));
    assert_eq!(server.seen_with_key(kept.key()).len(), 1);
    assert!(server.seen_with_key(dropped.key()).is_empty());
    assert!(journal.get(dropped.key()).await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_commit_keeps_the_order_and_its_intent_together() {
    use crate::support::proxy::{Cut, Proxy};

    let Some(db) = database("outbox_pg_cut_commit").await else {
        return;
    };
    let journal = journal(&db.conninfo, "relay").await;
    let server = Server::start().await;
    let client = client(3);
    let config: tokio_postgres::Config = db.conninfo.parse().unwrap();
    let upstream = config.get_ports().first().copied().expect("a port");
    let options = config.get_options().expect("the test schema's search_path");
    let proxy = Proxy::start(upstream).await;
    let through_proxy = format!("{} options='{options}'", proxy.conninfo());

    let mut committed = Vec::new();
    for (id, cut) in [Cut::AfterCommit, Cut::BeforeCommit]
        .into_iter()
        .cycle()
        .take(6)
        .enumerate()
    {
        let id = i64::try_from(id).unwrap();
        let (mut business, connection) =
            tokio_postgres::connect(&through_proxy, tokio_postgres::NoTls)
                .await
                .unwrap();
        tokio::spawn(connection);
        let intent = journal.outbox(client.post(&server.url).body("{}")).unwrap();
        let tx = business.transaction().await.unwrap();
        tx.execute(
            "INSERT INTO orders (id, payment_key) VALUES ($1, $2)",
            &[&id, &intent.key()],
        )
        .await
        .unwrap();
        intent.enqueue_tokio_postgres(&tx).await.unwrap();
        proxy.arm(cut);
        assert!(tx.commit().await.is_err(), "the COMMIT's answer is lost");
        assert!(proxy.fired());

        // The caller does not know whether it committed; the intent's row says,
        // in every snapshot (read in one statement, now and once the server is
        // surely done with the COMMIT it may have received).
        for look in 0..2 {
            let row = db
                .business
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM orders WHERE id = $1),
                            EXISTS (SELECT 1 FROM journal_intents WHERE key = $2)",
                    &[&id, &intent.key()],
                )
                .await
                .unwrap();
            let (order, journaled): (bool, bool) = (row.get(0), row.get(1));
            assert_eq!(order, journaled, "order {id}, look {look}: both or neither");
            if cut == Cut::BeforeCommit {
                assert!(!order, "order {id}: the server never saw the COMMIT");
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        if journal.get(intent.key()).await.unwrap().is_some() {
            committed.push(intent.key().to_owned());
        }
    }
    journal.resumer(&client).drain().await.unwrap();
    assert_eq!(server.seen().len(), committed.len());
    for key in &committed {
        assert_eq!(server.effects_with_key(key), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_producers_and_two_relays_send_each_intent_once() {
    const PRODUCERS: i64 = 32;
    const EACH: i64 = 5;
    let Some(db) = database("outbox_pg_32").await else {
        return;
    };
    let server = Server::start().await;
    let client = client(3);
    let relays: Vec<_> = futures_util::future::join_all(
        ["relay-a", "relay-b"].map(|name| journal(&db.conninfo, name)),
    )
    .await
    .into_iter()
    .map(|relay| relay.resumer(&client).spawn(POLL))
    .collect();
    let producer = journal(&db.conninfo, "producer").await;

    let mut tasks = tokio::task::JoinSet::new();
    for p in 0..PRODUCERS {
        let (conninfo, producer, client, url) = (
            db.conninfo.clone(),
            producer.clone(),
            client.clone(),
            server.url.clone(),
        );
        tasks.spawn(async move {
            let (mut business, connection) =
                tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
                    .await
                    .unwrap();
            tokio::spawn(connection);
            for n in 0..EACH {
                let id = p * EACH + n;
                let intent = producer
                    .outbox(client.post(&url).body(format!("{{\"order\":{id}}}")))
                    .unwrap();
                let tx = business.transaction().await.unwrap();
                tx.execute(
                    "INSERT INTO orders (id, payment_key) VALUES ($1, $2)",
                    &[&id, &intent.key()],
                )
                .await
                .unwrap();
                intent.enqueue_tokio_postgres(&tx).await.unwrap();
                tx.commit().await.unwrap();
                producer.wake_relays().await;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let total = usize::try_from(PRODUCERS * EACH).unwrap();
    tokio::time::timeout(PROMPT * 3, server.wait_for_effects(total))
        .await
        .expect("every committed intent sent, woken (the poll is a minute)");
    let mut sent = 0;
    for relay in relays {
        sent += relay.stop().await.succeeded;
    }
    assert_eq!(sent, total, "each intent claimed by one relay");
    let seen = server.seen();
    assert_eq!(seen.len(), total, "one request per intent");
    let keys: std::collections::HashSet<_> = seen.iter().filter_map(|s| s.key.clone()).collect();
    assert_eq!(keys.len(), total, "every request its own key");
    assert_eq!(orders(&db).await, PRODUCERS * EACH);
}
