//! Situation 4, a durable send resumed after its client crashed: a child
//! process (`src/bin/matrix_client.rs`) sends one durable intent, journaled in
//! SQLite on the journal's defaults, and is SIGKILLed about 0.5 s into the 2 s
//! handler. The test then opens that journal under the same worker name and
//! resumes the intent with the journal's `Resumer` on its defaults, as the
//! journal's README does at start-up. One effect, the row `succeeded`, no
//! unknown on the way; and one more send of the key is replayed with the result.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use reqwest_resilience::ResilientClient;
use reqwest_resilience_journal::{IntentState, Journal, Outcome, SqliteStore};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::caller::{send, TOKEN};
use crate::cell::{Ctx, Sent, HANDLER};
use crate::server::Server;
use crate::verdict::{Call, End, Expect};

const CLIENT: &str = env!("CARGO_BIN_EXE_matrix_client");
const START_TIME: Duration = Duration::from_secs(30);
/// The resume, bounded in passes and in time to start a pass. The time covers
/// the journal's default pauses of an intent that ended unknown (1, 2, 4, 8,
/// 16 s after its runs), so a resend that ended unknown is seen to converge (or
/// not) after them.
const RESUME_PASSES: usize = 20;
const RESUME_TIME: Duration = Duration::from_secs(35);
const MIN_PAUSE: Duration = Duration::from_millis(50);

pub async fn run(ctx: &mut Ctx, runs: u64) -> (Vec<Sent>, Option<Server>) {
    let server = Server::start(ctx.mode, &ctx.db, HANDLER).await;
    let url = format!("http://{}/payments", server.addr);
    let mut sent = Vec::new();
    for run in 0..runs {
        let body = ctx.body(run);
        let kill_after = ctx.kill_after();
        let path = ctx.dir.join(format!("journal-{run}.sqlite"));
        let worker = format!("{}-sender", ctx.label);
        let mut unstaged = crash_a_sender(&path, &worker, &url, &body, kill_after).await;

        let journal = Journal::builder(SqliteStore::open(&path).expect("open the journal"))
            .worker_name(worker)
            .build()
            .expect("a valid journal");
        let in_flight = journal
            .list(IntentState::InFlight, 10)
            .await
            .expect("list the journal");
        let [intent] = &in_flight[..] else {
            unstaged.push(format!(
                "{} intents in flight after the kill",
                in_flight.len()
            ));
            sent.push(Sent {
                body,
                expect: Expect::Once,
                calls: vec![],
                journal: None,
                unstaged,
            });
            continue;
        };
        let key = intent.key.clone();
        let (state, mut calls) = resume(&journal, &key).await;
        // The server's kept answer must name the one effect; only a succeeded
        // intent has one to replay.
        if state == "succeeded" {
            let client = ResilientClient::new();
            calls.push(send("replay check", &client, &url, Some(&key), &body, None).await);
        }
        sent.push(Sent {
            body,
            expect: Expect::Once,
            calls,
            journal: Some(state),
            unstaged,
        });
    }
    (sent, Some(server))
}

/// Starts the durable sender and SIGKILLs it `kill_after` past its send; says
/// what did not go as staged.
async fn crash_a_sender(
    journal: &std::path::Path,
    worker: &str,
    url: &str,
    body: &str,
    kill_after: Duration,
) -> Vec<String> {
    let mut child = Command::new(CLIENT)
        .arg(journal)
        .arg(worker)
        .arg(url)
        .arg(TOKEN)
        .arg(body)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the matrix_client binary starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let first = tokio::time::timeout(START_TIME, lines.next_line())
        .await
        .expect("the client says it sends")
        .expect("the client's first line");
    assert_eq!(first.as_deref(), Some("sending"), "the client's first line");
    tokio::time::sleep(kill_after).await;
    let mut unstaged = vec![];
    if let Ok(Some(status)) = child.try_wait() {
        unstaged.push(format!("the client ended ({status}) before the kill"));
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
    unstaged
}

/// Resumes until the intent is terminal, bounded; returns its state, and as
/// calls every resend that ended unknown (the server was up: each one
/// avoidable) and the resume's end as the journal records it.
async fn resume(journal: &Journal, key: &str) -> (String, Vec<Call>) {
    let unknowns = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let seen = unknowns.clone();
    let resumer = journal
        .resumer(&ResilientClient::new())
        .resign(|request, _| request.bearer_auth(TOKEN))
        .on_result(move |result| {
            if let Outcome::Unknown { status, reason, .. } = result.outcome {
                seen.lock().unwrap().push(Call {
                    who: "resumer",
                    end: End::Unknown {
                        avoidable: true,
                        why: format!("{reason} (status {status:?})"),
                    },
                    took: started.elapsed(),
                    within: None,
                    log: String::new(), // the resumer's client keeps it
                });
            }
        });
    let mut row = None;
    for _ in 0..RESUME_PASSES {
        let report = resumer.drain().await.expect("a resume pass");
        let record = journal
            .get(key)
            .await
            .expect("read the journal")
            .expect("the intent's row");
        let state = record.state;
        row = Some(record);
        let left = RESUME_TIME.saturating_sub(started.elapsed());
        if matches!(
            state,
            IntentState::Succeeded | IntentState::Failed | IntentState::Abandoned
        ) || left.is_zero()
        {
            break;
        }
        let until_due = report
            .next_due()
            .and_then(|due| due.duration_since(SystemTime::now()).ok())
            .unwrap_or_default();
        tokio::time::sleep(until_due.clamp(MIN_PAUSE, left.max(MIN_PAUSE))).await;
    }
    let mut calls = unknowns.lock().unwrap().clone();
    let row = row.expect("at least one pass");
    if let (IntentState::Succeeded | IntentState::Failed, Some(status)) = (row.state, row.status) {
        calls.push(Call {
            who: "resumer",
            // The journal keeps the status, not the body nor whether it was a
            // replay: counted as no first-hand answer.
            end: End::Answered {
                status,
                body: None,
                replayed: true,
            },
            took: started.elapsed(),
            within: None,
            log: String::new(),
        });
    }
    let state = match row.state {
        IntentState::Succeeded => row.state.to_string(),
        // Why, in the journal's words, for the report.
        _ => format!(
            "{} (status {:?}, {:?}, after {:?})",
            row.state,
            row.status,
            row.detail,
            started.elapsed()
        ),
    };
    (state, calls)
}
