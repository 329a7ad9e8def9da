//! The strong mode over HTTP: admission as in the layer, then the claim, the
//! handler's own writes and the stored response in one database transaction (SQLite
//! or PostgreSQL).
//!
//! The layer alone cannot promise one effect: a process that dies mid-handler leaves a
//! claim that lapses, and the retry executes again. Here nothing is visible until the
//! transaction commits, so a crash leaves no claim, no effect and no response (the
//! retry executes), or all three (the retry replays).

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

mod misuse;

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::body::{BoxError, ResponseBody};
use crate::layer::IdempotencyLayer;
use crate::record::{ExistingState, StoredResponse};
use crate::refusal::RefusalKind;
use crate::respond::{self, ClaimedByLayer};
use crate::shared::Shared;
use crate::store::{ClaimRequest, StoreError, Transacted};

/// Routes whose effect lives in the database of store `S` (a [`SqliteStore`] or an
/// `Arc<`[`PostgresStore`]`>`), answered in the strong mode. Made by
/// [`IdempotencyLayer::transactional`]; cheap to clone.
///
/// [`SqliteStore`]: crate::SqliteStore
/// [`PostgresStore`]: crate::PostgresStore
#[derive(Clone)]
pub struct Transactional<S> {
    shared: Arc<Shared>,
    store: S,
}

impl<S: std::fmt::Debug> std::fmt::Debug for Transactional<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transactional")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// The effect's answer without committing: its writes and the claim roll back, the
/// key stays free, and this response is sent (not stored).
#[derive(Debug)]
pub struct Rollback(pub StoredResponse);

impl Rollback {
    /// A failed statement: 500, nothing committed.
    fn failed(error: &dyn std::fmt::Display) -> Self {
        tracing::warn!(%error, "effect failed; its transaction rolled back");
        Rollback(StoredResponse {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            headers: vec![(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            )],
            body: Bytes::from_static(
                b"the operation failed and was rolled back; retry with the same key",
            ),
        })
    }
}

#[cfg(feature = "sqlite")]
impl From<rusqlite::Error> for Rollback {
    /// A failed statement: 500, nothing committed.
    fn from(error: rusqlite::Error) -> Self {
        Rollback::failed(&error)
    }
}

#[cfg(feature = "postgres")]
impl From<tokio_postgres::Error> for Rollback {
    /// A failed statement: 500, nothing committed.
    fn from(error: tokio_postgres::Error) -> Self {
        Rollback::failed(&error)
    }
}

impl IdempotencyLayer {
    /// The strong mode for routes whose effect is written to `store`'s database, with
    /// this layer's settings (principal, limits, fingerprint, refusal format,
    /// retention). Put these routes outside the layer: under a layer over the same
    /// store, the route finds its key claimed by the layer, and answers `500` on the
    /// first request, naming the fix, before any effect (the layer frees the key). Under
    /// a layer over another store it works: the layer keeps the route's response too.
    pub fn transactional<S>(&self, store: S) -> Transactional<S> {
        Transactional {
            shared: Arc::clone(self.shared()),
            store,
        }
    }
}

impl<S> Transactional<S> {
    /// The response for what a strong-mode transaction did. `under_layer` is the
    /// claim a layer around this route made for the request, if one did.
    fn respond(
        &self,
        outcome: Result<Transacted<Rollback>, StoreError>,
        claim: &ClaimRequest,
        under_layer: Option<ClaimedByLayer>,
        started: Instant,
    ) -> Response<ResponseBody> {
        let shared = &self.shared;
        match outcome {
            Ok(Transacted::Executed(response)) => {
                shared.counters.claimed(false);
                shared.run_times.record(started.elapsed());
                respond::stored(response, false)
            }
            Ok(Transacted::Existing(existing))
                if under_layer == Some(ClaimedByLayer(claim.scope))
                    && matches!(existing.state, ExistingState::InProgress { .. }) =>
            {
                misuse::under_a_layer_over_this_store()
            }
            Ok(Transacted::Existing(existing)) => {
                shared.answer(&existing, &claim.fingerprint, claim.now)
            }
            Ok(Transacted::RolledBack(Rollback(response))) => {
                shared.counters.released();
                respond::stored(response, false)
            }
            Err(error) => shared.store_unavailable(&error),
        }
    }

    /// A keyless request's body (the route's key is optional and absent), or the refusal.
    async fn read_body<B>(&self, body: B) -> Result<Bytes, Response<ResponseBody>>
    where
        B: Body,
        B::Error: Into<BoxError>,
    {
        match Limited::new(body, self.shared.settings.max_request_body)
            .collect()
            .await
        {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(e) if e.is::<LengthLimitError>() => {
                Err(self.shared.refuse(RefusalKind::BodyTooLarge, None))
            }
            Err(_) => Err(self.shared.refuse(RefusalKind::UnreadableBody, None)),
        }
    }
}
