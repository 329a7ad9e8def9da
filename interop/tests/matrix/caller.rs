//! One caller's send on the client's defaults, and how it ended.

use std::time::{Duration, Instant};

use reqwest_resilience::{ResilientClient, ResponseExt};

use crate::verdict::{Call, End};

/// The bearer token every caller sends: the server's account (its keys' scope).
pub const TOKEN: &str = "acct_matrix";

/// Sends `POST url` with `body` — under `key` when callers share one intent,
/// else under the key the client makes — and says how it ended.
pub async fn send(
    who: &'static str,
    client: &ResilientClient,
    url: &str,
    key: Option<&str>,
    body: &str,
    within: Option<Duration>,
) -> Call {
    let started = Instant::now();
    let mut request = client.post(url).bearer_auth(TOKEN).body(body.to_owned());
    if let Some(key) = key {
        request = request.idempotency_key(key);
    }
    let (end, log) = match request.send().await {
        Ok(response) => {
            let log = response.attempt_log().map(one_line).unwrap_or_default();
            let status = response.status().as_u16();
            let replayed = response
                .headers()
                .get("idempotent-replayed")
                .is_some_and(|v| v.as_bytes() == b"true");
            let body = response.text().await.unwrap_or_else(|e| format!("<{e}>"));
            let end = End::Answered {
                status,
                body: Some(body),
                replayed,
            };
            (end, log)
        }
        // In every cell the server is reachable before the deadline (directly,
        // or through a proxy that holds connections across a restart), so an
        // unknown for any reason but the deadline is one the client could
        // have avoided by waiting for the answer.
        Err(error) if error.is_outcome_unknown() => {
            let end = End::Unknown {
                avoidable: !error.is_deadline_exceeded(),
                why: error.to_string(),
            };
            (end, one_line(error.attempt_log()))
        }
        Err(error) => (
            End::Failed(error.to_string()),
            one_line(error.attempt_log()),
        ),
    };
    Call {
        who,
        end,
        took: started.elapsed(),
        within,
        log,
    }
}

/// The attempt log on one line of the report.
fn one_line(log: &reqwest_resilience::AttemptLog) -> String {
    log.to_string().replace('\n', " / ")
}
