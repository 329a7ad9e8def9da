//! Markdown tables for the reports.

use std::fmt::Write as _;

/// A markdown table. The first column, and any header written with a leading
/// space, are left-aligned; the others right-aligned.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let names: Vec<&str> = headers.iter().map(|h| h.trim_start()).collect();
    let _ = writeln!(out, "| {} |", names.join(" | "));
    let aligns: Vec<&str> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i == 0 || h.starts_with(' ') {
                ":---"
            } else {
                "---:"
            }
        })
        .collect();
    let _ = writeln!(out, "|{}|", aligns.join("|"));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out
}
