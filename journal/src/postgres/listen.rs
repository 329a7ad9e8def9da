//! Relays in other processes, woken by `NOTIFY`: an outbox commit announces
//! itself on one channel, and every relay's store listens on its own
//! connection. A missed notification (the listening connection was down) costs
//! only latency: the relay's poll finds the intent, and each (re)connect wakes
//! the relay once to catch up.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_postgres::{AsyncMessage, Config};

use super::connection::{open, Timeouts};
use super::queries::LISTEN;
use crate::error::JournalError;
use crate::postgres_error::driver;

const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Listens until aborted, reconnecting with a backoff when the connection ends.
pub(super) fn spawn(
    config: Config,
    timeouts: Timeouts,
    wake: Arc<Notify>,
) -> tokio::task::AbortHandle {
    tokio::spawn(async move {
        let mut backoff = FIRST_BACKOFF;
        loop {
            match listen_once(&config, timeouts, &wake).await {
                Ok(()) => {
                    backoff = FIRST_BACKOFF;
                    tracing::warn!("journal: the relay's LISTEN connection closed; reconnecting");
                }
                Err(error) => {
                    tracing::warn!(%error, "journal: the relay cannot LISTEN; polling meanwhile");
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    })
    .abort_handle()
}

/// One connection's life: `LISTEN`, then a wake-up per notification until it
/// ends.
async fn listen_once(
    config: &Config,
    timeouts: Timeouts,
    wake: &Notify,
) -> Result<(), JournalError> {
    let (client, mut connection) = open(config, timeouts).await?;
    let messages = async {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(_))) => wake.notify_one(),
                Some(Ok(_)) => {} // a notice
                Some(Err(error)) => return Err(driver(error)),
                None => return Ok(()),
            }
        }
    };
    tokio::pin!(messages);
    tokio::select! {
        ended = &mut messages => return ended,
        listening = client.batch_execute(LISTEN) => listening.map_err(driver)?,
    }
    // Whatever committed while nobody listened.
    wake.notify_one();
    let ended = messages.await;
    drop(client);
    ended
}
