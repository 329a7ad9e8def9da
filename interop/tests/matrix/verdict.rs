//! What one run of a cell must come to, as a pure function of the server's effect
//! rows and what each caller ended with, with its table test beside it.

use std::time::Duration;

use End::Answered;

/// How many effects a run must leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Exactly one: the promise of every cell but one.
    Once,
    /// Exactly this many, a documented boundary (the memory layer killed
    /// mid-handler: an effect outside the store is repeated). The extra effects
    /// are counted as doubles, and any other count is a problem: the boundary
    /// moved, and the documentation with it must be looked at.
    Boundary(usize),
}

/// How one caller's send ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// A response. `body` is `None` where the caller keeps no body (the
    /// journal records the status only).
    Answered {
        status: u16,
        body: Option<String>,
        replayed: bool,
    },
    /// "Outcome unknown". Avoidable when it came before the deadline while the
    /// server was reachable: the client gave up on a server that would have
    /// answered.
    Unknown { avoidable: bool, why: String },
    /// Any other error: the caller did not get the result.
    Failed(String),
}

/// One caller of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub who: &'static str,
    pub end: End,
    pub took: Duration,
    /// The caller must have ended within this (the concurrent duplicate's
    /// second caller: its replay within 4 s).
    pub within: Option<Duration>,
    /// The client's attempt log, for a problem's report.
    pub log: String,
}

/// One run of a cell: what the server holds for the run's request, and the ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub expect: Expect,
    /// The effect rows (ids) recorded for this run's request.
    pub effects: Vec<i64>,
    pub calls: Vec<Call>,
    /// The journal row's state when the run is a durable intent (`succeeded`,
    /// or the state and why).
    pub journal: Option<String>,
    /// What the run meant to stage and did not (an answer the proxy did not
    /// lose, a kill that came too late): the run proved nothing.
    pub unstaged: Vec<String>,
}

/// A run's figures and what went wrong in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judged {
    pub effects: usize,
    pub doubles: usize,
    pub lost: usize,
    pub unknowns: usize,
    pub avoidable_unknowns: usize,
    /// The longest time of a caller with a bound (the concurrent duplicate's
    /// second caller), or of any caller where none has one.
    pub worst: Duration,
    pub problems: Vec<String>,
}

/// The body the server answers, and replays, for effect `id`.
pub fn effect_body(id: i64) -> String {
    format!("{{\"effect\":{id}}}")
}

/// The verdict: the expected number of effects; every caller ended with a 2xx
/// naming one of them (the same one for all), each execution answered at most
/// one caller, no unknowns, every bound kept, the journal row `succeeded`,
/// and the run's faults staged.
pub fn judge(run: &Run) -> Judged {
    let mut judged = Judged {
        effects: run.effects.len(),
        doubles: run.effects.len().saturating_sub(1),
        lost: usize::from(run.effects.is_empty()),
        ..Judged::default()
    };
    match run.expect {
        Expect::Once if run.effects.len() == 1 => {}
        Expect::Once => judged.problems.push(format!(
            "{} effects {:?}, expected exactly one",
            run.effects.len(),
            run.effects
        )),
        Expect::Boundary(n) if run.effects.len() == n => {}
        Expect::Boundary(n) => judged.problems.push(format!(
            "{} effects {:?}: the documented boundary is {n}",
            run.effects.len(),
            run.effects
        )),
    }
    let bodies: Vec<String> = run.effects.iter().map(|&id| effect_body(id)).collect();
    let mut first_body: Option<&str> = None;
    let mut executed = 0;
    let bounded = run.calls.iter().any(|call| call.within.is_some());
    for call in &run.calls {
        if call.within.is_some() || !bounded {
            judged.worst = judged.worst.max(call.took);
        }
        if let Some(bound) = call.within {
            if call.took > bound {
                judged.problems.push(format!(
                    "{}: ended after {:?}, bound {bound:?}; attempts: {}",
                    call.who, call.took, call.log
                ));
            }
        }
        match &call.end {
            Answered {
                status,
                body,
                replayed,
            } if (200..300).contains(status) => {
                executed += usize::from(!replayed);
                let Some(body) = body else { continue };
                if !bodies.contains(body) {
                    judged.problems.push(format!(
                        "{}: {status} {body:?} names no effect of {:?}",
                        call.who, run.effects
                    ));
                }
                match first_body {
                    Some(first) if first != body => judged.problems.push(format!(
                        "{}: {body:?}, another caller got {first:?}",
                        call.who
                    )),
                    _ => first_body = Some(body),
                }
            }
            Answered { status, body, .. } => judged
                .problems
                .push(format!("{}: answered {status} {body:?}", call.who)),
            End::Unknown { avoidable, why } => {
                judged.unknowns += 1;
                judged.avoidable_unknowns += usize::from(*avoidable);
                judged.problems.push(format!(
                    "{}: outcome unknown{} after {:?}: {why}; attempts: {}",
                    call.who,
                    if *avoidable { " (avoidable)" } else { "" },
                    call.took,
                    call.log
                ));
            }
            End::Failed(why) => judged.problems.push(format!("{}: failed: {why}", call.who)),
        }
    }
    if executed > run.effects.len() {
        judged.problems.push(format!(
            "{executed} callers got a first-hand answer for {} effects",
            run.effects.len()
        ));
    }
    for missed in &run.unstaged {
        judged.problems.push(format!("not staged: {missed}"));
    }
    if let Some(state) = &run.journal {
        if state != "succeeded" {
            judged
                .problems
                .push(format!("the journal row ended {state}, not succeeded"));
        }
    }
    judged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(who: &'static str, effect: i64, replayed: bool) -> Call {
        Call {
            who,
            end: Answered {
                status: 201,
                body: Some(effect_body(effect)),
                replayed,
            },
            took: Duration::from_secs(2),
            within: None,
            log: String::new(),
        }
    }

    fn run(effects: &[i64], calls: Vec<Call>) -> Run {
        Run {
            expect: Expect::Once,
            effects: effects.to_vec(),
            calls,
            journal: None,
            unstaged: vec![],
        }
    }

    #[test]
    fn matrix_verdict_table() {
        let unknown = |avoidable| Call {
            who: "b",
            end: End::Unknown {
                avoidable,
                why: "retry-after too long".into(),
            },
            took: Duration::from_millis(150),
            within: None,
            log: String::new(),
        };
        let slow = Call {
            within: Some(Duration::from_secs(4)),
            took: Duration::from_secs(5),
            ..ok("b", 7, true)
        };
        let bodiless = Call {
            end: Answered {
                status: 201,
                body: None,
                replayed: false,
            },
            ..ok("resumer", 7, false)
        };
        let boundary = |effects: &[i64], calls| Run {
            expect: Expect::Boundary(2),
            ..run(effects, calls)
        };
        let conflict = Call {
            end: Answered {
                status: 409,
                body: None,
                replayed: false,
            },
            ..ok("b", 7, false)
        };
        // (case, run, [doubles, lost, avoidable unknowns, problems])
        #[rustfmt::skip]
        let table: Vec<(&str, Run, [usize; 4])> = vec![
            ("executed and replayed", run(&[7], vec![ok("a", 7, false), ok("b", 7, true)]), [0, 0, 0, 0]),
            ("two effects", run(&[7, 8], vec![ok("a", 7, false), ok("b", 8, false)]), [1, 0, 0, 2]),
            ("no effect, yet a success", run(&[], vec![ok("a", 7, false)]), [0, 1, 0, 3]),
            ("an avoidable unknown", run(&[7], vec![ok("a", 7, false), unknown(true)]), [0, 0, 1, 1]),
            ("an unknown past the deadline", run(&[7], vec![unknown(false)]), [0, 0, 0, 1]),
            ("two first-hand answers, one effect", run(&[7], vec![ok("a", 7, false), ok("b", 7, false)]), [0, 0, 0, 1]),
            ("a replay past its bound", run(&[7], vec![ok("a", 7, false), slow]), [0, 0, 0, 1]),
            ("a 409 as the end", run(&[7], vec![conflict]), [0, 0, 0, 1]),
            ("a body without its row", run(&[7], vec![ok("a", 9, true)]), [0, 0, 0, 1]),
            ("the journal's status only", run(&[7], vec![bodiless.clone()]), [0, 0, 0, 0]),
            ("the journal not succeeded", Run { journal: Some("unknown".into()), ..run(&[7], vec![bodiless]) }, [0, 0, 0, 1]),
            ("a fault not staged", Run { unstaged: vec!["no answer lost".into()], ..run(&[7], vec![ok("a", 7, false)]) }, [0, 0, 0, 1]),
            ("the boundary as documented", boundary(&[7, 8], vec![ok("a", 8, false)]), [1, 0, 0, 0]),
            ("the boundary moved", boundary(&[7], vec![ok("a", 7, false)]), [0, 0, 0, 1]),
        ];
        for (case, run, [doubles, lost, avoidable, problems]) in table {
            let judged = judge(&run);
            assert_eq!(judged.doubles, doubles, "{case}: doubles {judged:?}");
            assert_eq!(judged.lost, lost, "{case}: lost {judged:?}");
            assert_eq!(judged.avoidable_unknowns, avoidable, "{case}: {judged:?}");
            assert_eq!(judged.problems.len(), problems, "{case}: {judged:?}");
        }
        // The worst time is the bounded caller's where there is one.
        let second = Call {
            within: Some(Duration::from_secs(4)),
            took: Duration::from_secs(3),
            ..ok("b", 7, true)
        };
        let first = Call {
            took: Duration::from_secs(5),
            ..ok("a", 7, false)
        };
        assert_eq!(
            judge(&run(&[7], vec![first.clone(), second])).worst,
            Duration::from_secs(3)
        );
        assert_eq!(judge(&run(&[7], vec![first])).worst, Duration::from_secs(5));
    }
}
