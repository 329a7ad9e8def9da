//! Replays the journal model's traces against the real stores (SQLite and
//! PostgreSQL; the journal has no memory store) and asserts that every copied
//! rule answers as the model's copy does: the write-ahead's and the enqueue's
//! insert, the claim's condition, `take_over`'s, the fence on `record`, the
//! acknowledgement's first update — and after every step, that the rows agree
//! (state, fence, runs, owner and incarnation, a live lease).
//!
//! The traces: the path to each `sometimes` discovery of the small model, and
//! seeded random walks of the bounded one. A lease ends by setting its
//! `lease_until_ms` in the past through a side connection (time passing for
//! that lease alone); a write-ahead or enqueue the model commits is run on the
//! store when it commits, the rolled-back enqueue is run and rolled back.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::conformance::payment;
use reqwest_resilience_journal::throwaway_postgres::{Durability, ThrowawayPostgres};
use reqwest_resilience_journal::{
    Journal, JournalError, JournalStore, Lease, OutboxIntent, Outcome, PostgresStore, SqliteStore,
    Worker,
};
use reqwest_resilience_model::journal::properties::SOMETIMES;
use reqwest_resilience_model::journal::state::{Client, Row, RowState, RunAt, State, Visibility};
use reqwest_resilience_model::journal::store::{self as copied, Insert};
use reqwest_resilience_model::journal::{self, action::CommitEnd, Action, Config, JournalModel};
use stateright::{Checker, Model};

const HOUR: Duration = Duration::from_secs(3600);

fn key(k: u8) -> String {
    format!("k{k}")
}

fn worker(w: u8, incarnation: u8) -> Worker {
    Worker::with_incarnation(format!("w{w}"), incarnation.to_string())
}

/// The store's side door: what the model does that is not a store call.
enum Side {
    Sqlite(PathBuf),
    Postgres(String),
}

impl Side {
    /// Ends `key`'s lease: its end set in the past.
    async fn end_lease(&self, k: &str) {
        match self {
            Self::Sqlite(path) => {
                let conn = reqwest_resilience_journal::rusqlite::Connection::open(path).unwrap();
                conn.busy_timeout(Duration::from_secs(5)).unwrap();
                conn.execute(
                    "UPDATE journal_intents SET lease_until_ms = 0 WHERE key = ?1",
                    [k],
                )
                .unwrap();
            }
            Self::Postgres(conninfo) => {
                let client = pg(conninfo).await;
                client
                    .execute(
                        "UPDATE journal_intents SET lease_until_ms = 0 WHERE key = $1",
                        &[&k],
                    )
                    .await
                    .unwrap();
            }
        }
    }

    /// The outbox enqueue in a transaction of the caller's, committed or rolled back.
    async fn enqueue(&self, intent: &OutboxIntent, commit: bool) -> Result<(), JournalError> {
        match self {
            Self::Sqlite(path) => {
                let mut conn =
                    reqwest_resilience_journal::rusqlite::Connection::open(path).unwrap();
                conn.busy_timeout(Duration::from_secs(5)).unwrap();
                let tx = conn.transaction().unwrap();
                let enqueued = intent.enqueue_rusqlite(&tx).map(|_| ());
                if commit {
                    tx.commit().unwrap();
                } else {
                    tx.rollback().unwrap();
                }
                enqueued
            }
            Self::Postgres(conninfo) => {
                let mut client = pg(conninfo).await;
                let tx = client.transaction().await.unwrap();
                let enqueued = intent.enqueue_tokio_postgres(&tx).await.map(|_| ());
                if commit {
                    tx.commit().await.unwrap();
                } else {
                    tx.rollback().await.unwrap();
                }
                enqueued
            }
        }
    }
}

async fn pg(conninfo: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// The outcome a recording state stands for.
fn outcome(to: RowState, given_back: u8) -> Outcome {
    let reason = "model".to_owned();
    match (to, given_back) {
        (RowState::Succeeded, _) => Outcome::Succeeded {
            status: 201,
            locator: None,
        },
        (RowState::Failed, _) => Outcome::Failed {
            status: Some(422),
            reason,
        },
        (RowState::Abandoned, _) => Outcome::Abandoned { reason },
        (state, 1) => Outcome::NotPerformed {
            queued: state == RowState::Queued,
            status: None,
            retry_in: Duration::ZERO,
            reason,
        },
        _ => Outcome::Unknown {
            status: None,
            retry_in: Duration::ZERO,
            reason,
        },
    }
}

struct Replay<'a, S> {
    model: &'a JournalModel,
    store: S,
    side: Side,
    outbox: &'a Journal,
    client: &'a ResilientClient,
}

impl<S: JournalStore> Replay<'_, S> {
    async fn write_ahead(&self, k: u8, owner: (u8, u8)) -> Result<Lease, JournalError> {
        self.store
            .write_ahead(&payment(&key(k)), &worker(owner.0, owner.1), HOUR)
            .await
    }

    fn outbox_intent(&self, k: u8) -> OutboxIntent {
        let intent = payment(&key(k));
        let request = self
            .client
            .post(intent.url.as_str())
            .idempotency_key(key(k))
            .body(intent.body);
        self.outbox.outbox(request).unwrap()
    }

    async fn record(&self, k: u8, w: u8, fence: u8, to: RowState, given_back: u8) -> bool {
        let lease = Lease {
            key: key(k),
            owner: format!("w{w}"),
            fence: i64::from(fence),
            until: SystemTime::now() + HOUR,
        };
        match self.store.record(&lease, &outcome(to, given_back)).await {
            Ok(()) => true,
            Err(error) if error.is_lease_lost() => false,
            Err(error) => panic!("record: {error}"),
        }
    }

    /// Runs `action`'s store call, if it has one, and asserts its answer is the model's.
    async fn step(&self, before: &State, action: Action, after: &State) {
        let config = &self.model.config;
        let at = |c: u8| config.clients[usize::from(c)];
        let row = |s: &State, k: u8| s.rows[usize::from(k)];
        match action {
            Action::WriteAhead(c) => {
                let (w, k) = at(c);
                if copied::insert(row(before, k).as_ref()) == Insert::Duplicate {
                    let written = self.write_ahead(k, (w, 9)).await;
                    assert!(matches!(written, Err(JournalError::DuplicateKey { .. })));
                }
            }
            Action::Commit(
                c,
                CommitEnd::Answered | CommitEnd::Lost(journal::state::Fate::Committed),
            ) => {
                let k = at(c).1;
                let owner = row(after, k).and_then(|r| r.owner).unwrap();
                assert_eq!(self.write_ahead(k, owner).await.unwrap().fence, 1);
            }
            Action::CommitSettles(k) => {
                let settled = row(after, k).unwrap();
                assert_eq!(
                    self.write_ahead(k, settled.owner.unwrap())
                        .await
                        .unwrap()
                        .fence,
                    1
                );
                // Its lease may have ended while the commit was still being made.
                if !settled.lease_live {
                    self.side.end_lease(&key(k)).await;
                }
            }
            Action::Enqueue(c) => {
                let k = at(c).1;
                if copied::insert(row(before, k).as_ref()) == Insert::Duplicate {
                    let enqueued = self.side.enqueue(&self.outbox_intent(k), true).await;
                    assert!(matches!(enqueued, Err(JournalError::DuplicateKey { .. })));
                }
            }
            Action::EnqueueCommit(c) | Action::EnqueueRollback(c) => {
                let commit = matches!(action, Action::EnqueueCommit(_));
                let k = at(c).1;
                self.side
                    .enqueue(&self.outbox_intent(k), commit)
                    .await
                    .unwrap();
            }
            Action::JoinLook(c) => {
                let k = at(c).1;
                let got = self.store.get(&key(k)).await.unwrap().unwrap();
                assert_eq!(RowState::of(got.state), row(before, k).unwrap().state);
            }
            Action::TakeOver(c) => {
                let (w, k) = at(c);
                let incarnation = before.workers[usize::from(w)].incarnation;
                let taken = self
                    .store
                    .take_over(&key(k), &worker(w, incarnation), HOUR)
                    .await
                    .unwrap();
                match after.clients[usize::from(c)] {
                    Client::Ready(Some(fence)) => {
                        assert_eq!(taken.map(|t| t.lease.fence), Some(i64::from(fence)))
                    }
                    _ => assert!(
                        taken.is_none(),
                        "take_over took what the model's copy did not"
                    ),
                }
            }
            Action::Claim(w) => {
                let incarnation = before.workers[usize::from(w)].incarnation;
                let claimed = self
                    .store
                    .claim(&worker(w, incarnation), HOUR, 16)
                    .await
                    .unwrap();
                let got: BTreeSet<(String, i64)> = claimed
                    .iter()
                    .map(|c| (c.record.key.clone(), c.lease.fence))
                    .collect();
                let expected: BTreeSet<(String, i64)> = after.workers[usize::from(w)]
                    .runs
                    .iter()
                    .map(|r| (key(r.key), i64::from(r.fence)))
                    .collect();
                assert_eq!(got, expected, "claim");
            }
            Action::Record(c) => {
                let (w, k) = at(c);
                let Client::Recording(fence, to, given_back) = before.clients[usize::from(c)]
                else {
                    unreachable!()
                };
                let expected = copied::records(&row(before, k).unwrap(), fence, config);
                assert_eq!(
                    self.record(k, w, fence, to, given_back).await,
                    expected,
                    "record"
                );
            }
            Action::RunRecord(w, k) => {
                let run = before.workers[usize::from(w)]
                    .runs
                    .iter()
                    .find(|r| r.key == k)
                    .unwrap();
                let RunAt::Recording(to, given_back) = run.at else {
                    unreachable!()
                };
                let expected = copied::records(&row(before, k).unwrap(), run.fence, config);
                assert_eq!(
                    self.record(k, w, run.fence, to, given_back).await,
                    expected,
                    "record"
                );
            }
            Action::LeaseEnds(k) => self.side.end_lease(&key(k)).await,
            Action::Acknowledge(_, k) => {
                let first = !row(before, k).unwrap().acked;
                assert_eq!(self.store.acknowledge(&key(k)).await.unwrap(), first);
            }
            _ => {}
        }
    }

    /// Asserts every row of the store is the model's committed row.
    async fn rows_agree(&self, s: &State, trail: &[Action]) {
        for k in 0..self.model.config.keys {
            let model: Option<Row> =
                s.rows[usize::from(k)].filter(|r| r.visibility == Visibility::Committed);
            let stored = self.store.get(&key(k)).await.unwrap();
            let Some(model) = model else {
                assert!(stored.is_none(), "a row the model has not: {trail:?}");
                continue;
            };
            let stored = stored.unwrap_or_else(|| panic!("no row for k{k}: {trail:?}"));
            let live = stored
                .lease_until
                .is_some_and(|until| until > SystemTime::now());
            let got = (
                RowState::of(stored.state),
                stored.fence,
                stored.runs,
                stored.owner.clone(),
                stored.incarnation.clone(),
            );
            let expected = (
                model.state,
                i64::from(model.fence),
                i64::from(model.runs),
                model.owner.map(|(w, _)| format!("w{w}")),
                model.owner.map(|(_, i)| i.to_string()),
            );
            assert_eq!(got.0, expected.0, "state after {trail:?}");
            assert_eq!(
                (got.1, got.2, &got.3, &got.4),
                (expected.1, expected.2, &expected.3, &expected.4),
                "fence, runs, owner after {trail:?}"
            );
            if model.state == RowState::InFlight {
                assert_eq!(live, model.lease_live, "lease after {trail:?}");
            }
        }
    }

    async fn replay(&self, trace: &[Action]) {
        let mut state = self.model.init_states().remove(0);
        for (i, &action) in trace.iter().enumerate() {
            let next = self
                .model
                .next_state(&state, action)
                .expect("the trace is the model's");
            self.step(&state, action, &next).await;
            self.rows_agree(&next, &trace[..=i]).await;
            state = next;
        }
    }
}

/// The paths to every `sometimes` discovery of the small model.
fn discoveries() -> Vec<Vec<Action>> {
    let mut config = Config::new(vec![(0, 0), (1, 0)], 2, 1);
    config.max_crashes = 1;
    config.max_expiries = 1;
    let model = JournalModel::new(config);
    let checker = model.clone().checker().spawn_dfs().join();
    SOMETIMES
        .iter()
        .map(|(name, _)| {
            checker
                .discovery(name)
                .unwrap_or_else(|| panic!("{name} not reached"))
                .into_actions()
        })
        .collect()
}

/// Seeded random walks of `model`, each to its end or `steps` actions.
fn walks(model: &JournalModel, count: usize, steps: usize, mut seed: u64) -> Vec<Vec<Action>> {
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    (0..count)
        .map(|_| {
            let mut state = model.init_states().remove(0);
            let mut trace = Vec::new();
            for _ in 0..steps {
                let mut actions = Vec::new();
                model.actions(&state, &mut actions);
                let enabled: Vec<(Action, State)> = actions
                    .into_iter()
                    .filter_map(|a| model.next_state(&state, a).map(|s| (a, s)))
                    .collect();
                if enabled.is_empty() {
                    break;
                }
                let (action, after) = enabled[next() as usize % enabled.len()].clone();
                trace.push(action);
                state = after;
            }
            trace
        })
        .collect()
}

/// The small model with its discoveries, and the bounded one with its sample:
/// made once for both stores.
type Traces = (
    JournalModel,
    Vec<Vec<Action>>,
    JournalModel,
    Vec<Vec<Action>>,
);

fn traces() -> &'static Traces {
    static TRACES: OnceLock<Traces> = OnceLock::new();
    TRACES.get_or_init(|| {
        let mut small = Config::new(vec![(0, 0), (1, 0)], 2, 1);
        small.max_crashes = 1;
        small.max_expiries = 1;
        let bounded = JournalModel::new(journal::bounded());
        let sample = walks(&bounded, 16, 80, 0x5EED_0038);
        (JournalModel::new(small), discoveries(), bounded, sample)
    })
}

async fn replay_all<S, F, Fut>(traces: &Traces, mut fresh: F)
where
    S: JournalStore + Clone,
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = (S, Side)>,
{
    let client = ResilientClient::new();
    let mut n = 0;
    for (model, list) in [(&traces.0, &traces.1), (&traces.2, &traces.3)] {
        for trace in list {
            let (store, side) = fresh(n).await;
            n += 1;
            let outbox = Journal::builder(store.clone()).build().unwrap();
            let replay = Replay {
                model,
                store,
                side,
                outbox: &outbox,
                client: &client,
            };
            replay.replay(trace).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_store_answers_as_the_model() {
    let traces = traces();
    let dir = std::env::temp_dir().join(format!("journal-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let at = dir.clone();
    replay_all(traces, move |n| {
        let path = at.join(format!("trace-{n}.sqlite"));
        async move {
            let store = SqliteStore::open(&path).unwrap();
            (store, Side::Sqlite(path))
        }
    })
    .await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_store_answers_as_the_model() {
    let cluster = match ThrowawayPostgres::start(Durability::Off) {
        Ok(Some(cluster)) => cluster,
        Ok(None) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("SKIPPED: no PostgreSQL binaries here (initdb, pg_ctl)");
            return;
        }
        other => panic!("a throwaway PostgreSQL: {:?}", other.err()),
    };
    let base = cluster.conninfo().to_owned();
    let admin = pg(&base).await;
    let traces = traces();
    replay_all(traces, |n| {
        let base = base.clone();
        let admin = &admin;
        async move {
            let schema = format!("trace_{n}");
            admin
                .batch_execute(&format!("CREATE SCHEMA {schema}"))
                .await
                .unwrap();
            let conninfo = format!("{base} options='-csearch_path={schema}'");
            let store = PostgresStore::connect(&conninfo).await.unwrap();
            (store, Side::Postgres(conninfo))
        }
    })
    .await;
}
