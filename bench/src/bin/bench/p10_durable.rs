//! P10 — durable throughput: intents per second sent with `.durable(&journal)`
//! from 32 concurrent tasks against the loopback server, on SQLite and on
//! PostgreSQL, divided by the same database's raw rate on the same terms: the
//! same connections as the store (SQLite: one connection behind a mutex, a
//! statement per blocking task; PostgreSQL: as many connections as tasks, the
//! store's pool at that size), the store's own statements with its bound
//! parameters and session settings, the same two writes per row (PostgreSQL: the
//! write-ahead as its own transaction — `BEGIN` and the `INSERT` pipelined, then
//! `COMMIT` — and the terminal `UPDATE`; SQLite: two autocommit statements), into
//! the same table (so both sides see a table of the same size), with the same
//! warm-up (both sides, interleaved, before any round), the store's durability
//! settings (SQLite WAL + `synchronous = FULL`; PostgreSQL's defaults, fsync on),
//! the same disk. Rounds run in both orders (raw first, durable first, durable
//! first, raw first, …); each round's ratio is reported, with the disk's fsync
//! rate beside them. Beside the raw side, the plainest two writes by key: a
//! table of a key and a state, `INSERT` then `UPDATE … WHERE key = …`, each
//! autocommit, on connections of its own (the durable path's floor on that
//! database, whatever the journal's schema). Plus the write-ahead's added
//! latency per intent: sequential durable sends against plain ones, interleaved.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest_resilience::{ResilientClient, RetryPolicy};
use reqwest_resilience_bench::markdown::table;
use reqwest_resilience_bench::peers::bare_reqwest_builder;
use reqwest_resilience_bench::server::Server;
use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};
use reqwest_resilience_journal::{DurableExt, Journal, PostgresStore, SqliteStore};

use crate::plan::Plan;
use crate::report::Report;
use crate::stats::{median, quantile};

const P10_TASKS: usize = 32;
const BODY: &[u8] = br#"{"amount":500,"currency":"EUR","order":"p10","customer":"c-1842"}"#;
const HEADERS: &[u8] = b"content-type: application/json\r\n";

/// One backend's figures.
struct Figures {
    /// `fdatasync` calls per second on the benchmark's disk (4 KiB each).
    fsync_per_s: f64,
    raw: Vec<f64>,
    durable: Vec<f64>,
    ratios: Vec<f64>,
    /// The plainest two writes by key, rows/s, and durable ÷ that per round.
    plain: Vec<f64>,
    plain_ratios: Vec<f64>,
    added_p50_us: f64,
    added_p99_us: f64,
}

/// Runs P10 and adds its section (and its targets) to `report`.
pub async fn run(server: &Server, plan: &Plan, report: &mut Report) {
    let url: Arc<str> = server.url("/ok").into();
    let client = ResilientClient::from_builder(bare_reqwest_builder(), RetryPolicy::default())
        .expect("client");
    let dir = std::env::temp_dir().join(format!("p10-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("P10 directory");

    let sqlite = {
        let path = dir.join("store.sqlite");
        let store = SqliteStore::open(&path).expect("SQLite journal");
        let raw = RawSqlite::open(&path);
        let plain = PlainSqlite::open(&dir.join("plain.sqlite"));
        let journal = Journal::builder(store)
            .worker_name("p10")
            .build()
            .expect("journal");
        measure(&client, &url, &journal, (&raw, &plain), plan, &dir).await
    };
    // The store's pool, the raw side and the plain side hold 32 connections each.
    let postgres =
        match ThrowawayPostgres::start_with(Durability::Defaults, &["max_connections=120"]) {
            Ok(Some(cluster)) => {
                let store = PostgresStore::builder(cluster.conninfo())
                    .pool_size(P10_TASKS)
                    .connect()
                    .await
                    .expect("PostgreSQL journal");
                let raw = RawPostgres::connect(cluster.conninfo(), P10_TASKS).await;
                let plain = PlainPostgres::connect(cluster.conninfo(), P10_TASKS).await;
                let journal = Journal::builder(store)
                    .worker_name("p10")
                    .build()
                    .expect("journal");
                Some(measure(&client, &url, &journal, (&raw, &plain), plan, &dir).await)
            }
            Ok(None) => None,
            Err(error) => panic!("P10: starting a throwaway PostgreSQL failed: {error}"),
        };
    let _ = std::fs::remove_dir_all(&dir);

    let mut rows = vec![row("SQLite (bundled, WAL, synchronous=FULL)", &sqlite)];
    if let Some(figures) = &postgres {
        rows.push(row("PostgreSQL (throwaway cluster, fsync on)", figures));
    }
    let mut text = format!(
        "\n## P10 — durable throughput: {P10_TASKS} concurrent tasks, POST 200 OK\n\n\
         {} rounds of {:.0?} per database and mode, in both orders (raw then durable, \
         durable then raw, durable then raw, raw then durable, …), after a warm-up of \
         both sides. *Raw*: rows/s, each row the store's two writes — PostgreSQL: the \
         write-ahead `INSERT` in its own transaction (`BEGIN` pipelined with it, then \
         `COMMIT`) and the terminal `UPDATE`, the store's own prepared statements and \
         bound parameters, one connection per task ({P10_TASKS}, as the store's pool); \
         SQLite: the two statements autocommit through one connection behind a mutex, \
         as the store — into the store's own table, no HTTP. *Durable*: intents/s sent \
         with `.durable(&journal)` (write-ahead, the POST, the result) through \
         reqwest-resilience's defaults. Ratio = median over rounds of (durable ÷ raw in \
         the same round), with p25–p75 and every round's ratio. *Plain*: rows/s of \
         the plainest two writes by key — a table `(key TEXT PRIMARY KEY, state TEXT, \
         status INTEGER)`, `INSERT` then `UPDATE … SET state, status WHERE key = …`, \
         each autocommit, bound parameters, the same connections setup (PostgreSQL: \
         {P10_TASKS} of its own) — run in the same rounds (the three sides in a \
         rotated order); *÷ plain* is durable ÷ plain per round, median and worst. \
         fsync/s: 4 KiB \
         `fdatasync` calls per second on the benchmark's disk, measured before the \
         rounds. Added latency: {} sequential durable sends interleaved with as many \
         plain ones; the difference of their quantiles.\n\n",
        plan.p10_rounds, plan.p10_round, plan.p10_latency_pairs
    );
    text.push_str(&table(
        &[
            " database",
            "raw rows/s",
            "durable intents/s",
            "ratio",
            "ratio p25–p75",
            "ratio per round",
            "plain rows/s",
            "÷ plain (median)",
            "÷ plain, worst round",
            "÷ plain per round",
            "disk fsync/s",
            "added latency p50 µs",
            "added latency p99 µs",
        ],
        &rows,
    ));
    if postgres.is_none() {
        text.push_str(
            "\nPostgreSQL: **skipped** — no PostgreSQL binaries (initdb, pg_ctl) on this \
             machine; `journal/scripts/ensure-postgres.sh` installs them.\n",
        );
        println!("P10 PostgreSQL skipped: no PostgreSQL binaries found");
    }
    report.section(&text);

    let sqlite_ratio = median(&sqlite.ratios);
    report.summary.p10_sqlite = Some(sqlite_ratio);
    let sqlite_plain = median(&sqlite.plain_ratios);
    report.summary.p10_sqlite_plain = Some(sqlite_plain);
    report.target(
        "P10 SQLite ÷ plain",
        "≥ 0.9× the plainest INSERT + UPDATE by key".into(),
        format!(
            "{sqlite_plain:.3}× (worst round {:.3}×)",
            worst(&sqlite.plain_ratios)
        ),
        sqlite_plain >= 0.9,
    );
    report.target(
        "P10 SQLite",
        "≥ 0.5× raw (intents/s)".into(),
        format!("{sqlite_ratio:.3}×"),
        sqlite_ratio >= 0.5,
    );
    if let Some(figures) = &postgres {
        let ratio = median(&figures.ratios);
        report.summary.p10_postgres = Some(ratio);
        let plain = median(&figures.plain_ratios);
        report.summary.p10_postgres_plain = Some(plain);
        report.target(
            "P10 PostgreSQL ÷ plain",
            format!("≥ 0.7× the plainest INSERT + UPDATE by key, {P10_TASKS} connections"),
            format!(
                "{plain:.3}× (worst round {:.3}×)",
                worst(&figures.plain_ratios)
            ),
            plain >= 0.7,
        );
        report.target(
            "P10 PostgreSQL",
            "≥ 0.5× raw (intents/s)".into(),
            format!("{ratio:.3}×"),
            ratio >= 0.5,
        );
    }
}

/// The lowest ratio: the worst round.
fn worst(ratios: &[f64]) -> f64 {
    ratios.iter().copied().fold(f64::INFINITY, f64::min)
}

fn row(name: &str, f: &Figures) -> Vec<String> {
    vec![
        name.to_owned(),
        format!("{:.0}", median(&f.raw)),
        format!("{:.0}", median(&f.durable)),
        format!("{:.3}×", median(&f.ratios)),
        format!(
            "{:.3}–{:.3}",
            quantile(&f.ratios, 0.25),
            quantile(&f.ratios, 0.75)
        ),
        f.ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" "),
        format!("{:.0}", median(&f.plain)),
        format!("{:.3}×", median(&f.plain_ratios)),
        format!("{:.3}×", worst(&f.plain_ratios)),
        f.plain_ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" "),
        format!("{:.0}", f.fsync_per_s),
        format!("{:.0}", f.added_p50_us),
        format!("{:.0}", f.added_p99_us),
    ]
}

async fn measure(
    client: &ResilientClient,
    url: &Arc<str>,
    journal: &Journal,
    (raw, plain): (&impl RawRows, &impl RawRows),
    plan: &Plan,
    dir: &std::path::Path,
) -> Figures {
    // Warm-up of every side, interleaved: connections, prepared statements and
    // their plans, the table's first pages.
    for _ in 0..2 {
        raw_rate(raw, plan.p10_round / 8).await;
        durable_rate(client, url, journal, plan.p10_round / 8).await;
        raw_rate(plain, plan.p10_round / 8).await;
    }
    let mut figures = Figures {
        fsync_per_s: fsync_rate(dir, Duration::from_secs(1)),
        raw: Vec::new(),
        durable: Vec::new(),
        ratios: Vec::new(),
        plain: Vec::new(),
        plain_ratios: Vec::new(),
        added_p50_us: f64::NAN,
        added_p99_us: f64::NAN,
    };
    for round in 0..plan.p10_rounds {
        // The plain side before, between or after the other two, in turn.
        let plain_at = round % 3;
        let mut plain_rate = f64::NAN;
        if plain_at == 0 {
            plain_rate = raw_rate(plain, plan.p10_round).await;
        }
        let (raw_rate_now, durable_rate) = if raw_goes_first(round) {
            let first = raw_rate(raw, plan.p10_round).await;
            if plain_at == 1 {
                plain_rate = raw_rate(plain, plan.p10_round).await;
            }
            (
                first,
                durable_rate(client, url, journal, plan.p10_round).await,
            )
        } else {
            let durable_rate = durable_rate(client, url, journal, plan.p10_round).await;
            if plain_at == 1 {
                plain_rate = raw_rate(plain, plan.p10_round).await;
            }
            (raw_rate(raw, plan.p10_round).await, durable_rate)
        };
        if plain_at == 2 {
            plain_rate = raw_rate(plain, plan.p10_round).await;
        }
        figures.raw.push(raw_rate_now);
        figures.durable.push(durable_rate);
        figures.ratios.push(durable_rate / raw_rate_now);
        figures.plain.push(plain_rate);
        figures.plain_ratios.push(durable_rate / plain_rate);
    }
    let (plain, durable) = latencies(client, url, journal, plan.p10_latency_pairs).await;
    figures.added_p50_us = (quantile(&durable, 0.5) - quantile(&plain, 0.5)) * 1e6;
    figures.added_p99_us = (quantile(&durable, 0.99) - quantile(&plain, 0.99)) * 1e6;
    figures
}

/// Rounds in both orders, each order as often as the other and never twice in
/// the same position: raw first, durable first, durable first, raw first, …
fn raw_goes_first(round: usize) -> bool {
    matches!(round % 4, 0 | 3)
}

/// 4 KiB `fdatasync` calls per second in `dir`, for `length`.
fn fsync_rate(dir: &std::path::Path, length: Duration) -> f64 {
    use std::io::Write;
    let path = dir.join("fsync-probe");
    let mut file = std::fs::File::create(&path).expect("fsync probe");
    let block = [0u8; 4096];
    let started = Instant::now();
    let mut syncs = 0u32;
    while started.elapsed() < length {
        file.write_all(&block).expect("fsync probe write");
        file.sync_data().expect("fsync probe sync");
        syncs += 1;
    }
    let rate = f64::from(syncs) / started.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(path);
    rate
}

/// Durable intents per second from [`P10_TASKS`] tasks for `length`.
async fn durable_rate(
    client: &ResilientClient,
    url: &Arc<str>,
    journal: &Journal,
    length: Duration,
) -> f64 {
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let stop_at = started + length;
    let mut tasks = Vec::with_capacity(P10_TASKS);
    for _ in 0..P10_TASKS {
        let (client, url, journal, done) =
            (client.clone(), url.clone(), journal.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < stop_at {
                let response = client
                    .post(&*url)
                    .body(BODY)
                    .durable(&journal)
                    .send()
                    .await
                    .unwrap_or_else(|error| panic!("durable send: {error}"));
                assert!(response.status().is_success(), "{}", response.status());
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await.expect("durable task");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// Raw rows per second (INSERT then UPDATE each) from [`P10_TASKS`] tasks.
async fn raw_rate(raw: &impl RawRows, length: Duration) -> f64 {
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let stop_at = started + length;
    let mut tasks = Vec::with_capacity(P10_TASKS);
    for slot in 0..P10_TASKS {
        let (raw, done) = (raw.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < stop_at {
                let key = uuid::Uuid::new_v4().to_string();
                raw.insert(slot, key.clone()).await;
                raw.update(slot, key).await;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await.expect("raw task");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// Seconds per intent, plain and durable, sent one at a time, interleaved.
async fn latencies(
    client: &ResilientClient,
    url: &Arc<str>,
    journal: &Journal,
    pairs: usize,
) -> (Vec<f64>, Vec<f64>) {
    let (mut plain, mut durable) = (Vec::with_capacity(pairs), Vec::with_capacity(pairs));
    for _ in 0..pairs {
        let started = Instant::now();
        let response = client
            .post(&**url)
            .body(BODY)
            .send()
            .await
            .expect("plain send");
        assert!(response.status().is_success());
        plain.push(started.elapsed().as_secs_f64());
        let started = Instant::now();
        let response = client
            .post(&**url)
            .body(BODY)
            .durable(journal)
            .send()
            .await
            .expect("durable send");
        assert!(response.status().is_success());
        durable.push(started.elapsed().as_secs_f64());
    }
    (plain, durable)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A database driven directly: the write-ahead's INSERT and the result's UPDATE,
/// by task `slot` (a PostgreSQL task uses its own connection).
trait RawRows: Clone + Send + Sync + 'static {
    fn insert(&self, slot: usize, key: String) -> impl std::future::Future<Output = ()> + Send;
    fn update(&self, slot: usize, key: String) -> impl std::future::Future<Output = ()> + Send;
}

/// One SQLite connection behind a mutex, one blocking task per statement — as
/// `SqliteStore` does — on the store's own file.
#[derive(Clone)]
struct RawSqlite {
    conn: Arc<Mutex<rusqlite::Connection>>,
}

impl RawSqlite {
    fn open(path: &std::path::Path) -> RawSqlite {
        drop(SqliteStore::open(path).expect("the journal's schema"));
        let conn = rusqlite::Connection::open(path).expect("raw SQLite");
        conn.busy_timeout(Duration::from_secs(5))
            .expect("busy timeout");
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .expect("WAL");
        conn.pragma_update(None, "synchronous", "FULL")
            .expect("FULL");
        RawSqlite {
            conn: Arc::new(Mutex::new(conn)),
        }
    }

    async fn run(
        &self,
        work: impl FnOnce(&rusqlite::Connection, i64) -> rusqlite::Result<usize> + Send + 'static,
    ) {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let conn = conn.lock().expect("raw SQLite lock");
            work(&conn, now_ms()).expect("raw SQLite statement");
        })
        .await
        .expect("blocking task");
    }
}

impl RawRows for RawSqlite {
    async fn insert(&self, _slot: usize, key: String) {
        self.run(move |conn, now| {
            conn.prepare_cached(
                "INSERT INTO journal_intents (key, key_on_wire, method, url, headers, body,
                     deadline_ms, retention_end_ms, state, owner, incarnation, lease_until_ms,
                     fence, runs, created_ms, updated_ms)
                 VALUES (?1, 1, 'POST', 'http://127.0.0.1/ok', ?2, ?3, 30000, ?4, 'in_flight',
                     'raw', 'raw', ?5, 1, 1, ?6, ?6)",
            )?
            .execute(rusqlite::params![
                key,
                HEADERS,
                BODY,
                now + 23 * 3_600_000,
                now + 60_000,
                now
            ])
        })
        .await;
    }

    async fn update(&self, _slot: usize, key: String) {
        self.run(move |conn, now| {
            conn.prepare_cached(
                "UPDATE journal_intents
                 SET state = 'succeeded', status = 200, locator = NULL, detail = NULL,
                     due_at_ms = NULL, lease_until_ms = NULL, updated_ms = ?1
                 WHERE key = ?2 AND fence = 1 AND state = 'in_flight'",
            )?
            .execute(rusqlite::params![now, key])
        })
        .await;
    }
}

/// As many PostgreSQL connections as tasks — as `PostgresStore`'s pool at that
/// size — each with the store's own write-ahead and record statements
/// (`journal/src/postgres/queries.rs`) prepared, run with the same bound
/// parameters: the write-ahead in its own transaction (`BEGIN` pipelined with
/// the `INSERT`, then `COMMIT`), the record autocommit. State names are
/// parameters, as in the store: a literal `state = 'in_flight'` would let the
/// planner match the partial and listing indexes, and the raw side would run a
/// different plan than the store.
#[derive(Clone)]
struct RawPostgres {
    connections: Arc<Vec<RawConnection>>,
}

struct RawConnection {
    client: tokio_postgres::Client,
    write_ahead: tokio_postgres::Statement,
    record: tokio_postgres::Statement,
}

/// The store's `WRITE_AHEAD` (`$1` key … `$12` in_flight).
const PG_WRITE_AHEAD: &str = "INSERT INTO journal_intents (key, key_on_wire, method, url, headers,
        body, deadline_ms, retention_end_ms, state, owner, incarnation, lease_until_ms, fence,
        runs, created_ms, updated_ms)
     SELECT $1, $2, $3, $4, $5, $6, $7, c.ms + $8, $12, $9, $10, c.ms + $11, 1, 1, c.ms, c.ms
     FROM (SELECT (extract(epoch FROM now()) * 1000)::bigint AS ms) c
     ON CONFLICT (key) DO NOTHING
     RETURNING lease_until_ms, pg_current_xact_id()::text AS xid";

/// The store's `RECORD`, as the raw sides of P10 and P12 run it: `$1` state,
/// `$2` status, `$3` locator, `$4` detail, `$5` due in ms, `$6` key, `$7` fence,
/// `$8` in_flight, `$9` runs given back.
pub(crate) const PG_RECORD: &str = "UPDATE journal_intents
     SET state = $1, status = COALESCE($2, status), locator = $3, detail = $4,
         runs = runs - $9,
         due_at_ms = (extract(epoch FROM now()) * 1000)::bigint + $5, lease_until_ms = NULL,
         updated_ms = (extract(epoch FROM now()) * 1000)::bigint
     WHERE key = $6 AND fence = $7 AND (state = $8) IS TRUE";

impl RawPostgres {
    async fn connect(conninfo: &str, connections: usize) -> RawPostgres {
        let mut made = Vec::with_capacity(connections);
        for _ in 0..connections {
            let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
                .await
                .expect("raw PostgreSQL");
            tokio::spawn(connection);
            // The store's session setting (its default statement timeout, 5 s).
            client
                .batch_execute("SET statement_timeout = 5000")
                .await
                .expect("statement timeout");
            let write_ahead = client
                .prepare(PG_WRITE_AHEAD)
                .await
                .expect("prepare INSERT");
            let record = client.prepare(PG_RECORD).await.expect("prepare UPDATE");
            made.push(RawConnection {
                client,
                write_ahead,
                record,
            });
        }
        RawPostgres {
            connections: Arc::new(made),
        }
    }
}

impl RawRows for RawPostgres {
    async fn insert(&self, slot: usize, key: String) {
        let conn = &self.connections[slot % self.connections.len()];
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 12] = [
            &key,
            &true,
            &"POST",
            &"http://127.0.0.1/ok",
            &HEADERS,
            &BODY,
            &Some(30_000_i64),
            &82_800_000_i64,
            &"raw",
            &"raw",
            &60_000_i64,
            &"in_flight",
        ];
        let begin = conn.client.batch_execute("BEGIN");
        let insert = conn.client.query(&conn.write_ahead, &params);
        let ((), rows) = tokio::try_join!(begin, insert).expect("raw BEGIN and INSERT");
        assert_eq!(rows.len(), 1, "raw INSERT: key already present");
        conn.client
            .batch_execute("COMMIT")
            .await
            .expect("raw COMMIT");
    }

    async fn update(&self, slot: usize, key: String) {
        let conn = &self.connections[slot % self.connections.len()];
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
                    &1_i64,
                    &"in_flight",
                    &0_i64, // runs given back: none for a success
                ],
            )
            .await
            .expect("raw UPDATE");
        assert_eq!(updated, 1, "raw UPDATE: row not updated");
    }
}

/// The plainest two writes by key: its own table of a key and a state.
const PLAIN_TABLE: &str =
    "CREATE TABLE p10_plain (key TEXT PRIMARY KEY, state TEXT NOT NULL, status INTEGER)";

/// The plain side on SQLite: a file of its own with the store's settings (WAL,
/// `synchronous = FULL`), one connection behind a mutex, one blocking task per
/// statement — as the raw side.
#[derive(Clone)]
struct PlainSqlite {
    conn: Arc<Mutex<rusqlite::Connection>>,
}

impl PlainSqlite {
    fn open(path: &std::path::Path) -> PlainSqlite {
        let conn = rusqlite::Connection::open(path).expect("plain SQLite");
        conn.busy_timeout(Duration::from_secs(5))
            .expect("busy timeout");
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .expect("WAL");
        conn.pragma_update(None, "synchronous", "FULL")
            .expect("FULL");
        conn.execute_batch(PLAIN_TABLE).expect("plain table");
        PlainSqlite {
            conn: Arc::new(Mutex::new(conn)),
        }
    }

    async fn run(&self, sql: &'static str, key: String) {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let conn = conn.lock().expect("plain SQLite lock");
            let changed = conn
                .prepare_cached(sql)
                .and_then(|mut statement| statement.execute([key]))
                .expect("plain SQLite statement");
            assert_eq!(changed, 1, "plain SQLite: {sql}");
        })
        .await
        .expect("blocking task");
    }
}

impl RawRows for PlainSqlite {
    async fn insert(&self, _slot: usize, key: String) {
        self.run(
            "INSERT INTO p10_plain (key, state) VALUES (?1, 'in_flight')",
            key,
        )
        .await;
    }

    async fn update(&self, _slot: usize, key: String) {
        self.run(
            "UPDATE p10_plain SET state = 'succeeded', status = 200 WHERE key = ?1",
            key,
        )
        .await;
    }
}

/// The plain side on PostgreSQL: as many connections of its own as tasks, each
/// statement prepared once and autocommit.
#[derive(Clone)]
struct PlainPostgres {
    connections: Arc<Vec<(tokio_postgres::Client, [tokio_postgres::Statement; 2])>>,
}

impl PlainPostgres {
    async fn connect(conninfo: &str, connections: usize) -> PlainPostgres {
        let mut made = Vec::with_capacity(connections);
        for index in 0..connections {
            let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
                .await
                .expect("plain PostgreSQL");
            tokio::spawn(connection);
            if index == 0 {
                client
                    .batch_execute(PLAIN_TABLE)
                    .await
                    .expect("plain table");
            }
            let insert = client
                .prepare("INSERT INTO p10_plain (key, state) VALUES ($1, 'in_flight')")
                .await
                .expect("prepare plain INSERT");
            let update = client
                .prepare("UPDATE p10_plain SET state = 'succeeded', status = 200 WHERE key = $1")
                .await
                .expect("prepare plain UPDATE");
            made.push((client, [insert, update]));
        }
        PlainPostgres {
            connections: Arc::new(made),
        }
    }

    async fn run(&self, slot: usize, which: usize, key: String) {
        let (client, statements) = &self.connections[slot % self.connections.len()];
        let changed = client
            .execute(&statements[which], &[&key])
            .await
            .expect("plain PostgreSQL statement");
        assert_eq!(changed, 1, "plain PostgreSQL: no row changed");
    }
}

impl RawRows for PlainPostgres {
    async fn insert(&self, slot: usize, key: String) {
        self.run(slot, 0, key).await;
    }

    async fn update(&self, slot: usize, key: String) {
        self.run(slot, 1, key).await;
    }
}
