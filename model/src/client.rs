//! The client model (being written).

use crate::report::{Report, Scope};

/// Checks the client model at `scope`; one report per configuration.
pub fn check(scope: Scope) -> Vec<Report> {
    let _ = scope;
    Vec::new()
}
