//! The state every clone of the layer's service shares.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;

use crate::clock::Clock;
use crate::decision::ServerErrors;
use crate::fingerprint::Fingerprinter;
use crate::metrics::Counters;
use crate::principal::PrincipalExtractor;
use crate::refusal::RefusalFormat;
use crate::store::Store;

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
