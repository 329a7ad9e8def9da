//! A key's end the database was away for, written again once it is back.
//!
//! In the layer mode the handler's effect happened before its response is
//! stored. When that write fails (the database restarting, a backend
//! terminated), the key stays in progress until its lease lapses, and the
//! next request with it runs the handler again: a second effect. So the store
//! keeps the completion and writes it again in the background, with a backoff
//! (`idempotency_storage::postgres::keep_trying`), until it lands or
//! [`KEEP_TRYING_FOR`] has passed. A release (the handler's
//! answer is not to be kept) is kept the same way, so retries are not told
//! "in progress" for the rest of the lease, and so is a claim whose answer was
//! lost (see `generation.rs`). The claim's generation guards each write: once
//! another request took the key over, a late one changes nothing.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use idempotency_storage::postgres::keep_trying::KeepTrying;
use idempotency_storage::postgres::Pool;

use super::queries::{complete_in, RELEASE};
use super::Connector;
use crate::record::Completion;
use crate::store::ClaimToken;

/// How long a kept result is retried: the layer's default lease, past which
/// the key may be taken over anyway.
pub(super) const KEEP_TRYING_FOR: Duration = Duration::from_secs(60);

/// What is kept: the key's response, or its release.
pub(super) enum End {
    Complete(Completion, SystemTime),
    Release,
    /// The release of a claim whose answer was lost: it may never have landed.
    LostClaim,
}

/// Writes `end` in the background until it lands or time runs out.
pub(super) fn keep(pool: Arc<Pool<Connector>>, token: ClaimToken, end: End) {
    tokio::spawn(async move {
        let mut tries = KeepTrying::for_(KEEP_TRYING_FOR);
        while tries.next().await {
            let Ok(client) = pool.get().await else {
                continue;
            };
            let written = match &end {
                End::Complete(completion, expires_at) => {
                    complete_in(&*client, &token, completion, *expires_at).await
                }
                End::Release | End::LostClaim => client
                    .execute(
                        RELEASE,
                        &[&&token.scope.as_bytes()[..], &(token.generation as i64)],
                    )
                    .await
                    .map(|deleted| deleted == 1),
            };
            match written {
                Ok(true) => {
                    tracing::info!(
                        "idempotency store: a kept key end was written once the database came back"
                    );
                    return;
                }
                Ok(false) if matches!(end, End::LostClaim) => {
                    tracing::debug!(
                        "idempotency store: a claim whose answer was lost had not landed"
                    );
                    return;
                }
                Ok(false) => {
                    tracing::warn!(
                        "idempotency store: a kept key end came too late: the key was taken over"
                    );
                    return;
                }
                Err(_) => {}
            }
        }
        tracing::warn!(
            after = ?KEEP_TRYING_FOR,
            "idempotency store: a kept key end was never written; the key frees itself when its lease lapses"
        );
    });
}
