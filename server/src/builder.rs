//! Building the layer: every setting validated once, in [`Builder::build`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;

use crate::clock::{Clock, SystemClock};
use crate::decision::ServerErrors;
use crate::fingerprint::{Fingerprinter, Sha256Fingerprinter};
use crate::layer::IdempotencyLayer;
use crate::principal::PrincipalExtractor;
use crate::refusal::{ProblemJson, RefusalFormat};
use crate::shared::{Settings, Shared};
use crate::store::Store;

/// The longest key a layer may be configured to accept.
pub const MAX_KEY_LEN_LIMIT: usize = 1024;

/// Why [`Builder::build`] refused the settings. Its `Debug` is its message, so that
/// `?` in a `main` that returns `Result<(), Box<dyn Error>>` prints the fix, not only
/// the variant's name.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No principal extractor was given.
    #[error("no principal extractor: call .principal(...) (or .principal(SinglePrincipal) for a single-caller service)")]
    NoPrincipal,
    /// The maximum key length is 0 or above [`MAX_KEY_LEN_LIMIT`].
    #[error("max_key_len must be 1..={MAX_KEY_LEN_LIMIT}, got {0}")]
    KeyLength(usize),
    /// The lease is zero.
    #[error("the lease must be longer than zero")]
    ZeroLease,
    /// The retention is shorter than the lease (a finished key would expire before a
    /// retry that waited out a 409 could see it).
    #[error("the retention ({retention:?}) must be at least the lease ({lease:?})")]
    RetentionShorterThanLease {
        /// The retention given.
        retention: Duration,
        /// The lease given.
        lease: Duration,
    },
}

impl fmt::Debug for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Settings for an [`IdempotencyLayer`]; see [`IdempotencyLayer::builder`].
///
/// # Default
///
/// | setting | default |
/// |---|---|
/// | [`key_required`](Self::key_required) | `true` (400 without a key) |
/// | [`max_key_len`](Self::max_key_len) | 255 characters (Stripe's limit) |
/// | [`lease`](Self::lease) | 60 s (a 409 asks back in 1–2 s for a short handler, at most 10 s) |
/// | [`retention`](Self::retention) | 24 h from the finish (Stripe keeps keys at least 24 h) |
/// | [`max_request_body`](Self::max_request_body) | 1 MiB |
/// | [`max_stored_body`](Self::max_stored_body) | 1 MiB |
/// | [`replayed_headers`](Self::replayed_headers) | `content-type`, `location` |
/// | [`server_errors`](Self::server_errors) | [`ServerErrors::Store`] |
/// | [`fingerprinter`](Self::fingerprinter) | [`Sha256Fingerprinter::new`] |
/// | [`refusal_format`](Self::refusal_format) | [`ProblemJson::new`] |
/// | [`clock`](Self::clock) | [`SystemClock`] |
pub struct Builder {
    store: Arc<dyn Store>,
    principal: Option<Arc<dyn PrincipalExtractor>>,
    fingerprinter: Arc<dyn Fingerprinter>,
    format: Arc<dyn RefusalFormat>,
    clock: Arc<dyn Clock>,
    settings: Settings,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl IdempotencyLayer {
    /// Starts a layer over `store`; see [`Builder`] for the settings and defaults.
    pub fn builder(store: impl Store) -> Builder {
        Builder::new(Arc::new(store))
    }
}

impl Builder {
    fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            principal: None,
            fingerprinter: Arc::new(Sha256Fingerprinter::new()),
            format: Arc::new(ProblemJson::new()),
            clock: Arc::new(SystemClock),
            settings: Settings {
                key_required: true,
                max_key_len: 255,
                lease: Duration::from_secs(60),
                retention: Duration::from_secs(24 * 60 * 60),
                max_request_body: 1 << 20,
                max_stored_body: 1 << 20,
                replayed_headers: vec![http::header::CONTENT_TYPE, http::header::LOCATION],
                server_errors: ServerErrors::Store,
            },
        }
    }

    /// Finds each request's principal (required; keys are scoped to it).
    pub fn principal(mut self, extractor: impl PrincipalExtractor) -> Self {
        self.principal = Some(Arc::new(extractor));
        self
    }

    /// Whether a request without a key is refused (400) or passed to the handler.
    pub fn key_required(mut self, required: bool) -> Self {
        self.settings.key_required = required;
        self
    }

    /// The longest key accepted, in characters (1..=[`MAX_KEY_LEN_LIMIT`]).
    pub fn max_key_len(mut self, len: usize) -> Self {
        self.settings.max_key_len = len;
        self
    }

    /// How long a claim holds before another request may take the key over. Make it
    /// longer than the handler can run: a lease that lapses mid-handler lets a retry
    /// execute concurrently. It bounds how long a crashed holder strands its key, not
    /// how long a duplicate is told to wait: a 409's `Retry-After` is the handler's
    /// estimated time left (from the handlers that finished here), spread over one
    /// more second, at least 1 s and at most [`MAX_IN_PROGRESS_RETRY_AFTER`](crate::MAX_IN_PROGRESS_RETRY_AFTER)
    /// and the lease's rest.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.settings.lease = lease;
        self
    }

    /// How long a finished key is kept (and replayed) before it may be pruned, counted
    /// from the finish in every mode and store.
    pub fn retention(mut self, retention: Duration) -> Self {
        self.settings.retention = retention;
        self
    }

    /// The largest request body read to fingerprint it; a larger one is refused (413).
    pub fn max_request_body(mut self, bytes: usize) -> Self {
        self.settings.max_request_body = bytes;
        self
    }

    /// The largest response body kept for replay; a larger one is passed on whole and
    /// recorded as not stored (its retries get 410).
    pub fn max_stored_body(mut self, bytes: usize) -> Self {
        self.settings.max_stored_body = bytes;
        self
    }

    /// The response headers kept and replayed with the status and body.
    pub fn replayed_headers(mut self, headers: impl IntoIterator<Item = HeaderName>) -> Self {
        self.settings.replayed_headers = headers.into_iter().collect();
        self
    }

    /// What is kept when the handler answers 5xx.
    pub fn server_errors(mut self, policy: ServerErrors) -> Self {
        self.settings.server_errors = policy;
        self
    }

    /// What goes into a request's fingerprint, and how it is hashed.
    pub fn fingerprinter(mut self, fingerprinter: impl Fingerprinter) -> Self {
        self.fingerprinter = Arc::new(fingerprinter);
        self
    }

    /// The body shape of refusals.
    pub fn refusal_format(mut self, format: impl RefusalFormat) -> Self {
        self.format = Arc::new(format);
        self
    }

    /// The wall clock for leases and retention.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The layer.
    ///
    /// # Errors
    ///
    /// [`BuildError::NoPrincipal`] without a principal extractor;
    /// [`BuildError::KeyLength`] for a key length of 0 or above 1024;
    /// [`BuildError::ZeroLease`]; [`BuildError::RetentionShorterThanLease`].
    pub fn build(self) -> Result<IdempotencyLayer, BuildError> {
        let s = &self.settings;
        let principal = self.principal.ok_or(BuildError::NoPrincipal)?;
        if s.max_key_len == 0 || s.max_key_len > MAX_KEY_LEN_LIMIT {
            return Err(BuildError::KeyLength(s.max_key_len));
        }
        if s.lease.is_zero() {
            return Err(BuildError::ZeroLease);
        }
        if s.retention < s.lease {
            return Err(BuildError::RetentionShorterThanLease {
                retention: s.retention,
                lease: s.lease,
            });
        }
        Ok(IdempotencyLayer::from_shared(Shared::new(
            self.store,
            principal,
            self.fingerprinter,
            self.format,
            self.clock,
            self.settings,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryStore, SinglePrincipal};

    fn builder() -> Builder {
        IdempotencyLayer::builder(MemoryStore::new()).principal(SinglePrincipal)
    }

    /// What `fn main() -> Result<(), Box<dyn Error>>` prints when `?` meets the error
    /// (its `Debug`): the fix, not a bare `NoPrincipal`.
    #[test]
    fn leaving_the_principal_out_names_the_fix_wherever_it_is_printed() {
        let error = IdempotencyLayer::builder(MemoryStore::new())
            .build()
            .expect_err("no principal");
        let boxed: Box<dyn std::error::Error> = Box::new(error);
        for printed in [format!("Error: {boxed:?}"), boxed.to_string()] {
            assert!(printed.contains(".principal(SinglePrincipal)"), "{printed}");
        }
    }

    #[test]
    fn invalid_settings_are_refused() {
        let s = Duration::from_secs(1);
        #[rustfmt::skip]
        let cases: Vec<(&str, Builder, BuildError)> = vec![
            ("no principal", IdempotencyLayer::builder(MemoryStore::new()), BuildError::NoPrincipal),
            ("key length 0", builder().max_key_len(0), BuildError::KeyLength(0)),
            ("key length 1025", builder().max_key_len(1025), BuildError::KeyLength(1025)),
            ("zero lease", builder().lease(Duration::ZERO), BuildError::ZeroLease),
            ("retention < lease", builder().lease(10 * s).retention(9 * s), BuildError::RetentionShorterThanLease { retention: 9 * s, lease: 10 * s }),
        ];
        for (name, b, want) in cases {
            assert_eq!(b.build().err(), Some(want), "{name}");
        }
        assert!(builder()
            .max_key_len(1024)
            .lease(s)
            .retention(s)
            .build()
            .is_ok());
    }
}
