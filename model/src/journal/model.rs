//! The transitions: what each action does to the state, calling the crate's
//! rules through [`super::rules`] and the store's copied rules in `store`.

use super::rules::{self as model_rules, JoinStep, Verdict};
use reqwest_resilience_journal::Outcome;

use super::action::{Action, CommitEnd};
use super::config::{Config, CopyMutation};
use super::group::Symmetries;
use super::state::{
    Client, ClientId, End, Fate, History, KeyId, Response, Row, RowState, Run, RunAt, Seen, State,
    Visibility, Worker, WorkerId,
};
use super::store::{self, Insert};

/// The journal model at one configuration.
#[derive(Debug, Clone)]
pub struct JournalModel {
    /// What the check covers.
    pub config: Config,
    symmetries: Symmetries,
}

impl JournalModel {
    /// The model of `config`.
    pub fn new(config: Config) -> Self {
        let symmetries = Symmetries::of(&config);
        Self { config, symmetries }
    }

    fn client(&self, c: ClientId) -> (WorkerId, KeyId) {
        self.config.clients[usize::from(c)]
    }

    /// The state before anything happened.
    pub fn initial(&self) -> State {
        let keys = usize::from(self.config.keys);
        State {
            rows: vec![None; keys],
            clients: vec![Client::Start; self.config.clients.len()],
            workers: vec![
                Worker {
                    incarnation: 0,
                    runs: Vec::new(),
                    caught_up: 0,
                };
                usize::from(self.config.workers)
            ],
            crashes: 0,
            expiries: 0,
            history: History {
                applied: vec![0; keys],
                not_performed: vec![0; keys],
                ..History::default()
            },
            symmetries: self.symmetries.clone(),
        }
    }

    /// The state and its record of the outcome `(state, runs given back)`.
    fn outcome(outcome: &Outcome) -> (RowState, u8) {
        let given_back = u8::try_from(outcome.runs_given_back()).unwrap_or(0);
        (RowState::of(outcome.state()), given_back)
    }

    /// Whether the environment may answer `response` for key `k` (runs that
    /// did nothing at the server are bounded), counting it.
    fn respond(&self, s: &mut State, k: KeyId, response: Response) -> bool {
        if response != Response::NotPerformed {
            return true;
        }
        let done = &mut s.history.not_performed[usize::from(k)];
        if *done >= self.config.max_not_performed {
            return false;
        }
        *done += 1;
        true
    }

    /// The live task holding key `k`'s current lease, and whether its send is over
    /// (`Some(true)`), on the wire with its lease allowed to end under it by the
    /// crate's rules (`Some(true)` as well), or not (`Some(false)`); `None`: no
    /// live holder.
    fn holder_may_lose_lease(&self, s: &State, k: KeyId, row: &Row) -> Option<bool> {
        let (w, incarnation) = row.owner?;
        if s.workers[usize::from(w)].incarnation != incarnation {
            return None;
        }
        for (c, client) in s.clients.iter().enumerate() {
            let (cw, ck) = self.client(c as ClientId);
            if cw != w || ck != k {
                continue;
            }
            let may = match *client {
                Client::Committing | Client::AskingStatus
                    if row.fence == 1 && usize::from(row.origin) == c =>
                {
                    Some(false)
                }
                Client::Ready(Some(f)) if f == row.fence => Some(false),
                Client::Sending(Some(f)) if f == row.fence => {
                    Some(self.config.first_send_outlives_lease())
                }
                Client::Recording(f, _, _) if f == row.fence => Some(true),
                _ => None,
            };
            if may.is_some() {
                return may;
            }
        }
        let run = s.workers[usize::from(w)]
            .runs
            .iter()
            .find(|r| r.key == k && r.fence == row.fence)?;
        Some(match run.at {
            RunAt::Claimed | RunAt::Ready => false,
            RunAt::Sending => self.config.resumed_send_outlives_lease(),
            RunAt::Recording(..) => true,
        })
    }

    /// A send of key `k` by client `c` (`None`: a relay): counted for the
    /// client whose write made the row.
    fn sent(s: &mut State, k: KeyId, c: Option<ClientId>) {
        if let Some(origin) = s.rows[usize::from(k)].map(|row| row.origin).or(c) {
            s.history.sent |= 1 << origin;
        }
    }

    fn seen(s: &mut State, event: Seen) {
        s.history.seen |= event as u8;
    }

    /// `record` under the lease of `fence`: the store's answer (`false`: lease lost).
    fn record(&self, s: &mut State, k: KeyId, fence: u8, to: RowState, given_back: u8) {
        let slot = &mut s.rows[usize::from(k)];
        match slot {
            Some(row) if store::records(row, fence, &self.config) => {
                let fenced = row.fence != fence;
                *row = store::recorded(row, to, given_back);
                s.history.fenced_write_recorded |= fenced;
                if given_back > 0 {
                    Self::seen(s, Seen::GivenBack);
                }
            }
            _ => Self::seen(s, Seen::LeaseLost),
        }
    }

    fn client_step(&self, s: &mut State, c: ClientId, action: Action) -> Option<()> {
        let (w, k) = self.client(c);
        let ci = usize::from(c);
        let incarnation = s.workers[usize::from(w)].incarnation;
        let slot = usize::from(k);
        match (s.clients[ci], action) {
            (Client::Start, Action::WriteAhead(_)) => match store::insert(s.rows[slot].as_ref()) {
                Insert::Blocked => return None,
                Insert::Duplicate => s.clients[ci] = Client::Joining,
                Insert::Inserted => {
                    s.rows[slot] = Some(Row {
                        state: RowState::InFlight,
                        visibility: Visibility::Uncommitted,
                        owner: Some((w, incarnation)),
                        lease_live: true,
                        fence: 1,
                        runs: 1,
                        origin: c,
                        acked: false,
                    });
                    s.clients[ci] = Client::Committing;
                }
            },
            (Client::Committing, Action::Commit(_, end)) => {
                let row = s.rows[slot].as_mut()?;
                match end {
                    CommitEnd::Answered => {
                        row.visibility = Visibility::Committed;
                        s.clients[ci] = Client::Ready(Some(1));
                    }
                    CommitEnd::Failed => {
                        s.rows[slot] = None;
                        s.history.told_nothing_sent |= 1 << c;
                        s.clients[ci] = Client::Done(End::RefusedNothingSent);
                    }
                    CommitEnd::Lost(fate) => {
                        match fate {
                            Fate::Committed => row.visibility = Visibility::Committed,
                            Fate::Committing => row.visibility = Visibility::Committing,
                            Fate::Aborted => s.rows[slot] = None,
                        }
                        Self::seen(s, Seen::AmbiguousCommit);
                        s.clients[ci] = Client::AskingStatus;
                    }
                }
            }
            (Client::AskingStatus, Action::AskStatus(_, answered)) => {
                let status = match s.rows[slot] {
                    Some(row) if row.origin == c => match row.visibility {
                        Visibility::Committed => "committed",
                        _ => "in progress",
                    },
                    _ => "aborted",
                };
                let status = answered.then_some(status);
                s.clients[ci] = match model_rules::commit_verdict(status) {
                    Verdict::Committed => Client::Ready(Some(1)),
                    Verdict::Aborted => {
                        s.history.told_nothing_sent |= 1 << c;
                        Client::Done(End::RefusedNothingSent)
                    }
                    Verdict::Unknown => Client::Done(End::RefusedOutcomeUnknown),
                };
            }
            (Client::Joining, Action::JoinLook(_)) => {
                let row = s.rows[slot].filter(|r| r.visibility == Visibility::Committed)?;
                s.clients[ci] = match model_rules::join_step(true, row.state.journal(), false) {
                    JoinStep::Refuse => Client::Done(End::KeyInUse),
                    JoinStep::SendUnjournaled => {
                        Self::seen(s, Seen::SentUnjournaled);
                        Client::Ready(None)
                    }
                    JoinStep::TakeOverOrWait => Client::TakingOver,
                };
            }
            (Client::TakingOver, Action::TakeOver(_)) => {
                let row = s.rows[slot]?;
                if store::can_take_over(&row, w, incarnation, &self.config) {
                    let taken = store::taken(&row, w, incarnation);
                    if row.state == RowState::InFlight {
                        Self::seen(s, Seen::TakeOver);
                    }
                    s.rows[slot] = Some(taken);
                    s.clients[ci] = Client::Ready(Some(taken.fence));
                } else if model_rules::join_step(true, row.state.journal(), false)
                    == JoinStep::TakeOverOrWait
                {
                    // It would poll and see the same: a stutter, left out so the
                    // wait is a state without this step, not a cycle.
                    return None;
                } else {
                    s.clients[ci] = Client::Joining;
                }
            }
            (Client::Ready(fence), Action::Send(_)) => {
                Self::sent(s, k, Some(c));
                s.clients[ci] = Client::Sending(fence);
            }
            (Client::Sending(fence), Action::Respond(_, response)) => {
                if !self.respond(s, k, response) {
                    return None;
                }
                s.clients[ci] = match fence {
                    None => Client::Done(End::Answered),
                    Some(fence) => {
                        let outcome = model_rules::first_run_outcome(
                            response.status(),
                            response.outcome_unknown(),
                            self.config.unknown_retry_after,
                        );
                        let (to, given_back) = Self::outcome(&outcome);
                        Client::Recording(fence, to, given_back)
                    }
                };
            }
            (Client::Recording(fence, to, given_back), Action::Record(_)) => {
                self.record(s, k, fence, to, given_back);
                s.clients[ci] = Client::Done(End::Answered);
            }
            (Client::Start, Action::Enqueue(_)) => match store::insert(s.rows[slot].as_ref()) {
                Insert::Blocked => return None,
                Insert::Duplicate => s.clients[ci] = Client::Done(End::AlreadyEnqueued),
                Insert::Inserted => {
                    s.rows[slot] = Some(Row {
                        state: RowState::Queued,
                        visibility: Visibility::Uncommitted,
                        owner: None,
                        lease_live: false,
                        fence: 0,
                        runs: 0,
                        origin: c,
                        acked: false,
                    });
                    s.clients[ci] = Client::Enqueued;
                }
            },
            (Client::Enqueued, Action::EnqueueCommit(_)) => {
                s.rows[slot].as_mut()?.visibility = Visibility::Committed;
                s.clients[ci] = Client::Done(End::Enqueued);
            }
            (Client::Enqueued, Action::EnqueueRollback(_)) => {
                s.rows[slot] = None;
                s.history.rolled_back |= 1 << c;
                Self::seen(s, Seen::RolledBackEnqueue);
                s.clients[ci] = Client::Done(End::RolledBack);
            }
            _ => return None,
        }
        Some(())
    }

    fn run_index(s: &State, w: WorkerId, k: KeyId) -> Option<usize> {
        s.workers[usize::from(w)]
            .runs
            .iter()
            .position(|r| r.key == k)
    }

    fn relay_step(&self, s: &mut State, action: Action) -> Option<()> {
        match action {
            Action::Claim(w) => {
                let wi = usize::from(w);
                if !s.workers[wi].runs.is_empty() {
                    return None;
                }
                let incarnation = s.workers[wi].incarnation;
                let cap = self.config.claim_cap();
                for k in 0..self.config.keys {
                    let Some(row) = s.rows[usize::from(k)] else {
                        continue;
                    };
                    if !store::claimable(&row, w, incarnation, &self.config)
                        || i64::from(row.runs) > cap
                    {
                        continue;
                    }
                    if row.state == RowState::InFlight {
                        Self::seen(s, Seen::TakeOver);
                    }
                    let taken = store::taken(&row, w, incarnation);
                    s.rows[usize::from(k)] = Some(taken);
                    s.workers[wi].runs.push(Run {
                        key: k,
                        fence: taken.fence,
                        runs: taken.runs,
                        at: RunAt::Claimed,
                    });
                }
                if s.workers[wi].runs.is_empty() {
                    return None;
                }
            }
            Action::Plan(w, k) => {
                let i = Self::run_index(s, w, k)?;
                let run = &mut s.workers[usize::from(w)].runs[i];
                if run.at != RunAt::Claimed {
                    return None;
                }
                let plan = model_rules::plan_run(
                    i64::from(run.runs),
                    Some(self.config.deadline),
                    std::time::Duration::from_secs(23 * 3600),
                    self.config.resume_lease,
                    self.config.max_runs,
                    self.config.lease_margin,
                    self.config.resume_lease,
                );
                run.at = match plan {
                    Ok(_) => RunAt::Ready,
                    Err(outcome) => {
                        let (to, given_back) = Self::outcome(&outcome);
                        Self::seen(s, Seen::AbandonedAfterRuns);
                        let run = &mut s.workers[usize::from(w)].runs[i];
                        run.at = RunAt::Recording(to, given_back);
                        return Some(());
                    }
                };
            }
            Action::RunSend(w, k) => {
                let i = Self::run_index(s, w, k)?;
                let run = &mut s.workers[usize::from(w)].runs[i];
                if run.at != RunAt::Ready {
                    return None;
                }
                run.at = RunAt::Sending;
                Self::sent(s, k, None);
            }
            Action::RunRespond(w, k, response) => {
                let i = Self::run_index(s, w, k)?;
                let run = s.workers[usize::from(w)].runs[i];
                if run.at != RunAt::Sending || !self.respond(s, k, response) {
                    return None;
                }
                let outcome = model_rules::run_outcome(
                    response.status(),
                    response.outcome_unknown(),
                    i64::from(run.runs),
                    self.config.unknown_retry_after,
                );
                let (to, given_back) = Self::outcome(&outcome);
                s.workers[usize::from(w)].runs[i].at = RunAt::Recording(to, given_back);
            }
            Action::RunRecord(w, k) => {
                let i = Self::run_index(s, w, k)?;
                let run = s.workers[usize::from(w)].runs[i];
                let RunAt::Recording(to, given_back) = run.at else {
                    return None;
                };
                self.record(s, k, run.fence, to, given_back);
                s.workers[usize::from(w)].runs.remove(i);
            }
            _ => return None,
        }
        Some(())
    }

    fn environment_step(&self, s: &mut State, action: Action) -> Option<()> {
        match action {
            Action::CommitSettles(k) => {
                let row = s.rows[usize::from(k)].as_mut()?;
                if row.visibility != Visibility::Committing {
                    return None;
                }
                row.visibility = Visibility::Committed;
            }
            Action::Acknowledge(w, k) => {
                let bit = 1u8 << k;
                let worker = &s.workers[usize::from(w)];
                let row = s.rows[usize::from(k)].as_mut()?;
                if worker.caught_up & bit != 0
                    || row.visibility != Visibility::Committed
                    || !row.state.is_terminal()
                {
                    return None;
                }
                if self
                    .config
                    .mutated(CopyMutation::UnacknowledgedSkipsFailures)
                    && row.state != RowState::Succeeded
                {
                    return None;
                }
                // `UPDATE … SET acknowledged … WHERE acknowledged IS NULL`, in the
                // application's transaction, then the crate's rule.
                let first = !row.acked;
                row.acked = true;
                let state = row.state.journal();
                if model_rules::settle(first, Some(state)) == Ok(true) {
                    s.history.applied[usize::from(k)] += 1;
                }
                s.workers[usize::from(w)].caught_up |= bit;
            }
            Action::Crash(w) => {
                if s.crashes >= self.config.max_crashes {
                    return None;
                }
                s.crashes += 1;
                let wi = usize::from(w);
                let mut mid_send = s.workers[wi].runs.iter().any(|r| r.at == RunAt::Sending);
                for c in 0..s.clients.len() {
                    let (cw, k) = self.client(c as ClientId);
                    if cw != w {
                        continue;
                    }
                    match s.clients[c] {
                        Client::Done(_) => continue,
                        Client::Sending(_) => mid_send = true,
                        // The database rolls back a dead session's open transaction.
                        Client::Committing => s.rows[usize::from(k)] = None,
                        Client::Enqueued => {
                            s.rows[usize::from(k)] = None;
                            s.history.rolled_back |= 1 << c;
                            Self::seen(s, Seen::RolledBackEnqueue);
                        }
                        _ => {}
                    }
                    s.clients[c] = Client::Done(End::Crashed);
                }
                if mid_send {
                    Self::seen(s, Seen::CrashMidSend);
                }
                let worker = &mut s.workers[wi];
                worker.incarnation += 1;
                worker.runs.clear();
                worker.caught_up = 0;
            }
            Action::LeaseEnds(k) => {
                let row = s.rows[usize::from(k)]?;
                if row.state != RowState::InFlight || !row.lease_live {
                    return None;
                }
                match self.holder_may_lose_lease(s, k, &row) {
                    None => {}
                    Some(false) => return None,
                    Some(true) => {
                        if s.expiries >= self.config.max_expiries {
                            return None;
                        }
                        s.expiries += 1;
                    }
                }
                s.rows[usize::from(k)].as_mut()?.lease_live = false;
            }
            _ => return None,
        }
        Some(())
    }
}

/// The transition relation.
impl JournalModel {
    /// Every action that may be enabled in `s` (`successor` says which are).
    pub fn enabled(&self, s: &State, actions: &mut Vec<Action>) {
        for (c, client) in s.clients.iter().enumerate() {
            let c = c as ClientId;
            match client {
                Client::Start => {
                    actions.push(Action::WriteAhead(c));
                    actions.push(Action::Enqueue(c));
                }
                Client::Committing => {
                    actions.push(Action::Commit(c, CommitEnd::Answered));
                    actions.push(Action::Commit(c, CommitEnd::Failed));
                    for fate in [Fate::Committed, Fate::Aborted, Fate::Committing] {
                        actions.push(Action::Commit(c, CommitEnd::Lost(fate)));
                    }
                }
                Client::AskingStatus => {
                    actions.push(Action::AskStatus(c, true));
                    actions.push(Action::AskStatus(c, false));
                }
                Client::Joining => actions.push(Action::JoinLook(c)),
                Client::TakingOver => actions.push(Action::TakeOver(c)),
                Client::Ready(_) => actions.push(Action::Send(c)),
                Client::Sending(_) => {
                    actions.extend(Response::ALL.map(|r| Action::Respond(c, r)));
                }
                Client::Recording(..) => actions.push(Action::Record(c)),
                Client::Enqueued => {
                    actions.push(Action::EnqueueCommit(c));
                    actions.push(Action::EnqueueRollback(c));
                }
                Client::Done(_) => {}
            }
        }
        // Acknowledgements touch only terminal rows, which nothing else changes:
        // they commute with every action but a crash, so they run once the rest
        // is quiescent (crashes stay possible among them).
        let quiescent = s.clients.iter().all(|c| matches!(c, Client::Done(_)))
            && s.workers.iter().all(|w| w.runs.is_empty());
        for (w, worker) in s.workers.iter().enumerate() {
            let w = w as WorkerId;
            if worker.runs.is_empty() {
                actions.push(Action::Claim(w));
            }
            for run in &worker.runs {
                match run.at {
                    RunAt::Claimed => actions.push(Action::Plan(w, run.key)),
                    RunAt::Ready => actions.push(Action::RunSend(w, run.key)),
                    RunAt::Sending => {
                        actions.extend(Response::ALL.map(|r| Action::RunRespond(w, run.key, r)));
                    }
                    RunAt::Recording(..) => actions.push(Action::RunRecord(w, run.key)),
                }
            }
            if quiescent {
                for k in 0..self.config.keys {
                    actions.push(Action::Acknowledge(w, k));
                }
            }
            actions.push(Action::Crash(w));
        }
        for k in 0..self.config.keys {
            actions.push(Action::CommitSettles(k));
            actions.push(Action::LeaseEnds(k));
        }
    }

    /// The state after `action`, or `None` when it is not enabled.
    pub fn successor(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        let done = match action {
            Action::WriteAhead(c)
            | Action::Commit(c, _)
            | Action::AskStatus(c, _)
            | Action::JoinLook(c)
            | Action::TakeOver(c)
            | Action::Send(c)
            | Action::Respond(c, _)
            | Action::Record(c)
            | Action::Enqueue(c)
            | Action::EnqueueCommit(c)
            | Action::EnqueueRollback(c) => self.client_step(&mut s, c, action),
            Action::Claim(_)
            | Action::Plan(..)
            | Action::RunSend(..)
            | Action::RunRespond(..)
            | Action::RunRecord(..) => self.relay_step(&mut s, action),
            Action::CommitSettles(_)
            | Action::Acknowledge(..)
            | Action::Crash(_)
            | Action::LeaseEnds(_) => self.environment_step(&mut s, action),
        };
        done.map(|()| s)
    }
}
