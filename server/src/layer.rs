//! The tower layer.

use std::sync::Arc;
use std::time::Duration;

use tower_layer::Layer;

use crate::metrics::Counters;
use crate::service::Idempotency;
use crate::shared::Shared;
use crate::store::StoreError;

/// Honours `Idempotency-Key` on the routes it wraps: POST and PATCH are claimed,
/// replayed or refused; every other method passes through untouched.
///
/// Build one with [`IdempotencyLayer::builder`]; clones share the store and counters.
#[derive(Clone)]
pub struct IdempotencyLayer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for IdempotencyLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyLayer")
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

impl IdempotencyLayer {
    pub(crate) fn from_shared(shared: Shared) -> Self {
        Self {
            shared: Arc::new(shared),
        }
    }

    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// How long a claim holds before another request may take the key over
    /// ([`Builder::lease`](crate::Builder::lease)).
    pub fn lease(&self) -> Duration {
        self.shared.settings.lease
    }

    /// How long a finished key is kept, counted from the finish
    /// ([`Builder::retention`](crate::Builder::retention)).
    pub fn retention(&self) -> Duration {
        self.shared.settings.retention
    }

    /// The largest response body kept for replay
    /// ([`Builder::max_stored_body`](crate::Builder::max_stored_body)).
    pub fn max_stored_body(&self) -> usize {
        self.shared.settings.max_stored_body
    }

    /// What the layer has decided so far.
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.shared.counters)
    }

    /// Deletes the store's expired records now; returns how many.
    ///
    /// # Errors
    ///
    /// The store's, when it cannot be written.
    pub async fn prune(&self) -> Result<u64, StoreError> {
        self.shared.store.prune(self.shared.clock.now()).await
    }

    /// Prunes every `every` on the current tokio runtime until the handle is aborted.
    /// A failed prune is logged and tried again next time.
    pub fn spawn_pruner(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let layer = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match layer.prune().await {
                    Ok(pruned) => tracing::debug!(pruned, "idempotency keys pruned"),
                    Err(error) => tracing::warn!(%error, "idempotency prune failed"),
                }
            }
        })
    }
}

impl<S> Layer<S> for IdempotencyLayer {
    type Service = Idempotency<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Idempotency::new(inner, Arc::clone(&self.shared))
    }
}
