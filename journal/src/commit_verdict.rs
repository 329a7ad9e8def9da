//! What the database's answer about a transaction whose `COMMIT` answer was
//! lost means for the write-ahead: a pure rule, shared by the PostgreSQL store
//! and the model checker.

/// What the database says about a transaction whose `COMMIT` answer was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub enum Verdict {
    /// It committed: the write-ahead holds.
    Committed,
    /// It did not commit: nothing was written.
    Aborted,
    /// Still in progress (e.g. waiting for a synchronous standby), too old to
    /// know, or the database could not be asked.
    Unknown,
}

/// `pg_xact_status`'s answer (`None`: NULL, or no answer at all) as a verdict.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub fn verdict(status: Option<&str>) -> Verdict {
    match status {
        Some("committed") => Verdict::Committed,
        Some("aborted") => Verdict::Aborted,
        _ => Verdict::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_committed_and_aborted_are_answers() {
        let table = [
            (Some("committed"), Verdict::Committed),
            (Some("aborted"), Verdict::Aborted),
            (Some("in progress"), Verdict::Unknown),
            (None, Verdict::Unknown),
            (Some("something new"), Verdict::Unknown),
        ];
        for (status, expected) in table {
            assert_eq!(verdict(status), expected, "{status:?}");
        }
    }
}
