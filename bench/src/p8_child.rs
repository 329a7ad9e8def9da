//! Runs the `p8_allocs` binary as a child process and reads its figures, so the
//! main benchmark (system allocator) can report P8 (counting allocator) in its
//! SUMMARY line.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::child;

/// The longest P8 may take, build included; then it is killed and reported missing.
const LIMIT: Duration = Duration::from_secs(600);

/// What the child printed: its markdown section and its per-row figures.
#[derive(Debug)]
pub struct P8Figures {
    /// The child's markdown, without its machine-readable line.
    pub markdown: String,
    /// (row key, allocations per request, bytes per request).
    pub values: Vec<(String, f64, f64)>,
}

impl P8Figures {
    /// Allocations per request of the row named `key` (e.g. `bare`, `resilience`).
    pub fn allocations(&self, key: &str) -> Option<f64> {
        self.values.iter().find(|v| v.0 == key).map(|v| v.1)
    }
}

/// Builds (when run under cargo) and runs `p8_allocs` next to this executable.
pub fn run() -> Result<P8Figures, String> {
    let started = Instant::now();
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot locate this executable: {e}"))?
        .with_file_name(format!("p8_allocs{}", std::env::consts::EXE_SUFFIX));
    child::build_under_cargo("p8_allocs", LIMIT)?;
    if !exe.exists() {
        return Err(format!(
            "{} not found: build it with `cargo build -p reqwest-resilience-bench --release \
             --bins`",
            exe.display()
        ));
    }
    let left = LIMIT.saturating_sub(started.elapsed());
    let stdout = child::run_bounded(Command::new(&exe), left)?;
    parse(&stdout)
}

/// Splits the child's output into its markdown and its `P8_VALUES` line
/// (`P8_VALUES key=allocs/bytes …`).
fn parse(stdout: &str) -> Result<P8Figures, String> {
    let mut markdown = String::new();
    let mut values = Vec::new();
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("P8_VALUES") else {
            markdown.push_str(line);
            markdown.push('\n');
            continue;
        };
        for field in rest.split_whitespace() {
            let parsed = field.split_once('=').and_then(|(key, figures)| {
                let (allocs, bytes) = figures.split_once('/')?;
                Some((key.to_owned(), allocs.parse().ok()?, bytes.parse().ok()?))
            });
            values.push(parsed.ok_or_else(|| format!("unreadable P8 field {field:?}"))?);
        }
    }
    if values.is_empty() {
        return Err("p8_allocs printed no P8_VALUES line".into());
    }
    Ok(P8Figures { markdown, values })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_values_line_and_keeps_the_markdown() {
        let figures = parse("## P8\n\n| a |\nP8_VALUES bare=44.00/17600 resilience=56.50/18800\n")
            .expect("parses");
        assert_eq!(figures.markdown, "## P8\n\n| a |\n");
        assert_eq!(figures.allocations("bare"), Some(44.0));
        assert_eq!(figures.allocations("resilience"), Some(56.5));
        assert_eq!(figures.allocations("backon"), None);
    }

    #[test]
    fn rejects_output_without_figures() {
        assert!(parse("## P8\n").is_err());
        assert!(parse("P8_VALUES bare=x/1\n").is_err());
    }
}
