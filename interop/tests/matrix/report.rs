//! The matrix's table: one line per cell with its figures summed over its runs,
//! then every problem of every failing cell.

use std::fmt;
use std::time::Duration;

use crate::cell::{CellResult, Situation};
use crate::server::Mode;

pub struct Report {
    pub cells: Vec<CellResult>,
    pub seed: u64,
    pub took: Duration,
}

impl CellResult {
    fn failed(&self) -> bool {
        self.runs.iter().any(|run| !run.problems.is_empty())
    }

    fn verdict(&self) -> &'static str {
        if self.failed() {
            "FAIL"
        } else if (self.mode, self.situation) == (Mode::Memory, Situation::ServerKilled) {
            "ok: the documented boundary (effect outside the store repeated)"
        } else {
            "ok"
        }
    }

    fn sum(&self, figure: impl Fn(&crate::verdict::Judged) -> usize) -> usize {
        self.runs.iter().map(figure).sum()
    }
}

impl Report {
    pub fn failed(&self) -> Vec<String> {
        self.cells
            .iter()
            .filter(|cell| cell.failed())
            .map(|cell| format!("{} × {}", cell.mode.name(), cell.situation.name()))
            .collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "matrix (seed {}, {:.1}s): client, layer and journal on their defaults",
            self.seed,
            self.took.as_secs_f64()
        )?;
        writeln!(
            f,
            "{:<18} {:<26} {:>4} {:>7} {:>7} {:>4} {:>8} {:>9} {:>7}  verdict",
            "server",
            "situation",
            "runs",
            "effects",
            "doubles",
            "lost",
            "unknowns",
            "avoidable",
            "worst"
        )?;
        for cell in &self.cells {
            let worst = cell.runs.iter().map(|r| r.worst).max().unwrap_or_default();
            writeln!(
                f,
                "{:<18} {:<26} {:>4} {:>7} {:>7} {:>4} {:>8} {:>9} {:>6.2}s  {}",
                cell.mode.name(),
                cell.situation.name(),
                cell.runs.len(),
                cell.sum(|r| r.effects),
                cell.sum(|r| r.doubles),
                cell.sum(|r| r.lost),
                cell.sum(|r| r.unknowns),
                cell.sum(|r| r.avoidable_unknowns),
                worst.as_secs_f64(),
                cell.verdict(),
            )?;
        }
        for cell in self.cells.iter().filter(|cell| cell.failed()) {
            writeln!(f, "{} × {}:", cell.mode.name(), cell.situation.name())?;
            for (run, judged) in cell.runs.iter().enumerate() {
                for problem in &judged.problems {
                    writeln!(f, "  run {run}: {problem}")?;
                }
            }
        }
        Ok(())
    }
}
