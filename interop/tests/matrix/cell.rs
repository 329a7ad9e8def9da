//! One cell of the matrix: a server mode × a situation, run a number of times on
//! one database, each run its own request body; then judged run by run.

use std::path::PathBuf;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::database::Database;
use crate::server::Mode;
use crate::verdict::{judge, Call, Expect, Judged, Run};
use crate::{concurrent, killed, lost_answer, resumed};

/// How long every handler takes: long enough for a second caller, a kill or a
/// client's crash to land while it runs.
pub const HANDLER: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Situation {
    /// Two callers, one intent, 100 ms apart.
    ConcurrentDuplicate,
    /// The first answer lost after the server sent it.
    LostAnswer,
    /// The server SIGKILLed mid-handler and restarted on the same database.
    ServerKilled,
    /// A durable send's client SIGKILLed mid-request, resumed from its journal.
    ClientCrashResumed,
}

impl Situation {
    pub const ALL: [Situation; 4] = [
        Situation::ConcurrentDuplicate,
        Situation::LostAnswer,
        Situation::ServerKilled,
        Situation::ClientCrashResumed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Situation::ConcurrentDuplicate => "concurrent duplicate",
            Situation::LostAnswer => "lost response",
            Situation::ServerKilled => "server killed mid-handler",
            Situation::ClientCrashResumed => "durable send resumed",
        }
    }
}

/// What a cell has to work with.
pub struct Ctx {
    pub mode: Mode,
    pub db: Database,
    /// The cell's own directory (journals).
    pub dir: PathBuf,
    /// A name unique among the cells, fit for a key, a worker or a database.
    pub label: String,
    /// Seeds the request bodies and the kill moments.
    pub rng: StdRng,
}

impl Ctx {
    pub fn new(mode: Mode, situation: Situation, db: Database, dir: PathBuf, seed: u64) -> Ctx {
        let label = format!("{}_{}", mode.arg(), situation as u8);
        let cell_seed = seed ^ ((mode as u64) << 8 | situation as u64);
        Ctx {
            mode,
            db,
            dir,
            label,
            rng: StdRng::seed_from_u64(cell_seed),
        }
    }

    /// Run `run`'s request body: distinct within the cell, so its effects are
    /// found by it.
    pub fn body(&mut self, run: u64) -> String {
        let cents: u64 = self.rng.random_range(100..100_000);
        format!("{{\"run\":{run},\"amount\":{cents}}}")
    }

    /// When a kill lands after the request went out: well inside the handler.
    pub fn kill_after(&mut self) -> Duration {
        Duration::from_millis(self.rng.random_range(400..=600))
    }
}

/// What one run did, before its effects are read.
pub struct Sent {
    pub body: String,
    pub expect: Expect,
    pub calls: Vec<Call>,
    pub journal: Option<String>,
    pub unstaged: Vec<String>,
}

/// A cell's runs, judged.
pub struct CellResult {
    pub mode: Mode,
    pub situation: Situation,
    pub runs: Vec<Judged>,
}

pub async fn run_cell(situation: Situation, mut ctx: Ctx, runs: u64) -> CellResult {
    let (sent, server) = match situation {
        Situation::ConcurrentDuplicate => concurrent::run(&mut ctx, runs).await,
        Situation::LostAnswer => lost_answer::run(&mut ctx, runs).await,
        Situation::ServerKilled => killed::run(&mut ctx, runs).await,
        Situation::ClientCrashResumed => resumed::run(&mut ctx, runs).await,
    };
    // A handler still running (an execution no caller waited for) records its
    // effect within its time: wait that long before counting, server alive.
    tokio::time::sleep(HANDLER).await;
    let effects = ctx.db.effects().await;
    drop(server);
    let runs = sent
        .into_iter()
        .map(|sent| {
            judge(&Run {
                expect: sent.expect,
                effects: effects
                    .iter()
                    .filter(|e| e.body == sent.body)
                    .map(|e| e.id)
                    .collect(),
                calls: sent.calls,
                journal: sent.journal,
                unstaged: sent.unstaged,
            })
        })
        .collect();
    CellResult {
        mode: ctx.mode,
        situation,
        runs,
    }
}
