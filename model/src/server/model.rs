//! The model: which actions each state allows, and what each does.

use stateright::{Model, Property};

use super::action::{Action, Step};
use super::config::{Config, Db, Mode, KEYS, PRINCIPALS};
use super::properties;
use super::rules;
use super::state::{Client, Ledger, Origin, Phase, Received, Record, Reply, Run, State};

/// The claim protocol of tower-idempotency in one configuration.
#[derive(Debug, Clone)]
pub struct ServerModel {
    config: Config,
    /// Each client's scope, numbered from the crate's `ScopeId`s.
    scopes: Vec<u8>,
    scope_count: usize,
}

impl ServerModel {
    /// The model of `config`; the clients' scopes come from the crate's `ScopeId`.
    pub fn new(config: Config) -> Self {
        let mut ids = Vec::new();
        let scopes = config
            .clients
            .iter()
            .map(|intent| {
                let id = rules::scope_id(
                    PRINCIPALS[usize::from(intent.principal)],
                    KEYS[usize::from(intent.key)],
                );
                let index = ids
                    .iter()
                    .position(|known| *known == id)
                    .unwrap_or_else(|| {
                        ids.push(id);
                        ids.len() - 1
                    });
                index as u8
            })
            .collect();
        Self {
            config,
            scopes,
            scope_count: ids.len(),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    fn layer(&self) -> bool {
        self.config.mode == Mode::Layer
    }

    /// Whether a strong-mode claim of `scope` must wait: PostgreSQL waits for another
    /// transaction's row lock on the key, SQLite for its one writer.
    fn blocked(&self, state: &State, scope: u8) -> bool {
        state.clients.iter().any(|c| {
            c.runs.iter().any(|r| {
                r.phase.in_tx()
                    && match self.config.mode {
                        Mode::Strong(Db::Sqlite) => true,
                        _ => c.scope == scope,
                    }
            })
        })
    }

    fn steps(&self, state: &State, client: &Client, run: &Run, out: &mut Vec<Step>) {
        match (self.config.mode, run.phase) {
            (Mode::Layer, Phase::Admitted) => out.push(Step::Claim),
            (Mode::Layer, Phase::Claimed { .. }) => out.push(Step::StartHandler),
            (Mode::Layer, Phase::Running { .. }) => out.extend([Step::Effect, Step::FailHandler]),
            (Mode::Layer, Phase::Effected { .. }) => out.push(Step::Complete),
            (Mode::Layer, Phase::Failed { .. }) => out.push(Step::Release),
            (Mode::Strong(Db::Sqlite), Phase::Admitted) => out.push(Step::ReadCommitted),
            (Mode::Strong(Db::Postgres), Phase::Admitted) | (_, Phase::ToWriter) => {
                match self.blocked(state, client.scope) {
                    true => out.push(Step::LockTimeout),
                    false => out.push(Step::ClaimInTx),
                }
            }
            (_, Phase::InTx) => out.extend([Step::EffectInTx, Step::RollBack]),
            (_, Phase::TxEffected) => out.push(Step::Commit),
            (_, Phase::Replying(_)) => out.push(Step::Reply),
            (mode, phase) => unreachable!("{phase:?} in {mode:?}"),
        }
    }

    /// Takes `step` for the request `run` of client `c`.
    fn step(&self, state: &mut State, c: usize, run: usize, step: Step) {
        let client = &state.clients[c];
        let (scope, principal) = (usize::from(client.scope), client.intent.principal);
        let Run { phase, payload, .. } = client.runs[run];
        let origin = Origin { principal, payload };
        let record = state.records[scope];
        let next = match (step, phase) {
            (Step::Claim, _) => match rules::claim(record.as_ref()) {
                Some(reclaimed) => {
                    let generation = state.fresh_generation();
                    state.records[scope] = Some(Record {
                        fingerprint: payload,
                        generation,
                        response: None,
                        expired: false,
                    });
                    Ok(Phase::Claimed {
                        generation,
                        reclaimed,
                    })
                }
                None => Err(rules::answer(&taken(record), payload)),
            },
            (Step::StartHandler, Phase::Claimed { generation, .. }) => {
                Ok(Phase::Running { generation })
            }
            (Step::Effect, Phase::Running { generation }) => {
                state.ledgers[scope].effects += 1;
                Ok(Phase::Effected { generation })
            }
            (Step::FailHandler, Phase::Running { generation }) => Ok(Phase::Failed { generation }),
            (Step::Complete, Phase::Effected { generation }) => {
                if rules::holds(record.as_ref(), generation) {
                    state.records[scope] = Some(Record {
                        response: Some(origin),
                        expired: false,
                        ..taken(record)
                    });
                }
                // The handler's own caller gets its response whatever the store said.
                Err(Reply::Executed(origin))
            }
            (Step::Release, Phase::Failed { generation }) => {
                if rules::holds(record.as_ref(), generation) {
                    state.records[scope] = None;
                }
                Err(Reply::HandlerFailed)
            }
            // The reader's filter (`expires_at > now`), copied from its SQL.
            (Step::ReadCommitted, _) => match record.filter(|r| !r.expired) {
                Some(live) => Err(rules::answer(&live, payload)),
                None => Ok(Phase::ToWriter),
            },
            (Step::ClaimInTx, _) => match rules::claim(record.as_ref()) {
                // The row is written but not committed: nobody else reads it.
                Some(_) => Ok(Phase::InTx),
                None => Err(rules::answer(&taken(record), payload)),
            },
            (Step::LockTimeout, _) => match self.config.mode {
                Mode::Strong(Db::Postgres) => Err(rules::answer_uncommitted(payload)),
                _ => Err(Reply::Unavailable),
            },
            (Step::EffectInTx, Phase::InTx) => Ok(Phase::TxEffected),
            (Step::RollBack, Phase::InTx) => Err(Reply::RolledBack),
            (Step::Reply, Phase::Replying(reply)) => {
                let client = &mut state.clients[c];
                client.runs.remove(run);
                client.last = Some(Received { payload, reply });
                return;
            }
            (Step::Commit, Phase::TxEffected) => {
                // `complete_in` on the transaction's own row: its fence always holds.
                state.records[scope] = Some(Record {
                    fingerprint: payload,
                    generation: 0,
                    response: Some(origin),
                    expired: false,
                });
                state.ledgers[scope].effects += 1;
                Err(Reply::Executed(origin))
            }
            (step, phase) => unreachable!("{step:?} at {phase:?}"),
        };
        let client = &mut state.clients[c];
        match next {
            Ok(phase) => client.runs[run].phase = phase,
            // PostgreSQL's committed answer may be overtaken by the client's timeout:
            // the one answer whose loss is not the same as a timeout just before (that
            // would roll the transaction back). Every other answer reaches a live
            // client at once: a timeout just before it leaves the same store.
            Err(reply @ Reply::Executed(_))
                if client.runs[run].live && self.config.mode == Mode::Strong(Db::Postgres) =>
            {
                client.runs[run].phase = Phase::Replying(reply)
            }
            Err(reply) => {
                if client.runs.remove(run).live {
                    client.last = Some(Received { payload, reply });
                }
            }
        }
    }

    fn crash(&self, state: &mut State, worker: u8) {
        state.crashes += 1;
        for client in &mut state.clients {
            let ledger = &mut state.ledgers[usize::from(client.scope)];
            let mut lost = None;
            client.runs.retain(|run| {
                if run.worker != worker {
                    return true;
                }
                ledger.crashed_mid_handler |= run.phase.mid_handler();
                ledger.crashed_after_effect |= run.phase.after_effect();
                if run.live {
                    lost = Some(run.payload);
                }
                false
            });
            if let Some(payload) = lost {
                client.last = Some(Received {
                    payload,
                    reply: Reply::ConnectionLost,
                });
            }
        }
    }

    fn timeout(&self, state: &mut State, c: usize) {
        let mode = self.config.mode;
        let runs = &mut state.clients[c].runs;
        runs.retain_mut(|run| {
            if !run.live {
                return true;
            }
            run.live = false;
            // What survives the dropped future: the layer spawned it; SQLite's writer
            // finishes a transaction it started; PostgreSQL rolls back. An answer on its
            // way is lost.
            if matches!(run.phase, Phase::Replying(_)) {
                return false;
            }
            match mode {
                Mode::Layer => true,
                Mode::Strong(Db::Sqlite) => run.phase.in_tx(),
                Mode::Strong(Db::Postgres) => false,
            }
        });
    }
}

/// The record a claim found taken (the claim rule says `Taken` only for a record).
fn taken(record: Option<Record>) -> Record {
    record.expect("the claim rule finds a key taken only when it has a record")
}

impl Model for ServerModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let clients = self
            .config
            .clients
            .iter()
            .zip(&self.scopes)
            .map(|(intent, scope)| Client {
                intent: *intent,
                scope: *scope,
                sent: 0,
                last: None,
                runs: Vec::new(),
            })
            .collect();
        vec![State {
            clients,
            records: vec![None; self.scope_count],
            ledgers: vec![Ledger::default(); self.scope_count],
            crashes: 0,
            lease_expiries: 0,
            retention_expiries: 0,
            reused: false,
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        let config = &self.config;
        let mut steps = Vec::new();
        for (c, client) in state.clients.iter().enumerate() {
            let c = c as u8;
            if client.awaiting() {
                actions.push(Action::Timeout { client: c });
            } else if !client.done() && client.sent < config.max_attempts {
                for worker in 0..config.workers {
                    actions.push(Action::Send {
                        client: c,
                        worker,
                        reuse: false,
                    });
                    if config.key_reuse && !state.reused && client.sent > 0 {
                        actions.push(Action::Send {
                            client: c,
                            worker,
                            reuse: true,
                        });
                    }
                }
            }
            for (r, run) in client.runs.iter().enumerate() {
                steps.clear();
                self.steps(state, client, run, &mut steps);
                for &step in &steps {
                    actions.push(Action::Step {
                        client: c,
                        run: r as u8,
                        step,
                    });
                }
            }
        }
        for (s, record) in state.records.iter().enumerate() {
            let Some(record) = record.filter(|r| !r.expired) else {
                continue;
            };
            let scope = s as u8;
            match record.response {
                None if self.layer() && state.lease_expiries < config.max_lease_expiries => {
                    actions.push(Action::LeaseExpires { scope })
                }
                Some(_) if state.retention_expiries < config.max_retention_expiries => {
                    actions.push(Action::RetentionExpires { scope })
                }
                _ => {}
            }
        }
        if self.layer() && state.records.iter().flatten().any(|r| r.expired) {
            actions.push(Action::Prune);
        }
        if state.crashes < config.max_crashes {
            for worker in 0..config.workers {
                let busy = state
                    .clients
                    .iter()
                    .any(|c| c.runs.iter().any(|r| r.worker == worker));
                if busy {
                    actions.push(Action::Crash { worker });
                }
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        match action {
            Action::Send {
                client,
                worker,
                reuse,
            } => {
                state.reused |= reuse;
                let client = &mut state.clients[usize::from(client)];
                client.sent += 1;
                client.runs.push(Run {
                    worker,
                    live: true,
                    // The other payload of the two.
                    payload: client.intent.payload ^ u8::from(reuse),
                    phase: Phase::Admitted,
                });
            }
            Action::Timeout { client } => self.timeout(&mut state, usize::from(client)),
            Action::Step { client, run, step } => {
                self.step(&mut state, usize::from(client), usize::from(run), step)
            }
            Action::LeaseExpires { scope } => {
                state.lease_expiries += 1;
                expire(&mut state, scope);
            }
            Action::RetentionExpires { scope } => {
                state.retention_expiries += 1;
                state.ledgers[usize::from(scope)].retention_expiries += 1;
                expire(&mut state, scope);
            }
            Action::Prune => {
                for record in &mut state.records {
                    if record.is_some_and(|r| r.expired) {
                        *record = None;
                    }
                }
            }
            Action::Crash { worker } => self.crash(&mut state, worker),
        }
        if self.config.canonical_generations {
            state.normalise_generations();
        } else {
            state.sort_runs();
        }
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::for_mode(self.config.mode)
    }
}

fn expire(state: &mut State, scope: u8) {
    if let Some(record) = &mut state.records[usize::from(scope)] {
        record.expired = true;
    }
}
