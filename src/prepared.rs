//! An intent decided but not sent: its key, deadline, headers and body bytes, as
//! `send()` would decide them, for writing the intent down to send later (an
//! outbox written in the caller's own database transaction).

use std::time::Duration;

use http::HeaderName;

use crate::idempotency::IdempotencyKey;
use crate::ids::RequestId;
use crate::write_ahead::IntentStart;

/// What [`RequestBuilder::prepare`](crate::RequestBuilder::prepare) decided:
/// the request with its idempotency key header in place, its body in memory if
/// it can be, and its deadline. Read it through [`start`](Self::start), the same
/// view a [`WriteAhead`](crate::WriteAhead) gets before the first byte.
#[derive(Debug)]
pub struct PreparedIntent {
    intent_id: RequestId,
    key: Option<IdempotencyKey>,
    key_header: HeaderName,
    request: reqwest::Request,
    deadline: Option<Duration>,
}

impl PreparedIntent {
    pub(crate) fn new(
        key: Option<IdempotencyKey>,
        key_header: HeaderName,
        request: reqwest::Request,
        deadline: Option<Duration>,
    ) -> Self {
        Self {
            intent_id: RequestId::generate(),
            key,
            key_header,
            request,
            deadline,
        }
    }

    /// The intent as a write-ahead sees it before its first byte: key, method,
    /// URL, headers (the key header included), body bytes and deadline.
    pub fn start(&self) -> IntentStart<'_> {
        IntentStart {
            intent_id: self.intent_id,
            key: self.key.as_ref(),
            key_header: &self.key_header,
            request: &self.request,
            body: self.request.body().and_then(reqwest::Body::as_bytes),
            deadline: self.deadline,
        }
    }
}
