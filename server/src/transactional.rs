//! The strong mode over HTTP: admission as in the layer, then the claim, the
//! handler's own writes and the stored response in one SQLite transaction.
//!
//! The layer alone cannot promise one effect: a process that dies mid-handler leaves a
//! claim that lapses, and the retry executes again. Here nothing is visible until the
//! transaction commits, so a crash leaves no claim, no effect and no response (the
//! retry executes), or all three (the retry replays).

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body::Body;
use rusqlite::Transaction;
use tracing::Instrument;

use crate::admit::{admit, Admitted};
use crate::body::{BoxError, ResponseBody};
use crate::layer::IdempotencyLayer;
use crate::record::StoredResponse;
use crate::refusal::RefusalKind;
use crate::respond;
use crate::shared::Shared;
use crate::store::{SqliteStore, Transacted};

/// Routes whose effect lives in a SQLite database, answered in the strong mode.
/// Made by [`IdempotencyLayer::transactional`]; cheap to clone.
#[derive(Clone)]
pub struct Transactional {
    shared: Arc<Shared>,
    store: SqliteStore,
}

impl std::fmt::Debug for Transactional {
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

impl From<rusqlite::Error> for Rollback {
    /// A failed statement: 500, nothing committed.
    fn from(error: rusqlite::Error) -> Self {
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

impl IdempotencyLayer {
    /// The strong mode for routes whose effect is written to `store`'s database, with
    /// this layer's settings (principal, limits, fingerprint, refusal format,
    /// retention). Put these routes outside the layer.
    pub fn transactional(&self, store: SqliteStore) -> Transactional {
        Transactional {
            shared: Arc::clone(self.shared()),
            store,
        }
    }
}

impl Transactional {
    /// Answers one request: refusals and replays as the layer gives them; for a free
    /// key, runs `effect` in the claim's transaction and commits its writes with the
    /// response it returns.
    ///
    /// `effect` runs on a blocking thread holding the database's write lock: keep it
    /// to database work.
    pub async fn handle<B, F>(&self, request: Request<B>, effect: F) -> Response<ResponseBody>
    where
        B: Body,
        B::Error: Into<BoxError>,
        F: FnOnce(&Transaction<'_>, &Parts, &Bytes) -> Result<StoredResponse, Rollback>
            + Send
            + 'static,
    {
        let shared = &self.shared;
        let (parts, body, claim) = match admit(shared, request).await {
            Admitted::Keyed { parts, body, claim } => (parts, body, claim),
            Admitted::Refused(response) => return response,
            Admitted::Unkeyed(request) => return self.unkeyed(request, effect).await,
        };
        let (fingerprint, now) = (claim.fingerprint.clone(), claim.now);
        let span = tracing::debug_span!("idempotency", key = %claim.scope, method = %parts.method);
        let outcome = self
            .store
            .transact(claim, shared.settings.retention, move |tx| {
                effect(tx, &parts, &body)
            })
            .instrument(span)
            .await;
        match outcome {
            Ok(Transacted::Executed(response)) => {
                shared.counters.claimed(false);
                respond::stored(response, false)
            }
            Ok(Transacted::Existing(existing)) => shared.answer(&existing, &fingerprint, now),
            Ok(Transacted::RolledBack(Rollback(response))) => {
                shared.counters.released();
                respond::stored(response, false)
            }
            Err(error) => shared.store_unavailable(&error),
        }
    }

    async fn unkeyed<B, F>(&self, request: Request<B>, effect: F) -> Response<ResponseBody>
    where
        B: Body,
        B::Error: Into<BoxError>,
        F: FnOnce(&Transaction<'_>, &Parts, &Bytes) -> Result<StoredResponse, Rollback>
            + Send
            + 'static,
    {
        use http_body_util::{BodyExt, LengthLimitError, Limited};
        let (parts, body) = request.into_parts();
        let limit = self.shared.settings.max_request_body;
        let body = match Limited::new(body, limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<LengthLimitError>() => {
                return self.shared.refuse(RefusalKind::BodyTooLarge, None)
            }
            Err(_) => return self.shared.refuse(RefusalKind::UnreadableBody, None),
        };
        match self
            .store
            .transact_unkeyed(move |tx| effect(tx, &parts, &body))
            .await
        {
            Ok(Ok(response) | Err(Rollback(response))) => respond::stored(response, false),
            Err(error) => self.shared.store_unavailable(&error),
        }
    }
}

/// The future `handle` returns is `Send` (axum handlers need it).
#[allow(dead_code)]
fn _assert_send(t: &Transactional) {
    fn send<T: Send>(_: T) {}
    let request = Request::new(http_body_util::Empty::<Bytes>::new());
    send(t.handle(request, |_, _, _| {
        Err(Rollback::from(rusqlite::Error::InvalidQuery))
    }));
}
