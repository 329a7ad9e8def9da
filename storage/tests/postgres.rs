//! The PostgreSQL runner and pool against a real server (a throwaway cluster on
//! 127.0.0.1). Without PostgreSQL binaries the tests say so and pass, unless
//! `CI=true`, where they fail.

#![cfg(all(feature = "postgres", feature = "test-util"))]

use std::time::Duration;

use idempotency_storage::postgres::{migrate, Connect, Pool, PoolError};
use idempotency_storage::throwaway_postgres::{Durability, ThrowawayPostgres};
use idempotency_storage::{Migration, Schema, SchemaError, VersionRecord};
use tokio_postgres::{Client, NoTls};

const LOCK: i64 = 0x7374_6f72_6167_6501;

const STEPS: &[Migration] = &[
    Migration::new(1, "0001_keys", "CREATE TABLE keys (key TEXT PRIMARY KEY)"),
    Migration::new(2, "0002_body", "ALTER TABLE keys ADD COLUMN body BYTEA"),
];

fn cluster() -> Option<ThrowawayPostgres> {
    match ThrowawayPostgres::start(Durability::Off) {
        Ok(Some(cluster)) => Some(cluster),
        Ok(None) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true needs PostgreSQL: run journal/scripts/ensure-postgres.sh"
            );
            eprintln!("SKIPPED: no PostgreSQL binaries (journal/scripts/ensure-postgres.sh)");
            None
        }
        Err(error) => panic!("starting a throwaway PostgreSQL failed: {error}"),
    }
}

async fn client(conninfo: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(conninfo, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

#[tokio::test]
async fn migrations_run_once_across_a_fleet_and_a_newer_schema_is_refused() {
    let Some(cluster) = cluster() else { return };
    for (table, names) in [("store_versions", true), ("store_schema", false)] {
        let conninfo = cluster.conninfo().to_owned();
        let mut admin = client(&conninfo).await;
        admin
            .batch_execute("DROP TABLE IF EXISTS keys, store_versions, store_schema")
            .await
            .unwrap();
        let schema = Schema::new(VersionRecord::Table { name: table, names }, STEPS);
        // Eight workers start together: the advisory lock lets one migrate.
        let workers = (0..8).map(|_| {
            let conninfo = conninfo.clone();
            tokio::spawn(async move {
                let mut client = client(&conninfo).await;
                migrate(&mut client, &schema, LOCK).await.unwrap()
            })
        });
        for worker in workers {
            assert_eq!(worker.await.unwrap(), 2, "{table}");
        }
        let rows: i64 = admin
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(rows, 2, "{table}: each step recorded once");
        admin
            .execute("INSERT INTO keys (key, body) VALUES ('k', '\\x00')", &[])
            .await
            .unwrap();

        let older = Schema::new(VersionRecord::Table { name: table, names }, &STEPS[..1]);
        let error = migrate(&mut admin, &older, LOCK).await.unwrap_err();
        assert!(
            matches!(
                error,
                SchemaError::Newer {
                    current: 2,
                    latest: 1
                }
            ),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_failing_step_names_itself_with_the_servers_message() {
    let Some(cluster) = cluster() else { return };
    let mut admin = client(cluster.conninfo()).await;
    const BAD: &[Migration] = &[Migration::new(
        1,
        "0001_bad",
        "ALTER TABLE nowhere ADD x INT",
    )];
    let schema = Schema::new(
        VersionRecord::Table {
            name: "bad_versions",
            names: true,
        },
        BAD,
    );
    let error = migrate(&mut admin, &schema, LOCK).await.unwrap_err();
    let text = error.to_string();
    assert!(text.starts_with("0001_bad: "), "{text}");
    assert!(text.contains("nowhere"), "the server's message: {text}");
    let exists: bool = admin
        .query_one("SELECT to_regclass('bad_versions') IS NOT NULL", &[])
        .await
        .unwrap()
        .get(0);
    assert!(!exists, "nothing committed");
}

struct Connector(String);

impl Connect for Connector {
    type Connection = Client;
    type Error = tokio_postgres::Error;

    async fn connect(&self) -> Result<Client, tokio_postgres::Error> {
        let (client, connection) = tokio_postgres::connect(&self.0, NoTls).await?;
        tokio::spawn(connection);
        Ok(client)
    }

    fn is_closed(client: &Client) -> bool {
        client.is_closed()
    }
}

#[tokio::test]
async fn the_pool_reconnects_after_the_server_restarts() {
    let Some(cluster) = cluster() else { return };
    let pool = Pool::new(
        Connector(cluster.conninfo().to_owned()),
        "test",
        std::num::NonZeroUsize::new(2).unwrap(),
        Duration::from_secs(5),
        None,
    );
    let first: i32 = pool
        .get()
        .await
        .unwrap()
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    cluster.stop().unwrap();
    // The idle connection ended with the server (a stale one, not yet seen
    // closed, fails its query and is discarded); connecting fails while it is down.
    let mut down = None;
    for _ in 0..4 {
        match pool.get().await {
            Ok(stale) => {
                assert!(stale.query_one("SELECT 1", &[]).await.is_err());
                stale.discard();
            }
            Err(error) => {
                down = Some(error);
                break;
            }
        }
    }
    assert!(matches!(down, Some(PoolError::Connect(_))), "{down:?}");
    cluster.restart().unwrap();
    // Within the backoff the pool refuses at once; past it, it connects again.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let second: i32 = loop {
        match pool.get().await {
            Ok(client) => {
                break client
                    .query_one("SELECT pg_backend_pid()", &[])
                    .await
                    .unwrap()
                    .get(0)
            }
            Err(PoolError::Backoff { retry_in, .. }) => tokio::time::sleep(retry_in).await,
            Err(error) => panic!("{error}"),
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no reconnect within 30 s"
        );
    };
    assert_ne!(first, second, "a new server process, a new connection");
}

/// Every driver failure says what happened on its top line, not only "db
/// error": a server error with its SQLSTATE, a backend the server terminated
/// in plain words, a refused connect with the operating system's reason.
#[tokio::test]
async fn driver_errors_name_their_cause() {
    use idempotency_storage::postgres::DriverError;

    let Some(cluster) = cluster() else { return };
    let victim = client(cluster.conninfo()).await;
    let error = victim
        .batch_execute("SELECT * FROM no_such_table")
        .await
        .unwrap_err();
    let text = DriverError::new(error).to_string();
    assert!(text.contains("no_such_table"), "{text}");
    assert!(text.contains("SQLSTATE 42P01"), "{text}");

    let admin = client(cluster.conninfo()).await;
    let pid: i32 = victim
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .unwrap();
    // The terminated session's next statement reads the server's goodbye, or
    // finds the connection closed; both say so.
    let error = victim.batch_execute("SELECT 1").await.unwrap_err();
    let text = DriverError::new(error).to_string();
    assert!(
        text.contains("terminated this connection's backend")
            || text.contains("connection closed (the server ended it"),
        "{text}"
    );
    assert_ne!(text, "db error");

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused =
        tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=postgres"), NoTls)
            .await
            .map(|_| ())
            .unwrap_err();
    let text = DriverError::new(refused).to_string();
    assert!(text.starts_with("error connecting to server: "), "{text}");
    assert!(text.to_lowercase().contains("refused"), "{text}");
}
