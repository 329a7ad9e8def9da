//! A store's waits cut to the caller's limit (see
//! [`idempotency_storage::limit`]), as the journal's timeout error.

use std::future::Future;
use std::time::Instant;

pub(super) use idempotency_storage::limit::Limit;

use crate::error::JournalError;

/// Runs `work` until `limit`; past it, [`JournalError::Timeout`] naming
/// `operation` and how long it waited (and `work` is dropped).
pub(super) async fn within<T>(
    limit: Limit,
    operation: &'static str,
    work: impl Future<Output = Result<T, JournalError>>,
) -> Result<T, JournalError> {
    let started = Instant::now();
    let Some(left) = limit.left(started) else {
        return work.await;
    };
    match tokio::time::timeout(left, work).await {
        Ok(result) => result,
        Err(_) => Err(JournalError::Timeout {
            operation,
            after: started.elapsed(),
        }),
    }
}
