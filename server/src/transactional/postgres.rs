//! The strong mode on PostgreSQL: the effect is an async closure on the claim's
//! transaction (a connection of its own).

use std::sync::Arc;

use std::time::Instant;

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use http_body::Body;
use tokio_postgres::Transaction;
use tracing::Instrument;

use super::{Rollback, Transactional};
use crate::admit::{admit, Admitted};
use crate::body::{BoxError, ResponseBody};
use crate::respond::{self, ClaimedByLayer};
use crate::store::{EffectFuture, PostgresStore};

impl Transactional<Arc<PostgresStore>> {
    /// Answers one request: refusals and replays as the layer gives them; for a free
    /// key, runs `effect` in the claim's transaction and commits its writes with the
    /// response it returns. `effect` owns the request's head and body.
    pub async fn handle<B, F>(&self, request: Request<B>, effect: F) -> Response<ResponseBody>
    where
        B: Body,
        B::Error: Into<BoxError>,
        F: for<'t> FnOnce(&'t Transaction<'t>, Parts, Bytes) -> EffectFuture<'t, Rollback> + Send,
    {
        let (parts, body, claim) = match admit(&self.shared, request).await {
            Admitted::Keyed { parts, body, claim } => (parts, body, claim),
            Admitted::Refused(response) => return response,
            Admitted::Unkeyed(request) => {
                let (parts, body) = request.into_parts();
                let body = match self.read_body(body).await {
                    Ok(body) => body,
                    Err(refusal) => return refusal,
                };
                return match self
                    .store
                    .transact_unkeyed(move |tx| effect(tx, parts, body))
                    .await
                {
                    Ok(Ok(response) | Err(Rollback(response))) => respond::stored(response, false),
                    Err(error) => self.shared.store_unavailable(&error),
                };
            }
        };
        let under_layer = parts.extensions.get::<ClaimedByLayer>().copied();
        let (started, answer_for) = (Instant::now(), claim.clone());
        let span = tracing::debug_span!("idempotency", key = %claim.scope, method = %parts.method);
        let retention = self.shared.settings.retention;
        let outcome = self
            .store
            .transact(
                claim,
                retention,
                Arc::clone(&self.shared.clock),
                move |tx| effect(tx, parts, body),
            )
            .instrument(span)
            .await;
        self.respond(outcome, &answer_for, under_layer, started)
    }
}

/// The future `handle` returns is `Send` (axum handlers need it).
#[allow(dead_code)]
fn _assert_send(t: &Transactional<Arc<PostgresStore>>) {
    fn send<T: Send>(_: T) {}
    fn effect<'t>(_: &'t Transaction<'t>, _: Parts, _: Bytes) -> EffectFuture<'t, Rollback> {
        Box::pin(async { Err(Rollback::failed(&"never")) })
    }
    let request = Request::new(http_body_util::Empty::<Bytes>::new());
    send(t.handle(request, effect));
}
