//! Open-loop arrivals: intents released at a fixed rate, each on a task of its own,
//! whatever the ones before them are doing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;

use super::clients::RowClient;
use super::server::{MEASURED_PATH, WARMUP_PATH};

/// One intent.
#[derive(Debug, Clone, Copy)]
pub struct Record {
    /// A measured intent (after the warm-up).
    pub measured: bool,
    /// From its release to its body read.
    pub latency: Duration,
    /// From the call to the response returned (what a deadline bounds).
    pub returned: Duration,
    /// When the call was made.
    pub called: Instant,
    /// Past a plain timer for the deadline (see `Answer::beyond_control`).
    pub beyond_control: Option<Duration>,
    /// How late the release was against its due time.
    pub lag: Duration,
    pub status: Option<StatusCode>,
}

/// `warmup` intents to the warm-up route, then `measured` to the measured one, one
/// every `gap` from now. The driver wakes on tokio's timer (1 ms ticks) and releases
/// every intent due by then, so intents go out two by two at a 0.5 ms gap; each is
/// timed from its release. Returns when every intent has ended.
pub async fn drive(
    client: &Arc<RowClient>,
    base_url: &str,
    warmup: usize,
    measured: usize,
    gap: Duration,
) -> Vec<Record> {
    let warmup_url: Arc<str> = format!("{base_url}{WARMUP_PATH}").into();
    let measured_url: Arc<str> = format!("{base_url}{MEASURED_PATH}").into();
    let total = warmup + measured;
    let mut tasks = Vec::with_capacity(total);
    let start = Instant::now();
    for i in 0..total {
        let due = start + gap * u32::try_from(i).unwrap_or(u32::MAX);
        if Instant::now() < due {
            tokio::time::sleep_until(due.into()).await;
        }
        let released = Instant::now();
        let is_measured = i >= warmup;
        let url = if is_measured {
            measured_url.clone()
        } else {
            warmup_url.clone()
        };
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let answer = client.get(&url).await;
            Record {
                measured: is_measured,
                latency: released.elapsed(),
                returned: answer.returned,
                called: answer.called,
                beyond_control: answer.beyond_control,
                lag: released.saturating_duration_since(due),
                status: answer.status,
            }
        }));
    }
    let mut records = Vec::with_capacity(total);
    for task in tasks {
        records.push(task.await.expect("intent task"));
    }
    records
}
