//! The rules the model copies (the SQL stores' atomic claim and generation fence),
//! checked against the stores themselves: the model's paths (the shortest path to
//! each `sometimes` of the layer, and a seeded sample of random walks) replayed
//! against the memory, SQLite and PostgreSQL stores, each store's answer asserted
//! equal to the model's.
//!
//! Time: the clock moves 10 s at each expiry event of a path and stands still
//! otherwise. A record the model expires at step `j` is given the clock of step `j`
//! as its end (a claim's lease, a completion's retention), so the store's next call
//! finds it ending exactly then (`expires_at == now`, the boundary that counts as
//! expired) and every earlier call finds it running; a record the model never
//! expires ends far in the future.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use reqwest_resilience_model::server::action::{Action, Step};
use reqwest_resilience_model::server::check;
use reqwest_resilience_model::server::config::{Config, Mode, KEYS, PRINCIPALS};
use reqwest_resilience_model::server::model::ServerModel;
use reqwest_resilience_model::server::properties;
use reqwest_resilience_model::server::rules;
use reqwest_resilience_model::server::state::{Phase, Record, State};
use stateright::Model;
use tower_idempotency::{
    Claim, ClaimRequest, ClaimToken, Completion, ExistingState, Fingerprint, MemoryStore,
    PostgresStore, SqliteStore, Store,
};

fn time(expiries_so_far: usize) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + 10 * expiries_so_far as u64)
}

fn never() -> SystemTime {
    time(1_000_000)
}

/// The clock at each step: moved by each expiry event, the event's own step included.
fn clock(steps: &Steps) -> Vec<SystemTime> {
    let mut expired = 0;
    steps
        .iter()
        .map(|(_, action)| {
            if let Some(Action::LeaseExpires { .. } | Action::RetentionExpires { .. }) = action {
                expired += 1;
            }
            time(expired)
        })
        .collect()
}

/// The layer at the bounds, one worker, alice, bob and alice's duplicate; generations as made
/// (not renumbered), so each token can be followed.
fn model() -> ServerModel {
    let mut config = Config::new(Mode::Layer, Config::intents(3), 1);
    config.canonical_generations = false;
    ServerModel::new(config)
}

type Steps = Vec<(State, Option<Action>)>;

/// The shortest path to each of the layer's `sometimes`, then seeded random walks
/// (with alice's duplicate, so that finished keys are met again).
fn paths(model: &ServerModel) -> Vec<Steps> {
    let mut paths = Vec::new();
    for name in [
        properties::REPLAY,
        properties::IN_PROGRESS,
        properties::MISMATCH,
        properties::RECLAIM,
        properties::CRASH,
        properties::BOUNDARY,
    ] {
        // Alice and bob: every discovery, in a quick breadth-first search.
        let mut config = model.config().clone();
        config.clients.truncate(2);
        let path = check::discover(ServerModel::new(config), name)
            .unwrap_or_else(|| panic!("`{name}` is reached"));
        paths.push(path.into_vec());
    }
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for _ in 0..40 {
        paths.push(walk(model, &mut seed, 60));
    }
    paths
}

/// A random walk of at most `depth` actions (xorshift, seeded).
fn walk(model: &ServerModel, seed: &mut u64, depth: usize) -> Steps {
    let mut state = model.init_states().remove(0);
    let mut steps = Vec::new();
    let mut actions = Vec::new();
    for _ in 0..depth {
        actions.clear();
        model.actions(&state, &mut actions);
        if actions.is_empty() {
            break;
        }
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let action = actions[(*seed % actions.len() as u64) as usize];
        let next = model
            .next_state(&state, action)
            .expect("every action steps");
        steps.push((state, Some(action)));
        state = next;
    }
    steps.push((state, None));
    steps
}

/// For each step that writes a scope's record, the step that expires that record.
fn expiries(steps: &Steps) -> HashMap<usize, usize> {
    let mut last_write: HashMap<usize, usize> = HashMap::new();
    let mut expiry = HashMap::new();
    for (i, pair) in steps.windows(2).enumerate() {
        let ((before, Some(action)), (after, _)) = (&pair[0], &pair[1]) else {
            continue;
        };
        match *action {
            Action::LeaseExpires { scope } | Action::RetentionExpires { scope } => {
                if let Some(w) = last_write.get(&usize::from(scope)) {
                    expiry.insert(*w, i);
                }
            }
            Action::Prune => {}
            _ => {
                for s in 0..before.records.len() {
                    if before.records[s] != after.records[s] {
                        last_write.insert(s, i);
                    }
                }
            }
        }
    }
    expiry
}

/// How often each outcome of a copied rule was compared.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Seen {
    taken: usize,
    retaken: usize,
    reclaimed: usize,
    in_progress: usize,
    finished: usize,
    held: usize,
    fenced: usize,
    pruned: usize,
}

/// Replays `steps` against `store`; `tag` keeps this path's keys apart from others'.
async fn replay(
    store: &dyn Store,
    steps: &Steps,
    tag: usize,
    what: &str,
    seen: &mut Seen,
) -> usize {
    let expiry = expiries(steps);
    let clock = clock(steps);
    let ends = |i: usize| expiry.get(&i).map_or(never(), |&j| clock[j]);
    let mut tokens: HashMap<u8, ClaimToken> = HashMap::new();
    let mut compared = 0;
    for (i, (state, action)) in steps.iter().enumerate() {
        let Some(action) = *action else { break };
        let here = format!("{what}, path {tag}, step {i} ({action:?})");
        let (client, run, step) = match action {
            Action::Step { client, run, step } => (client, run, step),
            Action::Prune => {
                let expected = state.records.iter().flatten().filter(|r| r.expired).count();
                let pruned = store.prune(clock[i]).await.unwrap();
                assert_eq!(pruned, expected as u64, "{here}");
                seen.pruned += expected;
                compared += 1;
                continue;
            }
            _ => continue,
        };
        let client = &state.clients[usize::from(client)];
        let run = client.runs[usize::from(run)];
        let record: Option<Record> = state.records[usize::from(client.scope)];
        let intent = client.intent;
        let key = format!("{}-{tag}", KEYS[usize::from(intent.key)]);
        let scope = rules::scope_id(PRINCIPALS[usize::from(intent.principal)], &key);
        match (step, run.phase) {
            (Step::Claim, _) => {
                let request = ClaimRequest {
                    scope,
                    fingerprint: Fingerprint::from_bytes(vec![run.payload]),
                    now: clock[i],
                    lease: ends(i).duration_since(clock[i]).unwrap(),
                };
                let claim = store.claim(&request).await.unwrap();
                match (rules::claim(record.as_ref()), claim) {
                    (
                        Some(reclaimed),
                        Claim::Acquired {
                            token,
                            reclaimed: got,
                        },
                    ) => {
                        assert_eq!(got, reclaimed, "{here}: reclaimed");
                        match (record, reclaimed) {
                            (None, _) => seen.taken += 1,
                            (Some(_), false) => seen.retaken += 1,
                            (Some(_), true) => seen.reclaimed += 1,
                        }
                        let next = &steps[i + 1].0;
                        let made = next.records[usize::from(client.scope)]
                            .expect("an acquired claim writes a record")
                            .generation;
                        tokens.insert(made, token);
                    }
                    (None, Claim::Existing(existing)) => {
                        let taken = record.expect("taken means a record");
                        assert_eq!(
                            existing.fingerprint.as_bytes(),
                            &[taken.fingerprint],
                            "{here}: fingerprint"
                        );
                        match (taken.response, existing.state) {
                            (None, ExistingState::InProgress { .. }) => seen.in_progress += 1,
                            (Some(origin), ExistingState::Completed(Completion::Stored(r))) => {
                                assert_eq!(
                                    &r.body[..],
                                    [origin.principal, origin.payload],
                                    "{here}"
                                );
                                seen.finished += 1;
                            }
                            (want, got) => {
                                panic!("{here}: the model has {want:?}, the store {got:?}")
                            }
                        }
                    }
                    (want, got) => panic!("{here}: the model says {want:?}, the store {got:?}"),
                }
            }
            (Step::Complete, Phase::Effected { generation }) => {
                let token = &tokens[&generation];
                let response = rules::stored_response(&[intent.principal, run.payload]);
                let held = store
                    .complete(token, Completion::Stored(response), ends(i))
                    .await
                    .unwrap();
                let want = rules::holds(record.as_ref(), generation);
                assert_eq!(held, want, "{here}: the fence");
                *[&mut seen.fenced, &mut seen.held][usize::from(want)] += 1;
            }
            (Step::Release, Phase::Failed { generation }) => {
                let held = store.release(&tokens[&generation]).await.unwrap();
                let want = rules::holds(record.as_ref(), generation);
                assert_eq!(held, want, "{here}: the fence");
                *[&mut seen.fenced, &mut seen.held][usize::from(want)] += 1;
            }
            _ => continue,
        }
        compared += 1;
    }
    compared
}

fn sqlite_file(tag: usize) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("model-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("path-{tag}.db"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stores_answer_as_the_model() {
    use idempotency_storage::throwaway_postgres::{Durability, ThrowawayPostgres};

    let model = model();
    let paths = paths(&model);
    let cluster = ThrowawayPostgres::start(Durability::Off)
        .expect("a throwaway PostgreSQL starts")
        .expect("PostgreSQL binaries (journal/scripts/ensure-postgres.sh)");
    let postgres = PostgresStore::connect(cluster.conninfo()).await.unwrap();
    let mut compared = [0; 3];
    let mut seen = [Seen::default(); 3];
    for (tag, steps) in paths.iter().enumerate() {
        compared[0] += replay(&MemoryStore::new(), steps, tag, "memory", &mut seen[0]).await;
        let sqlite = SqliteStore::open(sqlite_file(tag)).unwrap();
        compared[1] += replay(&sqlite, steps, tag, "sqlite", &mut seen[1]).await;
        compared[2] += replay(&postgres, steps, tag, "postgres", &mut seen[2]).await;
    }
    let _ = std::fs::remove_dir_all(sqlite_file(0).parent().unwrap());
    let _ = cluster.stop_immediate();
    // Every store answered every store operation of every path.
    assert_eq!(compared[0], compared[1]);
    assert_eq!(compared[0], compared[2]);
    assert!(
        compared[0] >= 100,
        "only {} store operations compared",
        compared[0]
    );
    // Every outcome of the copied rules was met, not only the easy ones.
    let Seen {
        taken,
        retaken,
        reclaimed,
        in_progress,
        finished,
        held,
        fenced,
        pruned,
    } = seen[0];
    for (outcome, n) in [
        ("a free key taken", taken),
        ("an expired finished key taken again", retaken),
        ("a lapsed claim reclaimed", reclaimed),
        ("a key in progress reported", in_progress),
        ("a finished key reported", finished),
        ("a holder's fence passed", held),
        ("a lapsed holder fenced out", fenced),
        ("expired records pruned", pruned),
    ] {
        assert!(n > 0, "no path compared {outcome}: {:?}", seen[0]);
    }
    println!(
        "{} paths, {} store operations compared per store: {:?}",
        paths.len(),
        compared[0],
        seen[0]
    );
}
