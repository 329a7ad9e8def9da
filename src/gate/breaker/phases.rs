//! A circuit's phases — closed, open, half-open — as a pure state machine: the
//! phase, an event and the time in; the next phase, the verdict and the change out.
//! Counting outcomes and deciding whether they trip the circuit is the caller's
//! (`Event::Finished::tripped`); this file only says what each event does where.

use std::time::{Duration, Instant};

use super::CircuitState;

/// Where a circuit stands, with what each phase needs to remember.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    #[default]
    Closed,
    Open {
        until: Instant,
    },
    /// `out` probes admitted and not yet answered. A probe that never answers (the
    /// caller dropped the intent) or answers slowly stops counting at
    /// `lease_until`, and another may go.
    HalfOpen {
        out: u32,
        lease_until: Instant,
    },
}

impl Phase {
    pub(crate) fn state(self) -> CircuitState {
        match self {
            Phase::Closed => CircuitState::Closed,
            Phase::Open { .. } => CircuitState::Open,
            Phase::HalfOpen { .. } => CircuitState::HalfOpen,
        }
    }
}

/// What happened to the circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// An attempt asks to go out.
    Admit,
    /// A hedge asks to go out: admitted only while closed, so that a half-open
    /// circuit's probe is never hedged and a hedge never becomes the probe.
    AdmitHedge,
    /// An attempt admitted here was not sent (a later gate refused it).
    NotSent,
    /// An attempt ended; `tripped`: counted with the others in the window, the
    /// failures reach the ratio (only read when closed).
    Finished { failed: bool, tripped: bool },
    /// Attempts still outstanding past the slow call duration, counted as
    /// failures, bring the failures to the ratio.
    Stalled,
}

/// The settings the phases follow.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    pub break_duration: Duration,
    pub probes: u32,
    /// How long a probe holds its slot without an answer.
    pub probe_lease: Duration,
}

/// The result of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub phase: Phase,
    /// For `Admit`: go, or wait this long. `None` for the other events.
    pub verdict: Option<Result<(), Duration>>,
    /// The state before and after, when it changed. A change into `Closed` or
    /// `Open` starts an empty window.
    pub(crate) change: Option<(CircuitState, CircuitState)>,
}

/// The phase after `event` at `now`.
pub fn step(phase: Phase, event: Event, now: Instant, rules: Rules) -> Step {
    let open = Phase::Open {
        until: now + rules.break_duration,
    };
    let stay = |verdict| Step {
        phase,
        verdict,
        change: None,
    };
    let to = |next: Phase, verdict| Step {
        phase: next,
        verdict,
        change: Some((phase.state(), next.state())),
    };
    match (phase, event) {
        (Phase::Closed, Event::Admit | Event::AdmitHedge) => stay(Some(Ok(()))),
        (Phase::Closed, Event::Finished { failed, tripped }) if failed && tripped => to(open, None),
        (Phase::Closed, Event::Stalled) => to(open, None),
        (Phase::Closed, _) => stay(None),

        (Phase::Open { until }, Event::Admit | Event::AdmitHedge) if now < until => {
            stay(Some(Err(until - now)))
        }
        // The break is over, but the next attempt to go is the probe: never a hedge.
        (Phase::Open { .. }, Event::AdmitHedge) => stay(Some(Err(Duration::ZERO))),
        (Phase::Open { .. }, Event::Admit) => {
            let half_open = Phase::HalfOpen {
                out: 1,
                lease_until: now + rules.probe_lease,
            };
            to(half_open, Some(Ok(())))
        }
        // A late outcome of an attempt admitted before the circuit opened.
        (Phase::Open { .. }, _) => stay(None),

        (Phase::HalfOpen { lease_until, .. }, Event::AdmitHedge) => {
            stay(Some(Err(lease_until.saturating_duration_since(now))))
        }
        (Phase::HalfOpen { out, lease_until }, Event::Admit) => {
            let (out, lease_until) = if now >= lease_until {
                (0, now + rules.probe_lease) // the probes' leases ran out
            } else {
                (out, lease_until)
            };
            if out < rules.probes {
                let phase = Phase::HalfOpen {
                    out: out + 1,
                    lease_until,
                };
                Step {
                    phase,
                    verdict: Some(Ok(())),
                    change: None,
                }
            } else {
                let phase = Phase::HalfOpen { out, lease_until };
                let wait = lease_until.saturating_duration_since(now);
                Step {
                    phase,
                    verdict: Some(Err(wait)),
                    change: None,
                }
            }
        }
        (Phase::HalfOpen { out, lease_until }, Event::NotSent) => Step {
            phase: Phase::HalfOpen {
                out: out.saturating_sub(1),
                lease_until,
            },
            verdict: None,
            change: None,
        },
        (Phase::HalfOpen { .. }, Event::Finished { failed: true, .. }) => to(open, None),
        // A probe out longer than the slow call duration frees its slot (`Admit`).
        (Phase::HalfOpen { .. }, Event::Stalled) => stay(None),
        (Phase::HalfOpen { .. }, Event::Finished { failed: false, .. }) => to(Phase::Closed, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Verdict = Option<Result<(), Duration>>;
    type Change = Option<(CircuitState, CircuitState)>;

    #[test]
    fn transitions() {
        use CircuitState as S;
        let t = Instant::now();
        let ms = |n: u64| t + Duration::from_millis(n);
        let rules = Rules {
            break_duration: Duration::from_millis(1_000),
            probes: 2,
            probe_lease: Duration::from_millis(300),
        };
        let closed = Phase::Closed;
        let open = Phase::Open { until: ms(1_000) };
        let half = |out, lease| Phase::HalfOpen {
            out,
            lease_until: ms(lease),
        };
        let fail = |tripped| Event::Finished {
            failed: true,
            tripped,
        };
        let success = Event::Finished {
            failed: false,
            tripped: false,
        };
        let go = Some(Ok(()));
        let wait = |n| Some(Err(Duration::from_millis(n)));
        #[rustfmt::skip]
        let rows: [(&str, Phase, Event, u64, Phase, Verdict, Change); 24] = [
            ("closed admits",                      closed,       Event::Admit,   0,     closed,                        go,      None),
            ("closed: a failure under the ratio",  closed,       fail(false),    0,     closed,                        None,    None),
            ("closed: a success never trips",      closed,       Event::Finished { failed: false, tripped: true }, 0, closed, None, None),
            ("closed: the tripping failure opens", closed,       fail(true),     0,     open,                          None,    Some((S::Closed, S::Open))),
            ("closed: not sent changes nothing",   closed,       Event::NotSent, 0,     closed,                        None,    None),
            ("open refuses with the time left",    open,         Event::Admit,   400,   open,                          wait(600), None),
            ("open: late outcomes are ignored",    open,         fail(true),     400,   open,                          None,    None),
            ("open: break over, a probe goes",     open,         Event::Admit,   1_000, half(1, 1_300),                go,      Some((S::Open, S::HalfOpen))),
            ("half-open: a second probe",          half(1, 1_300), Event::Admit, 1_100, half(2, 1_300),                go,      None),
            ("half-open: probes all out",          half(2, 1_300), Event::Admit, 1_100, half(2, 1_300),                wait(200), None),
            ("half-open: leases ran out",          half(2, 1_300), Event::Admit, 1_300, half(1, 1_600),                go,      None),
            ("half-open: an unsent probe's slot",  half(2, 1_300), Event::NotSent, 1_100, half(1, 1_300),              None,    None),
            ("half-open: not sent with none out",  half(0, 1_300), Event::NotSent, 1_100, half(0, 1_300),              None,    None),
            ("half-open: a success closes",        half(1, 1_300), success,      1_200, closed,                        None,    Some((S::HalfOpen, S::Closed))),
            ("half-open: a failure reopens",       half(1, 1_300), fail(false),  1_200, Phase::Open { until: ms(2_200) }, None, Some((S::HalfOpen, S::Open))),
            ("open: not sent changes nothing",     open,         Event::NotSent, 500,   open,                          None,    None),
            ("open refuses until the very end",    open,         Event::Admit,   999,   open,                          wait(1), None),
            ("closed: stalled attempts open it",   closed,       Event::Stalled, 0,     open,                          None,    Some((S::Closed, S::Open))),
            ("open: stalled changes nothing",      open,         Event::Stalled, 500,   open,                          None,    None),
            ("half-open: stalled changes nothing", half(1, 1_300), Event::Stalled, 1_100, half(1, 1_300),              None,    None),
            ("closed admits a hedge",              closed,       Event::AdmitHedge, 0,  closed,                        go,      None),
            ("open refuses a hedge",               open,         Event::AdmitHedge, 400, open,                         wait(600), None),
            ("open, break over: no hedge probe",   open,         Event::AdmitHedge, 1_000, open,                       wait(0), None),
            ("half-open refuses a hedge",          half(0, 1_300), Event::AdmitHedge, 1_100, half(0, 1_300),           wait(200), None),
        ];
        for (name, phase, event, at, next, verdict, change) in rows {
            let expected = Step {
                phase: next,
                verdict,
                change,
            };
            assert_eq!(step(phase, event, ms(at), rules), expected, "{name}");
        }
    }
}
