//! The strong mode on SQLite: the effect is a synchronous closure on a blocking
//! thread that holds the writer (replays are answered from the store's reader).

use std::sync::Arc;

use std::time::Instant;

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use http_body::Body;
use rusqlite::Transaction;
use tracing::Instrument;

use super::{Rollback, Transactional};
use crate::admit::{admit, Admitted};
use crate::body::{BoxError, ResponseBody};
use crate::record::StoredResponse;
use crate::respond::{self, ClaimedByLayer};
use crate::store::SqliteStore;

impl Transactional<SqliteStore> {
    /// Answers one request: refusals and replays as the layer gives them; for a free
    /// key, runs `effect` in the claim's transaction and commits its writes with the
    /// response it returns.
    ///
    /// `effect` runs on a blocking thread holding the database's writer: keep it to
    /// database work. First executions run one at a time; one that waits for the
    /// writer past [`SqliteStore::writer_wait`] is answered 503 with `Retry-After`
    /// and runs nothing. Once started, `effect` commits even if the client goes away.
    pub async fn handle<B, F>(&self, request: Request<B>, effect: F) -> Response<ResponseBody>
    where
        B: Body,
        B::Error: Into<BoxError>,
        F: FnOnce(&Transaction<'_>, &Parts, &Bytes) -> Result<StoredResponse, Rollback>
            + Send
            + 'static,
    {
        let (parts, body, claim) = match admit(&self.shared, request).await {
            Admitted::Keyed { parts, body, claim } => (parts, body, claim),
            Admitted::Refused(response) => return response,
            Admitted::Unkeyed(request) => return self.unkeyed(request, effect).await,
        };
        let under_layer = parts.extensions.get::<ClaimedByLayer>().copied();
        let (started, answer_for) = (Instant::now(), claim.clone());
        let span = tracing::debug_span!("idempotency", key = %claim.scope, method = %parts.method);
        let outcome = self
            .store
            .transact(
                claim,
                self.shared.settings.retention,
                Arc::clone(&self.shared.clock),
                move |tx| effect(tx, &parts, &body),
            )
            .instrument(span)
            .await;
        self.respond(outcome, &answer_for, under_layer, started)
    }

    async fn unkeyed<B, F>(&self, request: Request<B>, effect: F) -> Response<ResponseBody>
    where
        B: Body,
        B::Error: Into<BoxError>,
        F: FnOnce(&Transaction<'_>, &Parts, &Bytes) -> Result<StoredResponse, Rollback>
            + Send
            + 'static,
    {
        let (parts, body) = request.into_parts();
        let body = match self.read_body(body).await {
            Ok(body) => body,
            Err(refusal) => return refusal,
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
fn _assert_send(t: &Transactional<SqliteStore>) {
    fn send<T: Send>(_: T) {}
    let request = Request::new(http_body_util::Empty::<Bytes>::new());
    send(t.handle(request, |_, _, _| {
        Err(Rollback::from(rusqlite::Error::InvalidQuery))
    }));
}
