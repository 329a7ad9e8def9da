//! Honour `Idempotency-Key` on the server: one request executes per key; a retry of a
//! finished key gets the stored response, marked `Idempotent-Replayed: true`.
//!
//! A tower layer (so it serves axum, hyper and anything built on tower) for the
//! non-idempotent methods (POST, PATCH): the key is claimed atomically in a
//! [`Store`]; a concurrent retry of a key in progress gets 409 with `Retry-After`; a key
//! reused with another request fingerprint gets 422; a missing key gets 400. Refusals
//! are `application/problem+json` as the IETF `Idempotency-Key` draft asks, or the
//! shape your API already uses ([`RefusalFormat`]). Keys are scoped to the caller's
//! [`Principal`] and to the endpoint (method and path).
//!
//! # Examples
//!
//! ```
//! use axum::{routing::post, Router};
//! use tower_idempotency::{IdempotencyLayer, MemoryStore, SinglePrincipal};
//!
//! # fn main() -> Result<(), tower_idempotency::BuildError> {
//! let idempotency = IdempotencyLayer::builder(MemoryStore::new())
//!     .principal(SinglePrincipal)
//!     .build()?;
//! let app: Router = Router::new()
//!     .route("/payments", post(|body: String| async move { format!("paid {body}") }))
//!     .layer(idempotency);
//! # let _ = app;
//! # Ok(())
//! # }
//! ```
//!
//! # Defaults
//!
//! The settings and their defaults are listed on [`Builder`].
//!
//! # The boundary
//!
//! The layer keeps a claim and a response; it cannot see the handler's effects. If the
//! process dies mid-handler, the claim stays until its lease lapses, and then the
//! retry executes the handler again: an effect outside the store (a charge sent to a
//! card network, an email) can happen twice. At-least-once plus deduplication is what
//! a layer can give. Where the effect must happen once, use the strong mode
//! (`IdempotencyLayer::transactional`, features `sqlite` and `postgres`): the claim,
//! the handler's own database writes and the stored response commit in one
//! transaction, so a crash leaves all of them or none.
//!
//! # Stores
//!
//! [`MemoryStore`] (tests, one process); `SqliteStore` (feature `sqlite`, one host,
//! an owner-only file in WAL mode); `PostgresStore` (feature `postgres`, a fleet).
//! Each claims with one atomic statement or lock, never a read followed by a write.
//!
//! # Keys that a crash cannot strand
//!
//! An in-progress claim holds for a lease ([`Builder::lease`]); after it lapses the
//! next request with the key takes it over (a late result from the old holder is
//! dropped, never overwriting its successor's). A finished key is kept for the
//! retention ([`Builder::retention`]); [`IdempotencyLayer::prune`] and
//! [`IdempotencyLayer::spawn_pruner`] delete expired records. What is kept for a 5xx
//! is [`ServerErrors`].
//!
//! # Observability
//!
//! A `debug` span `idempotency` per keyed request, with the first 8 hex digits of the
//! key's scoped digest (never the key); [`Counters`] for claims, replays, conflicts
//! and mismatches, also recorded through the `metrics` facade with feature `metrics`
//! (the names: [`METRIC_NAMES`]).

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(missing_debug_implementations, rust_2018_idioms, unreachable_pub)]
// docs.rs builds with `--cfg docsrs`: `doc_cfg` badges every `#[cfg(feature)]` item
// with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod admit;
mod body;
mod builder;
mod capture;
mod clock;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod decision;
mod fingerprint;
// Its pure rules are `pub` for `model_rules`.
#[cfg_attr(not(feature = "unstable-model-rules"), allow(unreachable_pub))]
#[cfg_attr(
    feature = "unstable-model-rules",
    allow(missing_docs, missing_debug_implementations)
)]
mod key;
mod layer;
mod metrics;
mod principal;
mod record;
mod refusal;
mod respond;
mod run_time;
mod scope;
mod service;
mod shared;
mod store;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod transactional;

#[cfg(feature = "unstable-model-rules")]
#[doc(hidden)]
pub mod model_rules;

pub use body::{BoxError, ResponseBody};
pub use builder::{BuildError, Builder, MAX_KEY_LEN_LIMIT};
pub use clock::{Clock, ManualClock, SystemClock};
pub use decision::{ServerErrors, MAX_IN_PROGRESS_RETRY_AFTER};
pub use fingerprint::{Fingerprint, Fingerprinter, Sha256Fingerprinter};
pub use key::IDEMPOTENCY_KEY;
pub use layer::IdempotencyLayer;
pub use metrics::{CounterSnapshot, Counters, METRIC_NAMES};
pub use principal::{Principal, PrincipalExtractor, SinglePrincipal};
pub use record::{Completion, Existing, ExistingState, NotStored, StoredResponse};
pub use refusal::{ProblemJson, Refusal, RefusalFormat, RefusalKind, RenderedBody};
pub use respond::IDEMPOTENT_REPLAYED;
/// The SQLite driver the store and the strong mode's effects use (one version for both).
#[cfg(feature = "sqlite")]
pub use rusqlite;
pub use scope::ScopeId;
pub use service::{Idempotency, ResponseFuture};
pub use store::{
    Claim, ClaimRequest, ClaimToken, MemoryStore, Store, StoreError, StoreFuture, Transacted,
};
#[cfg(feature = "postgres")]
pub use store::{EffectFuture, PostgresStore, MAX_POSTGRES_TRANSACTIONS};
#[cfg(feature = "sqlite")]
pub use store::{SqliteStore, SqliteStoreBuilder, DEFAULT_BUSY_TIMEOUT};
/// The PostgreSQL driver the store and the strong mode's effects use (one version for both).
#[cfg(feature = "postgres")]
pub use tokio_postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use transactional::{Rollback, Transactional};

#[allow(dead_code)]
fn _assert_impls() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<IdempotencyLayer>();
    send_sync::<MemoryStore>();
    send_sync::<StoreError>();
}
