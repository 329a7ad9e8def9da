//! A write-ahead whose `COMMIT` answer was lost and whose outcome stayed unknown.
//!
//! The send it was for went out with nothing sent ("outcome unknown: the
//! intent may still be sent under its key"). If the write-ahead committed, its
//! row holds a lease in this worker's name that nobody is sending under, and a
//! resumer would take the intent only when that lease lapses (the deadline plus
//! the lease margin: half a minute on the defaults). So, once the database
//! answers again, that lease is ended: the resumer (or the caller's retry with
//! the key) takes the intent at once. Only the first run's own lease is ended
//! (`fence = 1`, this worker and incarnation): one a resumer or a joiner took
//! over since is left alone, and a write-ahead that never committed matches no
//! row.

use std::sync::Arc;
use std::time::Duration;

use tokio_postgres::types::ToSql;

use super::pool::Pool;
use super::queries::END_UNSENT_LEASE;
use crate::state::IntentState::InFlight;
use crate::worker::Worker;

/// The first pause before asking; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// The longest pause: a database that is back is asked within it.
const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Ends `key`'s unsent lease once the database answers, trying for as long as
/// the lease (`lease`) would have lasted, on a task of its own.
pub(super) fn end_lease_once_back(pool: Arc<Pool>, key: &str, worker: &Worker, lease: Duration) {
    let (key, owner, incarnation) = (
        key.to_owned(),
        worker.name().to_owned(),
        worker.incarnation().to_owned(),
    );
    tokio::spawn(async move {
        let give_up = tokio::time::Instant::now() + lease;
        let mut pause = FIRST_PAUSE;
        while tokio::time::Instant::now() < give_up {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_PAUSE);
            let Ok(conn) = pool.get().await else {
                continue;
            };
            let in_flight = InFlight.as_str();
            let params: [&(dyn ToSql + Sync); 4] = [&key, &in_flight, &owner, &incarnation];
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
            let ended = super::bounded(pool.timeouts(), all).await;
            match ended {
                Ok(1) => {
                    tracing::info!(
                        "journal: a write-ahead whose commit answer was lost had committed; its unsent lease is ended, so the intent is resumed now"
                    );
                    return;
                }
                Ok(_) => {
                    tracing::debug!(
                        "journal: a write-ahead whose commit answer was lost left no lease to end"
                    );
                    return;
                }
                // Its session may be mid-transaction: never given back to the
                // pool halfway.
                Err(_) => conn.discard(),
            }
        }
    });
}
