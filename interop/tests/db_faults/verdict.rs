//! What each scenario must show, and its figures: double effects, lost
//! intents, recovery, settle time, the errors callers read.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest_resilience_journal::IntentState;

use std::collections::BTreeMap;

use crate::fleet::{states, Outcome, Told, BASELINE, DEADLINE, OVERRUN_SLACK, SETTLE_TARGET};
use crate::stalls::worst_between;

/// From the database accepting connections to the first payment completing.
const RECOVERY_LIMIT: Duration = Duration::from_secs(5);

/// Judges one scenario (panicking with every violation found) and returns its
/// figures as one line. `effects` is each key's effects on the server; `away`
/// says whether the database went away (recovery is then held to its limit).
pub async fn judge(
    name: &str,
    away: bool,
    outcome: &Outcome,
    effects: &BTreeMap<String, i64>,
) -> String {
    let states = states(&outcome.journal, &outcome.notes).await;
    let mut problems = Vec::new();
    let mut doubles = 0;
    let mut lost = 0;
    let mut worst_overrun = Duration::ZERO;
    let mut worst_stall = Duration::ZERO;
    for note in &outcome.notes {
        let effect = effects.get(&note.key).copied().unwrap_or(0);
        let (state, row) = states
            .get(&note.key)
            .cloned()
            .unwrap_or((None, String::new()));
        if effect > 1 {
            doubles += 1;
            problems.push(format!("{}: {effect} effects", note.key));
        }
        match &note.told {
            Told::Answered(201) => {
                if effect != 1 || state != Some(IntentState::Succeeded) {
                    lost += 1;
                    problems.push(format!(
                        "{}: answered 201 but effects={effect} state={state:?} {row} {note:?}",
                        note.key
                    ));
                }
            }
            Told::Answered(status) => {
                problems.push(format!("{}: final status {status}", note.key));
            }
            Told::Refused => {
                if effect != 0 {
                    problems.push(format!("{}: refused but paid {effect}", note.key));
                }
            }
            Told::Unknown | Told::Failed => {
                let paid = effect == 1;
                let consistent = match state {
                    None => !paid,
                    Some(IntentState::Succeeded) => paid,
                    Some(IntentState::Failed | IntentState::Abandoned) => true,
                    Some(open) => {
                        problems.push(format!("{}: still {open:?} after settling", note.key));
                        true
                    }
                };
                if !consistent {
                    lost += 1;
                    problems.push(format!(
                        "{}: told {:?}, journal {state:?} {row}, effects {effect}",
                        note.key, note.told
                    ));
                }
            }
        }
        let stalled = worst_between(
            &outcome.stalls,
            (note.at - note.took).into_std(),
            note.at.into_std(),
        );
        let overrun = note.took.saturating_sub(DEADLINE).saturating_sub(stalled);
        worst_overrun = worst_overrun.max(overrun);
        worst_stall = worst_stall.max(stalled);
        if overrun > OVERRUN_SLACK {
            problems.push(format!(
                "{}: the send took {:?}, {overrun:?} past its deadline beyond the \
                 {stalled:?} the process's timers ran late meanwhile",
                note.key, note.took
            ));
        }
        if note.refused_and_unknown {
            problems.push(format!(
                "{}: an unknown outcome also reads as refused: {:?}",
                note.key, note.error
            ));
        }
        if let Some(text) = &note.error {
            if text.contains("db error") && !text.contains("SQLSTATE") {
                problems.push(format!("{}: a bare driver error: {text}", note.key));
            }
        }
    }
    let recovery = outcome
        .notes
        .iter()
        .filter(|n| n.told == Told::Answered(201) && n.at >= outcome.back_at)
        .map(|n| n.at - outcome.back_at)
        .min();
    match recovery {
        Some(recovery) if away && recovery > RECOVERY_LIMIT => {
            problems.push(format!("recovery took {recovery:?}"))
        }
        None => problems.push("no payment completed after the fault".to_owned()),
        _ => {}
    }
    let (vs_after, vs_before) = throughput_ratios(outcome);
    let settle = outcome.settled_at.map(|at| at - outcome.back_at);
    if let Some(settle) = settle.filter(|settle| *settle > SETTLE_TARGET) {
        problems.push(format!(
            "intents settled {settle:?} after the database was back, past {SETTLE_TARGET:?}"
        ));
    }
    if settle.is_none() {
        problems.push("intents still open 60 s after the fault".to_owned());
        // Which ones, and how their rows read: the failure says what held them.
        for state in [
            IntentState::InFlight,
            IntentState::Unknown,
            IntentState::Queued,
        ] {
            if let Ok(open) = outcome.journal.list(state, 5).await {
                problems.extend(open.iter().map(|row| format!("open: {row:?}")));
            }
        }
    }
    let reasons: BTreeSet<_> = outcome.notes.iter().filter_map(|n| n.reason).collect();
    let count =
        |wanted: fn(&Told) -> bool| outcome.notes.iter().filter(|n| wanted(&n.told)).count();
    let figures = format!(
        "{name}: sends={sends} answered={answered} refused={refused} unknown={unknown} \
         failed={failed} end_not_recorded={unrecorded} double_effects={doubles} \
         lost_intents={lost} fault_s={fault_s:.1} recovery_s={recovery} settle_s={settle} \
         worst_send_s={worst:.2} worst_overrun_s={overrun:.2} worst_stall_s={stall:.2} \
         throughput_end_of_fault_vs_after={vs_after:.2} \
         throughput_end_of_fault_vs_before={vs_before} \
         resume_errors={resume_errors} reasons={reasons:?}",
        sends = outcome.notes.len(),
        answered = count(|t| matches!(t, Told::Answered(_))),
        refused = count(|t| *t == Told::Refused),
        unknown = count(|t| *t == Told::Unknown),
        failed = count(|t| *t == Told::Failed),
        unrecorded = outcome.notes.iter().filter(|n| n.end_not_recorded).count(),
        fault_s = (outcome.back_at - outcome.fault_started).as_secs_f64(),
        recovery = recovery.map_or("none".to_owned(), |r| format!("{:.2}", r.as_secs_f64())),
        settle = settle.map_or("none".to_owned(), |s| format!("{:.2}", s.as_secs_f64())),
        resume_errors = outcome.resume_errors,
        vs_before = vs_before.map_or("none".to_owned(), |r| format!("{r:.2}")),
        overrun = worst_overrun.as_secs_f64(),
        stall = worst_stall.as_secs_f64(),
        worst = outcome
            .notes
            .iter()
            .map(|n| n.took.as_secs_f64())
            .fold(0.0, f64::max),
    );
    let samples: BTreeSet<_> = outcome
        .notes
        .iter()
        .filter_map(|n| n.error.as_deref())
        .map(|e| e.chars().take(300).collect::<String>())
        .take(6)
        .collect();
    for sample in &samples {
        println!("DB_FAULT_ERROR {name}: {sample}");
    }
    assert!(problems.is_empty(), "{figures}\n{}", problems.join("\n"));
    figures
}

/// Payments answered per second in the fault's last seconds against the two
/// seconds after it, and (in the full form, whose load runs a baseline before
/// the fault) against the seconds before it, after the load's warm-up.
pub fn throughput_ratios(outcome: &Outcome) -> (f64, Option<f64>) {
    let rate = |from: tokio::time::Instant, to: tokio::time::Instant| {
        let answered = outcome
            .notes
            .iter()
            .filter(|n| n.told == Told::Answered(201) && n.at >= from && n.at < to)
            .count();
        answered as f64 / (to - from).as_secs_f64().max(0.001)
    };
    let fault = outcome.back_at - outcome.fault_started;
    let short = Duration::from_secs(2).min(fault);
    let after = rate(outcome.back_at, outcome.back_at + Duration::from_secs(2));
    let vs_after = rate(outcome.back_at - short, outcome.back_at) / after.max(0.001);
    let vs_before = crate::full().then(|| {
        let window = BASELINE.min(fault);
        let before = rate(outcome.fault_started - window, outcome.fault_started);
        rate(outcome.back_at - window, outcome.back_at) / before.max(0.001)
    });
    (vs_after, vs_before)
}
