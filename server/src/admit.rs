//! Admission, shared by the layer and the strong mode: the key read and checked, the
//! principal found, the body read under its limit and fingerprinted.

use bytes::Bytes;
use http::request::Parts;
use http::{Request, Response};
use http_body::Body;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::body::{BoxError, ResponseBody};
use crate::key::{parse_key, IDEMPOTENCY_KEY};
use crate::refusal::RefusalKind;
use crate::scope::ScopeId;
use crate::shared::Shared;
use crate::store::ClaimRequest;

/// Where a request stands after admission.
pub(crate) enum Admitted<B> {
    /// No key, and none required: serve it as it came.
    Unkeyed(Request<B>),
    /// Refused before any claim.
    Refused(Response<ResponseBody>),
    /// Ready to claim: the head, the whole body, and the claim to make.
    Keyed {
        parts: Parts,
        body: Bytes,
        claim: ClaimRequest,
    },
}

pub(crate) async fn admit<B>(shared: &Shared, request: Request<B>) -> Admitted<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    let settings = &shared.settings;
    let (parts, body) = request.into_parts();
    let refuse = |kind| Admitted::Refused(shared.refuse(kind, None));
    let mut keys = parts.headers.get_all(IDEMPOTENCY_KEY).iter();
    let (first, second) = (keys.next(), keys.next());
    if second.is_some() {
        // Two keys on one request: neither can be chosen safely.
        return refuse(RefusalKind::InvalidKey);
    }
    let key = match first {
        None if !settings.key_required => {
            return Admitted::Unkeyed(Request::from_parts(parts, body))
        }
        None => return refuse(RefusalKind::MissingKey),
        Some(value) => match parse_key(value, settings.max_key_len) {
            Ok(key) => key,
            Err(_) => return refuse(RefusalKind::InvalidKey),
        },
    };
    let Some(principal) = shared.principal.principal(&parts) else {
        return refuse(RefusalKind::NoPrincipal);
    };
    let body = match Limited::new(body, settings.max_request_body)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(error) if error.is::<LengthLimitError>() => return refuse(RefusalKind::BodyTooLarge),
        Err(_) => return refuse(RefusalKind::UnreadableBody),
    };
    let claim = ClaimRequest {
        scope: ScopeId::new(&principal, &parts.method, parts.uri.path(), &key),
        fingerprint: shared.fingerprinter.fingerprint(&parts, &body),
        now: shared.clock.now(),
        lease: settings.lease,
    };
    Admitted::Keyed { parts, body, claim }
}
