//! Runs the three model checks: `--bounded` (CI, under a minute) or `--full`, and prints
//! one `MODEL` line per check. Exits 1 if a property failed, with its trace.

use reqwest_resilience_model::report::{Report, Scope};
use reqwest_resilience_model::{client, journal, server};

fn main() {
    let scope = match std::env::args().nth(1).as_deref() {
        None | Some("--bounded") => Scope::Bounded,
        Some("--full") => Scope::Full,
        Some(other) => {
            eprintln!("check-models: unknown argument {other:?}; use --bounded or --full");
            std::process::exit(2);
        }
    };
    let checks: [fn(Scope) -> Vec<Report>; 3] = [server::check, journal::check, client::check];
    let mut failed = false;
    for check in checks {
        for report in check(scope) {
            println!("{report}");
            for failure in &report.failures {
                eprintln!("{failure}");
                failed = true;
            }
        }
    }
    if failed {
        std::process::exit(1);
    }
}
