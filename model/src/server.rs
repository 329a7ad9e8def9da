//! The server model (being written).

use crate::report::{Report, Scope};

/// Checks the server model at `scope`; one report per configuration.
pub fn check(scope: Scope) -> Vec<Report> {
    let _ = scope;
    Vec::new()
}
