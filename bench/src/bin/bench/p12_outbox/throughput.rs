//! Relay throughput against the database's raw rate on the same terms (P10's
//! method): a backlog of queued intents, drained by the journal's relay
//! (`drain()`, batches of 32, a store pool of 32 connections: claim, send, record
//! each), against the same backlog drained by the relay's own row writes run
//! directly — the store's claim statement for a batch of 32, then the store's
//! record statement for each claimed intent, the 32 at once on 32 connections —
//! without HTTP or the journal's code.

use std::time::{Duration, Instant};

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::{Journal, PostgresStore};

use super::latency::BATCH;
use super::transactions::PgProducer;
use crate::p10_durable::PG_RECORD;
use crate::plan::Plan;

/// The longest one side may take to drain a backlog (a stuck relay fails the run).
const DRAIN_LIMIT: Duration = Duration::from_secs(120);
/// The store's resume lease (its default, 5 minutes).
const LEASE_MS: i64 = 300_000;

/// The store's `CLAIM` (`journal/src/postgres/queries.rs`): `$1` owner, `$2`
/// incarnation, `$3` unknown, `$4` in_flight, `$5` lease ms, `$6` limit, `$7` queued.
const PG_CLAIM: &str = "WITH clock AS (SELECT (extract(epoch FROM now()) * 1000)::bigint AS ms),
     due AS (
         SELECT i.key FROM journal_intents i, clock
         WHERE (i.state IN ('queued', 'in_flight', 'unknown') AND
             ((i.state IN ($3, $7) AND i.due_at_ms <= clock.ms) OR (i.state = $4 AND
             (i.lease_until_ms <= clock.ms OR (i.owner = $1 AND i.incarnation IS DISTINCT FROM $2)))))
         ORDER BY COALESCE(i.due_at_ms, i.lease_until_ms), i.created_ms
         LIMIT $6
         FOR UPDATE OF i SKIP LOCKED)
     UPDATE journal_intents t
     SET state = $4, owner = $1, incarnation = $2, lease_until_ms = clock.ms + $5,
         fence = t.fence + 1, runs = t.runs + 1, due_at_ms = NULL, updated_ms = clock.ms
     FROM due, clock
     WHERE t.key = due.key
     RETURNING t.*, clock.ms AS now_ms";

/// Per round, intents/s of the raw row writes and of the relay, in both orders
/// (raw first, relay first, relay first, raw first, … as P10), after a warm-up
/// of both. The relay runs in this process, on its own journal (a pool of
/// [`BATCH`] connections); `producer` enqueues the backlogs.
pub async fn rounds(
    conninfo: &str,
    producer: &mut PgProducer,
    client: &ResilientClient,
    plan: &Plan,
) -> (Vec<f64>, Vec<f64>) {
    let store = PostgresStore::builder(conninfo)
        .pool_size(BATCH)
        .connect()
        .await
        .expect("P12 relay journal");
    let journal = Journal::builder(store)
        .worker_name("p12-relay-in-bench")
        .build()
        .expect("journal");
    let raw = RawRelay::connect(conninfo).await;
    let backlog = plan.p12_backlog;
    raw_rate(producer, &raw, backlog / 4).await;
    relay_rate(producer, &journal, client, backlog / 4).await;
    let (mut raws, mut relayed) = (Vec::new(), Vec::new());
    for round in 0..plan.p12_rounds {
        if matches!(round % 4, 0 | 3) {
            raws.push(raw_rate(producer, &raw, backlog).await);
            relayed.push(relay_rate(producer, &journal, client, backlog).await);
        } else {
            relayed.push(relay_rate(producer, &journal, client, backlog).await);
            raws.push(raw_rate(producer, &raw, backlog).await);
        }
    }
    (raws, relayed)
}

/// Intents per second the journal's relay drains a backlog of `count` with.
async fn relay_rate(
    producer: &mut PgProducer,
    journal: &Journal,
    client: &ResilientClient,
    count: usize,
) -> f64 {
    producer.backlog(count).await;
    let relay = journal
        .resumer(client)
        .resign(|request, _intent| request.bearer_auth("p12"))
        .batch(BATCH);
    let started = Instant::now();
    let report = tokio::time::timeout(DRAIN_LIMIT, relay.drain())
        .await
        .expect("P12 relay: the backlog drained in time")
        .expect("P12 relay drain");
    let elapsed = started.elapsed();
    assert_eq!(
        report.succeeded, count,
        "P12 relay: every queued intent sent once and recorded ({report:?})"
    );
    count as f64 / elapsed.as_secs_f64()
}

/// Intents per second the relay's row writes alone drain a backlog of `count` with.
async fn raw_rate(producer: &mut PgProducer, raw: &RawRelay, count: usize) -> f64 {
    producer.backlog(count).await;
    let started = Instant::now();
    let drained = tokio::time::timeout(DRAIN_LIMIT, raw.drain())
        .await
        .expect("P12 raw relay: the backlog drained in time");
    let elapsed = started.elapsed();
    assert_eq!(drained, count, "P12 raw relay: every queued row claimed");
    count as f64 / elapsed.as_secs_f64()
}

/// As many connections as the relay's store pool, each with the store's claim
/// and record statements prepared and its session setting.
struct RawRelay {
    connections: Vec<RawConnection>,
}

struct RawConnection {
    client: tokio_postgres::Client,
    claim: tokio_postgres::Statement,
    record: tokio_postgres::Statement,
}

impl RawRelay {
    async fn connect(conninfo: &str) -> RawRelay {
        let mut connections = Vec::with_capacity(BATCH);
        for _ in 0..BATCH {
            let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
                .await
                .expect("P12 raw PostgreSQL");
            tokio::spawn(connection);
            // The store's session setting (its default statement timeout, 5 s).
            client
                .batch_execute("SET statement_timeout = 5000")
                .await
                .expect("statement timeout");
            let claim = client.prepare(PG_CLAIM).await.expect("prepare CLAIM");
            let record = client.prepare(PG_RECORD).await.expect("prepare RECORD");
            connections.push(RawConnection {
                client,
                claim,
                record,
            });
        }
        RawRelay { connections }
    }

    /// Claims batches and records each claimed row `succeeded` until nothing is
    /// claimable; the rows recorded.
    async fn drain(&self) -> usize {
        let mut recorded = 0;
        loop {
            let first = &self.connections[0];
            let claimed = first
                .client
                .query(
                    &first.claim,
                    &[
                        &"p12-raw",
                        &"raw",
                        &"unknown",
                        &"in_flight",
                        &LEASE_MS,
                        &(BATCH as i64),
                        &"queued",
                    ],
                )
                .await
                .expect("P12 raw CLAIM");
            if claimed.is_empty() {
                return recorded;
            }
            let records = claimed.iter().zip(&self.connections).map(|(row, conn)| {
                let key: String = row.get("key");
                let fence: i64 = row.get("fence");
                async move {
                    let updated = conn
                        .client
                        .execute(
                            &conn.record,
                            &[
                                &"succeeded",
                                &Some(200_i32),
                                &None::<&str>,
                                &None::<&str>,
                                &None::<i64>,
                                &key,
                                &fence,
                                &"in_flight",
                                &0_i64,
                            ],
                        )
                        .await
                        .expect("P12 raw RECORD");
                    assert_eq!(updated, 1, "P12 raw RECORD: row not updated");
                }
            });
            futures_util::future::join_all(records).await;
            recorded += claimed.len();
        }
    }
}
