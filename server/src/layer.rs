//! The tower layer and the state every clone of its service shares.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;
use tower_layer::Layer;

use crate::builder::Builder;
use crate::clock::Clock;
use crate::decision::ServerErrors;
use crate::fingerprint::Fingerprinter;
use crate::metrics::Counters;
use crate::principal::PrincipalExtractor;
use crate::refusal::RefusalFormat;
use crate::service::Idempotency;
use crate::store::{Store, StoreError};

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

#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) key_required: bool,
    pub(crate) max_key_len: usize,
    pub(crate) lease: Duration,
    pub(crate) retention: Duration,
    pub(crate) max_request_body: usize,
    pub(crate) max_stored_body: usize,
    pub(crate) replayed_headers: Vec<HeaderName>,
    pub(crate) server_errors: ServerErrors,
}

pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) principal: Arc<dyn PrincipalExtractor>,
    pub(crate) fingerprinter: Arc<dyn Fingerprinter>,
    pub(crate) format: Arc<dyn RefusalFormat>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) settings: Settings,
    pub(crate) counters: Arc<Counters>,
}

impl IdempotencyLayer {
    /// Starts a layer over `store`; see [`Builder`] for the settings and defaults.
    pub fn builder(store: impl Store) -> Builder {
        Builder::new(Arc::new(store))
    }

    pub(crate) fn from_shared(shared: Shared) -> Self {
        Self {
            shared: Arc::new(shared),
        }
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
