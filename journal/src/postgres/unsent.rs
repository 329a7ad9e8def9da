//! Leases nobody is sending under, after an answer from the database was lost.
//!
//! A write-ahead whose `COMMIT` answer was lost and whose outcome stayed unknown:
//! the send it was for went out with nothing sent ("outcome unknown: the intent
//! may still be sent under its key"). A resume claim or a join's take-over whose
//! `COMMIT` answer was lost (`claiming.rs`): nothing is sent of the rows it may
//! have claimed. Either way, if the write committed, rows hold leases in this
//! worker's name that nobody is sending under, and a resumer would take them only
//! when those leases lapse (a write-ahead's or a take-over's: the deadline plus the
//! lease margin, half a minute on the defaults; a resume claim's: the resume
//! lease, five minutes). So, once the database answers again, those leases are
//! ended and the intents are taken at once. Only the leases these runs took are
//! ended (the fence each run wrote, this worker and incarnation): one a resumer or
//! a joiner took over since is left alone, and a write that never committed
//! matches no row.

use std::sync::Arc;
use std::time::Duration;

use idempotency_storage::postgres::keep_trying::KeepTrying;
use tokio_postgres::types::ToSql;

use super::pool::Pool;
use super::queries::END_UNSENT_LEASE;
use crate::state::IntentState::InFlight;
use crate::worker::Worker;

/// Ends the unsent leases `(key, fence)` once the database answers, trying for
/// as long as the leases (`lease`) would have lasted, on a task of its own.
pub(super) fn end_leases_once_back(
    pool: Arc<Pool>,
    mut leases: Vec<(String, i64)>,
    worker: &Worker,
    lease: Duration,
) {
    let (owner, incarnation) = (worker.name().to_owned(), worker.incarnation().to_owned());
    tokio::spawn(async move {
        let mut tries = KeepTrying::for_(lease);
        while tries.next().await {
            let Some((key, fence)) = leases.last() else {
                return;
            };
            let Ok(conn) = pool.get().await else {
                continue;
            };
            let in_flight = InFlight.as_str();
            let params: [&(dyn ToSql + Sync); 5] = [key, &in_flight, &owner, &incarnation, fence];
            // The commit waits for no standby: a synchronous standby that is
            // away would otherwise hold this row's lock for as long as it is
            // away, and a lease not ended early only lapses as it would have
            // anyway. One statement after the other (not pipelined: the update
            // is prepared first, and a pipelined COMMIT would overtake it).
            let all = async {
                conn.client
                    .batch_execute("BEGIN; SET LOCAL synchronous_commit TO local")
                    .await?;
                let ended = conn.client.execute(END_UNSENT_LEASE, &params).await?;
                conn.client.batch_execute("COMMIT").await?;
                Ok(ended)
            };
            match super::bounded(pool.timeouts(), all).await {
                Ok(ended) => {
                    tracing::info!(
                        ended,
                        "journal: a lease taken by a write whose answer was lost is ended, so its intent is resumed now (0: the write had not committed)"
                    );
                    leases.pop();
                    tries.at_once();
                }
                // Its session may be mid-transaction: never given back to the
                // pool halfway.
                Err(_) => conn.discard(),
            }
        }
    });
}
