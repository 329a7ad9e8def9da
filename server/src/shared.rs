//! The state every clone of the layer's service shares.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{HeaderName, Response};

use crate::body::ResponseBody;
use crate::clock::Clock;
use crate::decision::{answer_existing, Answer, InProgressPace, ServerErrors};
use crate::fingerprint::{Fingerprint, Fingerprinter};
use crate::metrics::Counters;
use crate::principal::PrincipalExtractor;
use crate::record::{Completion, Existing, ExistingState};
use crate::refusal::{Refusal, RefusalFormat, RefusalKind};
use crate::respond;
use crate::run_time::RunTimes;
use crate::store::{ClaimToken, Store, StoreError};

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
    /// How long handlers run here, for the 409's `Retry-After`.
    pub(crate) run_times: RunTimes,
    /// Counts 409s, so every other one gets the spread's extra second.
    in_progress_answers: AtomicU64,
}

impl Shared {
    pub(crate) fn new(
        store: Arc<dyn Store>,
        principal: Arc<dyn PrincipalExtractor>,
        fingerprinter: Arc<dyn Fingerprinter>,
        format: Arc<dyn RefusalFormat>,
        clock: Arc<dyn Clock>,
        settings: Settings,
    ) -> Self {
        Self {
            store,
            principal,
            fingerprinter,
            format,
            clock,
            settings,
            counters: Arc::new(Counters::default()),
            run_times: RunTimes::default(),
            in_progress_answers: AtomicU64::new(0),
        }
    }

    fn in_progress_pace(&self) -> InProgressPace {
        let n = self.in_progress_answers.fetch_add(1, Ordering::Relaxed);
        InProgressPace {
            lease: self.settings.lease,
            typical_run: self.run_times.typical(),
            extra_second: n % 2 == 1,
        }
    }

    pub(crate) fn refuse(
        &self,
        kind: RefusalKind,
        retry_after: Option<Duration>,
    ) -> Response<ResponseBody> {
        self.counters.refused(kind);
        tracing::debug!(refusal = kind.slug(), "request refused");
        respond::refusal(self.format.as_ref(), Refusal::new(kind, retry_after))
    }

    /// The answer for a key another request claimed: a replay or a refusal.
    pub(crate) fn answer(
        &self,
        existing: &Existing,
        fingerprint: &Fingerprint,
        now: SystemTime,
    ) -> Response<ResponseBody> {
        let pace = match existing.state {
            ExistingState::InProgress { .. } | ExistingState::Uncommitted => {
                self.in_progress_pace()
            }
            // Not read for a finished key; the spread's count is left alone.
            ExistingState::Completed(_) => InProgressPace {
                lease: self.settings.lease,
                typical_run: None,
                extra_second: false,
            },
        };
        match answer_existing(existing, fingerprint, now, pace) {
            Answer::Replay(stored) => {
                self.counters.replayed();
                tracing::debug!(status = stored.status.as_u16(), "stored response replayed");
                respond::stored(stored, true)
            }
            Answer::Refuse(refusal) => self.refuse(refusal.kind(), refusal.retry_after()),
        }
    }

    /// The store failed before anything ran: 503, retry in a second.
    pub(crate) fn store_unavailable(&self, error: &StoreError) -> Response<ResponseBody> {
        self.counters.store_error();
        tracing::warn!(%error, "idempotency store unavailable; nothing executed");
        self.refuse(RefusalKind::StoreUnavailable, Some(Duration::from_secs(1)))
    }

    pub(crate) async fn release(&self, token: &ClaimToken) {
        match self.store.release(token).await {
            Ok(true) => self.counters.released(),
            Ok(false) => self.counters.lost_claim(),
            Err(error) => {
                self.counters.store_error();
                tracing::warn!(
                    %error,
                    "key not released now; unless the store writes the release later (PostgresStore keeps trying), the key frees itself when its lease lapses"
                );
            }
        }
    }

    pub(crate) async fn complete(&self, token: &ClaimToken, completion: Completion) {
        let expires_at = self.clock.now() + self.settings.retention;
        match self.store.complete(token, completion, expires_at).await {
            Ok(true) => {}
            Ok(false) => {
                self.counters.lost_claim();
                tracing::warn!(
                    "the claim lapsed before the handler finished; its result is not kept"
                );
            }
            Err(error) => {
                self.counters.store_error();
                tracing::warn!(
                    %error,
                    "result not stored now; unless the store writes it later (PostgresStore keeps trying), the key frees itself when its lease lapses"
                );
            }
        }
    }
}
