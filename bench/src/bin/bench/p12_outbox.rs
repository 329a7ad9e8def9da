//! P12 — the outbox: an intent enqueued in the application's own transaction and
//! sent by a relay after commit. Three figures:
//!
//! 1. What the enqueue adds to a one-row business transaction (`BEGIN; INSERT
//!    INTO p12_orders …; COMMIT`), with 1 and 32 producers on as many
//!    connections: the same transaction with and without
//!    `enqueue_tokio_postgres` (PostgreSQL, the throwaway cluster's default
//!    durability) or `enqueue_rusqlite` (SQLite, one WAL file), rounds side by
//!    side; and, at 32, a `pg_notify` inside the transaction and `wake_relays()`
//!    after it, each against the plain enqueue.
//! 2. Commit-to-first-byte with the relay in another process (`p12_relay`): from
//!    `COMMIT` returning in the producer to the first byte of that key's request
//!    at a server in this process — one intent at a time (idle relay), and 32
//!    producers each waiting for its own.
//! 3. Relay throughput on a backlog against the relay's own row writes run
//!    directly (the P10 method; see [`throughput`]).

mod first_byte;
mod latency;
mod relay_process;
mod throughput;
mod transactions;
mod underway;

use std::sync::Arc;

use reqwest_resilience::{ResilientClient, RetryPolicy};
use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::bare_reqwest_builder;
use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};
use reqwest_resilience_journal::{Journal, PostgresStore, SqliteStore};

use crate::plan::Plan;
use crate::report::Report;
use crate::stats::{median, quantile};

use first_byte::FirstByteServer;
use latency::{Delivery, Latencies, BATCH, POLL};
use transactions::{Outbox, PgProducer, Producers, SqliteProducer, Txn, ORDERS_TABLE};

/// Producers (and connections) in the concurrent rows.
const TASKS: usize = 32;
/// Enough connections for 32 producers, the relay's 32, the raw side's 32 and
/// the journals' pools.
const MAX_CONNECTIONS: &str = "max_connections=200";
/// The transactions' statement count is read from `pg_stat_statements`,
/// tracking off except in the session that counts.
const COUNTED: [&str; 3] = [
    MAX_CONNECTIONS,
    "shared_preload_libraries=pg_stat_statements",
    "pg_stat_statements.track=none",
];
const CLEAN: &str = "TRUNCATE journal_intents, p12_orders";

/// Per-round rates of transaction kinds measured side by side.
struct Rounds {
    kinds: Vec<Txn>,
    /// `rates[kind][round]`, transactions per second.
    rates: Vec<Vec<f64>>,
}

impl Rounds {
    fn rates_of(&self, kind: Txn) -> &[f64] {
        let at = self
            .kinds
            .iter()
            .position(|&k| k == kind)
            .expect("kind measured");
        &self.rates[at]
    }

    /// A transaction's time with `kind` ÷ its time with `base`, per round.
    fn time_ratios(&self, kind: Txn, base: Txn) -> Vec<f64> {
        self.rates_of(base)
            .iter()
            .zip(self.rates_of(kind))
            .map(|(b, k)| b / k)
            .collect()
    }
}

/// `kinds` for `plan.p12_rounds` rounds, in a rotated order each round, after a
/// warm-up of each: each kind's rate from all `producers` at once.
async fn rounds(producers: &mut impl Producers, kinds: &[Txn], plan: &Plan) -> Rounds {
    for &kind in kinds {
        producers.rate(kind, plan.p12_round / 4).await;
    }
    let mut rates = vec![Vec::with_capacity(plan.p12_rounds); kinds.len()];
    for round in 0..plan.p12_rounds {
        for step in 0..kinds.len() {
            let at = (round + step) % kinds.len();
            rates[at].push(producers.rate(kinds[at], plan.p12_round).await);
        }
    }
    Rounds {
        kinds: kinds.to_vec(),
        rates,
    }
}

/// As [`rounds`] with one producer, the kinds interleaved transaction by
/// transaction within each round (as long as `rounds` gives all kinds).
async fn interleaved_rounds(producer: &mut impl Producers, kinds: &[Txn], plan: &Plan) -> Rounds {
    let round = plan.p12_round * u32::try_from(kinds.len()).unwrap_or(u32::MAX);
    producer.interleaved(kinds, round / 4).await;
    let mut rates = vec![Vec::with_capacity(plan.p12_rounds); kinds.len()];
    for _ in 0..plan.p12_rounds {
        for (at, rate) in producer
            .interleaved(kinds, round)
            .await
            .into_iter()
            .enumerate()
        {
            rates[at].push(rate);
        }
    }
    Rounds {
        kinds: kinds.to_vec(),
        rates,
    }
}

/// One database's enqueue cost, alone and concurrent.
struct Costs {
    database: &'static str,
    alone: Rounds,
    concurrent: Rounds,
}

/// Everything measured on PostgreSQL.
struct PgFigures {
    costs: Costs,
    /// Statements per transaction, order only and with the enqueue.
    statements: Option<(f64, f64)>,
    delivery: Delivery,
    /// Per round: intents/s of the relay's row writes alone, and of the relay.
    raw: Vec<f64>,
    relay: Vec<f64>,
}

/// Runs P12 and adds its section (and its targets) to `report`.
pub async fn run(plan: &Plan, report: &mut Report) {
    let client = ResilientClient::from_builder(bare_reqwest_builder(), RetryPolicy::default())
        .expect("client");
    let server = Arc::new(FirstByteServer::start());
    let outbox_to = |journal: Journal| Outbox {
        journal,
        client: client.clone(),
        url: server.url("/payments").into(),
    };
    let dir = std::env::temp_dir().join(format!("p12-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("P12 directory");
    let sqlite = sqlite_costs(&dir.join("outbox.sqlite"), &outbox_to, plan).await;
    let _ = std::fs::remove_dir_all(&dir);

    let cluster = match ThrowawayPostgres::start_with(Durability::Defaults, &COUNTED) {
        Ok(cluster) => cluster,
        // A PostgreSQL without the pg_stat_statements module: no statement count.
        Err(_) => ThrowawayPostgres::start_with(Durability::Defaults, &[MAX_CONNECTIONS])
            .unwrap_or_else(|error| panic!("P12: starting a throwaway PostgreSQL failed: {error}")),
    };
    let postgres = match &cluster {
        Some(cluster) => {
            Some(postgres(cluster.conninfo(), &outbox_to, &client, &server, plan).await)
        }
        None => None,
    };
    render(plan, report, &sqlite.0, sqlite.1, postgres.as_ref());
}

/// SQLite: producers on the journal's own file; its `synchronous` level too.
async fn sqlite_costs(
    path: &std::path::Path,
    outbox_to: &impl Fn(Journal) -> Outbox,
    plan: &Plan,
) -> (Costs, i64) {
    let store = SqliteStore::open(path).expect("P12 SQLite journal");
    let journal = Journal::builder(store)
        .worker_name("p12-sqlite")
        .build()
        .expect("journal");
    let outbox = outbox_to(journal);
    let mut producers: Vec<SqliteProducer> = (0..TASKS)
        .map(|_| SqliteProducer::open(path, outbox.clone()))
        .collect();
    let synchronous = producers[0].synchronous();
    let mut alone = vec![producers.pop().expect("a producer")];
    let kinds = [Txn::Order, Txn::TwoOrders, Txn::OrderAndIntent];
    let alone_rounds = interleaved_rounds(&mut alone, &kinds, plan).await;
    producers.append(&mut alone);
    let concurrent = rounds(&mut producers, &kinds, plan).await;
    let costs = Costs {
        database: "SQLite (bundled, one file, WAL)",
        alone: alone_rounds,
        concurrent,
    };
    (costs, synchronous)
}

async fn postgres(
    conninfo: &str,
    outbox_to: &impl Fn(Journal) -> Outbox,
    client: &ResilientClient,
    server: &Arc<FirstByteServer>,
    plan: &Plan,
) -> PgFigures {
    // The producers' journal: it creates the table, decides intents, wakes relays.
    let store = PostgresStore::connect(conninfo)
        .await
        .expect("P12 PostgreSQL journal");
    let journal = Journal::builder(store)
        .worker_name("p12-producers")
        .build()
        .expect("journal");
    let outbox = outbox_to(journal);
    install_peer(conninfo).await;
    let mut producers = Vec::with_capacity(TASKS);
    for _ in 0..TASKS {
        producers.push(PgProducer::connect(conninfo, outbox.clone()).await);
    }
    producers[0].batch(ORDERS_TABLE).await;
    let statements = statement_counts(&mut producers[0]).await;
    // No relay runs while the costs are measured; their intents are removed after.
    let costs = pg_costs(&mut producers, plan).await;
    producers[0].batch(CLEAN).await;
    producers[0].batch(underway::CLEAN).await;
    let delivery = latency::delivery(conninfo, &mut producers, server, plan).await;
    producers[0].batch(CLEAN).await;
    let (raw, relay) = throughput::rounds(conninfo, &mut producers[0], client, plan).await;
    PgFigures {
        costs,
        statements,
        delivery,
        raw,
        relay,
    }
}

/// The peer queue's schema on the cluster, before the producers prepare its
/// enqueue.
async fn install_peer(conninfo: &str) {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
        .await
        .expect("P12 peer: connect");
    let task = tokio::spawn(connection);
    underway::install(&client).await;
    drop(client);
    let _ = task.await;
}

/// PostgreSQL's enqueue cost: the reference rows, and at 32 the wake-ups.
async fn pg_costs(producers: &mut Vec<PgProducer>, plan: &Plan) -> Costs {
    let mut alone = vec![producers.pop().expect("a producer")];
    let kinds = [
        Txn::Order,
        Txn::TwoOrders,
        Txn::OrderAndIntent,
        Txn::IntentPrepared,
        Txn::OrderAndPeer,
    ];
    let alone_rounds = interleaved_rounds(&mut alone, &kinds, plan).await;
    producers.append(&mut alone);
    let kinds = [
        Txn::Order,
        Txn::TwoOrders,
        Txn::OrderAndIntent,
        Txn::IntentPrepared,
        Txn::IntentNotifyInside,
        Txn::IntentWakeAfter,
        Txn::OrderAndPeer,
    ];
    Costs {
        database: "PostgreSQL (throwaway cluster, defaults: fsync on)",
        alone: alone_rounds,
        concurrent: rounds(producers, &kinds, plan).await,
    }
}

/// Statements per transaction counted by `pg_stat_statements` (this session
/// only), order only and with the enqueue; `None` without the module.
async fn statement_counts(producer: &mut PgProducer) -> Option<(f64, f64)> {
    const TRANSACTIONS: usize = 20;
    if producer
        .try_batch("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await
        .is_err()
    {
        return None;
    }
    let mut counts = [0.0; 2];
    for (count, txn) in counts.iter_mut().zip([Txn::Order, Txn::OrderAndIntent]) {
        producer
            .batch("SET pg_stat_statements.track = 'top'; SELECT pg_stat_statements_reset()")
            .await;
        for _ in 0..TRANSACTIONS {
            producer.transaction(txn).await;
        }
        let calls = producer.statements_since_reset().await;
        producer
            .batch("SET pg_stat_statements.track = 'none'")
            .await;
        *count = calls as f64 / TRANSACTIONS as f64;
    }
    producer.batch(CLEAN).await;
    Some((counts[0], counts[1]))
}

/// A cost row: `kind` against what it is measured against, in `rounds`.
fn cost_row(database: &str, clients: usize, rounds: &Rounds, kind: Txn) -> Vec<String> {
    let base = kind.against();
    let ratios = rounds.time_ratios(kind, base);
    vec![
        database.to_owned(),
        clients.to_string(),
        kind.name().to_owned(),
        base.name().to_owned(),
        format!("{:.0}", median(rounds.rates_of(base))),
        format!("{:.0}", median(rounds.rates_of(kind))),
        format!("{:.3}×", median(&ratios)),
        format!("{:.3}×", worst(&ratios)),
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" "),
    ]
}

fn worst(ratios: &[f64]) -> f64 {
    ratios.iter().copied().fold(f64::MIN, f64::max)
}

fn latency_row(name: &str, producers: usize, l: &Latencies) -> Vec<String> {
    vec![
        name.to_owned(),
        producers.to_string(),
        l.ms.len().to_string(),
        format!("{:.0}", l.per_s),
        format!("{:.2}", quantile(&l.ms, 0.5)),
        format!("{:.2}", quantile(&l.ms, 0.99)),
        format!("{:.2}", l.ms.iter().copied().fold(f64::MIN, f64::max)),
        l.missing.to_string(),
    ]
}

fn render(
    plan: &Plan,
    report: &mut Report,
    sqlite: &Costs,
    sqlite_synchronous: i64,
    postgres: Option<&PgFigures>,
) {
    let mut text = format!(
        "\n## P12 — the outbox: an intent enqueued in the business transaction, sent by a \
         relay after commit\n\n\
         **What an enqueue adds to a business transaction.** A one-row business \
         transaction (`BEGIN; INSERT INTO p12_orders (id, amount) …; COMMIT`) against \
         the same transaction with the intent's enqueue before `COMMIT` (the intent \
         decided by `journal.outbox(…)` inside the timed transaction, a POST with a \
         generated key and a 66-byte body), the order's statement as text as an \
         application writes it. 1 producer: the kinds interleaved transaction by transaction (`A B C A B \
         C …`), each transaction timed, a kind's time per round the mean of its own \
         transactions; {TASKS} producers, each on its own connection (SQLite: its \
         own thread and connection to the journal's file, WAL, `BEGIN IMMEDIATE`, busy \
         timeout; `synchronous` = {sqlite_synchronous}, the connection's default). \
         PostgreSQL's durability settings are the throwaway cluster's defaults (fsync \
         and `synchronous_commit` on). {} rounds of {:.0?} per kind (at {TASKS}: the kinds \
         one after the other, in a rotated order each round), after a warm-up of \
         each. *Time ratio*: the transaction's time with ÷ without in the same round \
         (at {TASKS}: from transactions/s); \
         median over rounds and the worst round. Beside the enqueue, for reference: a \
         second order row in the same transaction (what any second statement costs), \
         and the enqueue through its driver-neutral statement prepared once per \
         connection (`intent.statement(Dialect::Postgres)`; `enqueue_tokio_postgres` \
         sends its statement with its parameter types, `query_typed`: one round trip, \
         parsed and planned on every call). At {TASKS}, the wake-up alternatives are measured against the plain \
         enqueue: `pg_notify` inside the business transaction, and `wake_relays()` \
         after its `COMMIT` (it returns at once; the journal's `NOTIFY` goes in the \
         background on its own connection). Side by side on PostgreSQL, the same \
         transaction with a peer queue's transactional enqueue instead: underway \
         0.2.0's schema made by its own migrations on the same cluster and its \
         enqueue statement (`Queue::enqueue`'s `insert into underway.task`, a task's \
         default settings, its `pg_notify` trigger), prepared once per connection as \
         sqlx caches it, the same payload (the intent's method, URL and body as its \
         JSON input) — its SQL run through tokio-postgres, not the crate: \
         `bench/peers/underway-0.2.0/README.md` says why. No relay \
         runs during these rounds.\n\n",
        plan.p12_rounds, plan.p12_round
    );
    let mut rows = Vec::new();
    let mut costs = vec![sqlite];
    if let Some(pg) = postgres {
        costs.insert(0, &pg.costs);
    }
    for c in &costs {
        for (clients, rounds) in [(1, &c.alone), (TASKS, &c.concurrent)] {
            for &kind in rounds.kinds.iter().filter(|&&k| k != Txn::Order) {
                rows.push(cost_row(c.database, clients, rounds, kind));
            }
        }
    }
    text.push_str(&table(
        &[
            " database",
            "producers",
            " transaction",
            " against",
            "against tx/s",
            "tx/s",
            "time ratio (median)",
            "time ratio, worst round",
            "time ratio per round",
        ],
        &rows,
    ));
    let Some(pg) = postgres else {
        text.push_str(
            "\nPostgreSQL: **skipped** — no PostgreSQL binaries (initdb, pg_ctl) on this \
             machine; `journal/scripts/ensure-postgres.sh` installs them. The relay \
             figures need PostgreSQL.\n",
        );
        report.section(&text);
        return;
    };
    match pg.statements {
        Some((order, enqueue)) => text.push_str(&format!(
            "\nStatements per PostgreSQL transaction (`pg_stat_statements`, 20 \
             transactions each): order only {order:.2}, with the enqueue {enqueue:.2}.\n"
        )),
        None => text.push_str(
            "\nStatements per transaction: not counted (no `pg_stat_statements` module).\n",
        ),
    }

    text.push_str(&format!(
        "\n**Commit-to-first-byte, the relay in another process.** `p12_relay` runs \
         `journal.resumer(&client).spawn({:.0?})` (batch {}, a pool of as many \
         connections) on the same PostgreSQL; it sends to an HTTP/1.1 server in the \
         benchmark's process that stamps the first read bringing each key's request. A \
         producer commits an order with its intent, calls `wake_relays()`, and the \
         latency runs from `COMMIT` returning to that stamp (one clock). *Idle*: one \
         intent at a time, the next 20–40 ms (seeded) after the previous first byte; \
         *load*: {TASKS} producers for {:.0?}, each waiting for its own intent's first \
         byte before its next transaction. After a warm-up of 10 intents.\n\n",
        POLL, BATCH, plan.p12_load
    ));
    text.push_str(&table(
        &[
            " relay",
            "producers",
            "intents",
            "intents/s",
            "p50 ms",
            "p99 ms",
            "worst ms",
            "missing (no byte within 10 s)",
        ],
        &[
            latency_row("idle", 1, &pg.delivery.idle),
            latency_row("at load", TASKS, &pg.delivery.load),
        ],
    ));
    let states = pg
        .delivery
        .states
        .iter()
        .map(|(state, rows)| format!("{state} {rows}"))
        .collect::<Vec<_>>()
        .join(", ");
    text.push_str(&format!(
        "\nThe relay process: `{}`. The server: {} requests, {} distinct keys. The \
         journal after these runs: {states}.\n",
        pg.delivery.relay_totals, pg.delivery.sends, pg.delivery.keys
    ));

    let ratios: Vec<f64> = pg.relay.iter().zip(&pg.raw).map(|(r, w)| r / w).collect();
    let lowest = ratios.iter().copied().fold(f64::MAX, f64::min);
    text.push_str(&format!(
        "\n**Relay throughput.** A backlog of {} queued intents (enqueued in \
         transactions of 100, untimed), drained by the journal's relay in this process \
         (`resumer(&client).batch({}).drain()`, a store pool of {}: each pass claims a \
         batch, sends it concurrently to the server above and records each result), \
         against the same backlog drained by the relay's row writes run directly: the \
         store's own claim statement for a batch of {}, then its record statement for \
         each claimed intent, the batch at once on as many connections — no HTTP, no \
         journal code, and not the relay's backlog count after each pass (a read). {} \
         rounds in both orders (raw first, relay first, relay first, raw first, …) after \
         a warm-up of both. Ratio: relay ÷ raw in the same round.\n\n",
        plan.p12_backlog, BATCH, BATCH, BATCH, plan.p12_rounds
    ));
    text.push_str(&table(
        &[
            " database",
            "raw intents/s",
            "relay intents/s",
            "ratio (median)",
            "ratio, worst round",
            "ratio per round",
        ],
        &[vec![
            pg.costs.database.to_owned(),
            format!("{:.0}", median(&pg.raw)),
            format!("{:.0}", median(&pg.relay)),
            format!("{:.3}×", median(&ratios)),
            format!("{lowest:.3}×"),
            ratios
                .iter()
                .map(|r| format!("{r:.2}"))
                .collect::<Vec<_>>()
                .join(" "),
        ]],
    ));
    report.section(&text);
    summarise(report, pg, median(&ratios));
}

/// The SUMMARY figures and the targets.
fn summarise(report: &mut Report, pg: &PgFigures, relay_ratio: f64) {
    let added = pg.statements.map(|(order, enqueue)| enqueue - order);
    let statements = added.map_or_else(
        || "statements not counted".to_owned(),
        |added| format!("+{added:.2} statements"),
    );
    let one_statement = added.is_some_and(|added| (added - 1.0).abs() < 0.01);
    for (figure, clients, rounds) in [
        ("P12 enqueue, 1 producer", 1, &pg.costs.alone),
        ("P12 enqueue, 32 producers", TASKS, &pg.costs.concurrent),
    ] {
        let ratios = rounds.time_ratios(Txn::OrderAndIntent, Txn::Order);
        let ratio = median(&ratios);
        if clients == 1 {
            report.summary.p12_enqueue_ratio = Some(ratio);
        } else {
            report.summary.p12_enqueue_ratio_32 = Some(ratio);
        }
        let second_row = median(&rounds.time_ratios(Txn::TwoOrders, Txn::Order));
        report.target(
            figure,
            "+1 statement and ≤ 1.20× a one-row transaction's time (PostgreSQL)".into(),
            format!(
                "{statements}, {ratio:.3}× (worst round {:.3}×; a second order row: \
                 {second_row:.3}×)",
                worst(&ratios)
            ),
            one_statement && ratio <= 1.20,
        );
    }
    let notify = median(
        &pg.costs
            .concurrent
            .time_ratios(Txn::IntentNotifyInside, Txn::OrderAndIntent),
    );
    report.summary.p12_notify_ratio_32 = Some(notify);
    let peer = pg.costs.alone.time_ratios(Txn::OrderAndPeer, Txn::Order);
    report.summary.p12_peer_enqueue_ratio = Some(median(&peer));
    let load = &pg.delivery.load;
    let load_p99 = quantile(&load.ms, 0.99);
    report.target(
        "P12 commit-to-first-byte at load",
        format!("p99 ≤ 10 ms, {TASKS} producers, relay in another process (PostgreSQL)"),
        format!(
            "p99 {load_p99:.2} ms (p50 {:.2}, worst {:.2}; {} missing)",
            quantile(&load.ms, 0.5),
            load.ms.iter().copied().fold(f64::MIN, f64::max),
            load.missing
        ),
        load_p99 <= 10.0 && load.missing == 0,
    );
    let p99 = quantile(&pg.delivery.idle.ms, 0.99);
    report.summary.p12_commit_to_byte_p99_ms = Some(p99);
    report.target(
        "P12 commit-to-first-byte",
        "p99 ≤ 50 ms, idle relay in another process (PostgreSQL)".into(),
        format!(
            "p99 {p99:.2} ms (p50 {:.2}, worst {:.2}; {} missing)",
            quantile(&pg.delivery.idle.ms, 0.5),
            pg.delivery.idle.ms.iter().copied().fold(f64::MIN, f64::max),
            pg.delivery.idle.missing
        ),
        p99 <= 50.0 && pg.delivery.idle.missing == 0,
    );
    report.summary.p12_relay_ratio = Some(relay_ratio);
}
