//! Every plain setting of a policy and its default, declared once.

use std::time::Duration;

use crate::attempt_timeout::AttemptTimeout;
use crate::backoff::Backoff;
use crate::classify::StatusSet;
use crate::hedge::Hedging;
use crate::idempotency::{KeyAttachment, KeyFormat};

/// Default number of attempts (1 + 2 retries), as the AWS SDK's standard mode.
pub(crate) const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// Largest `max_attempts` accepted: more turns an outage into a storm.
pub(crate) const MAX_ATTEMPTS_LIMIT: u32 = 50;
/// Default backoff: full jitter, base 100 ms, cap 2 s.
pub(crate) const DEFAULT_BACKOFF: Backoff =
    Backoff::full_jitter(Duration::from_millis(100), Duration::from_secs(2));
/// Default deadline for a whole intent.
pub(crate) const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);
/// Default longest `Retry-After` the client will wait for.
pub(crate) const DEFAULT_RETRY_AFTER_CEILING: Duration = Duration::from_secs(30);
/// Default idempotency key header.
pub(crate) const DEFAULT_KEY_HEADER: &str = "idempotency-key";
/// Default request id header.
pub(crate) const DEFAULT_REQUEST_ID_HEADER: &str = "x-request-id";
/// Longest Retry-After ceiling accepted: no intent sleeps longer than this.
pub(crate) const MAX_RETRY_AFTER_CEILING: Duration = Duration::from_secs(3600);
/// Default shortest pause after a 409 "same key still in progress".
pub(crate) const DEFAULT_CONFLICT_DELAY: Duration = Duration::from_secs(1);
/// Longest backoff delay accepted.
pub(crate) const MAX_BACKOFF_DELAY: Duration = Duration::from_secs(3600);

/// Every plain setting of a policy, declared once: the builder holds one, a built
/// policy keeps it (for [`RetryPolicy::to_builder`]), and the defaults live in its
/// `Default`. The plug-ins (classifier, budget, gates, observers, sleeper, clock)
/// are shared objects and travel beside it.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) deadline: Option<Duration>,
    pub(crate) attempt_timeout: AttemptTimeout,
    pub(crate) retry_after_ceiling: Duration,
    pub(crate) conflict_delay: Duration,
    pub(crate) transient_statuses: StatusSet,
    pub(crate) retry_conflict_when_keyed: bool,
    pub(crate) key_attachment: KeyAttachment,
    pub(crate) key_format: KeyFormat,
    pub(crate) key_header: String,
    pub(crate) request_id_header: String,
    pub(crate) server_hint_header: Option<String>,
    pub(crate) redact_query_params: Vec<String>,
    pub(crate) rng_seed: Option<u64>,
    pub(crate) hedging: Option<Hedging>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            backoff: DEFAULT_BACKOFF,
            deadline: Some(DEFAULT_DEADLINE),
            attempt_timeout: AttemptTimeout::Implied,
            retry_after_ceiling: DEFAULT_RETRY_AFTER_CEILING,
            conflict_delay: DEFAULT_CONFLICT_DELAY,
            transient_statuses: StatusSet::transient_default(),
            retry_conflict_when_keyed: true,
            key_attachment: KeyAttachment::UnsafeMethods,
            key_format: KeyFormat::Token,
            key_header: DEFAULT_KEY_HEADER.to_owned(),
            request_id_header: DEFAULT_REQUEST_ID_HEADER.to_owned(),
            server_hint_header: None,
            redact_query_params: Vec::new(),
            rng_seed: None,
            hedging: None,
        }
    }
}
