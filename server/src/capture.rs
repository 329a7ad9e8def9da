//! Keeping a response while passing it on: read its body whole when it is small and
//! finite, otherwise hand the client every byte unchanged and keep only that it was
//! not stored (never a truncated copy).

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use http::{HeaderName, Response};
use http_body::{Body, Frame};
use http_body_util::BodyExt;

use crate::body::{boxed, full, BoxError, Prefixed, ResponseBody};
use crate::decision::{body_plan, BodyPlan};
use crate::record::{NotStored, StoredResponse};

/// What became of a response the layer tried to keep.
pub(crate) enum Captured {
    Stored(StoredResponse),
    NotStored(NotStored),
}

pub(crate) async fn capture<B>(
    response: Response<B>,
    limit: usize,
    replayed_headers: &[HeaderName],
) -> (Response<ResponseBody>, Captured)
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let (parts, body) = response.into_parts();
    let hint = body.size_hint();
    if let BodyPlan::PassThrough(reason) = body_plan(hint.lower(), hint.upper(), limit) {
        return (
            Response::from_parts(parts, boxed(body)),
            Captured::NotStored(reason),
        );
    }
    let mut body = boxed(body);
    let mut read = VecDeque::new();
    let mut len = 0usize;
    let stopped = loop {
        match body.frame().await {
            None => break None,
            Some(Err(error)) => break Some((NotStored::Failed, Some(error))),
            Some(Ok(frame)) => {
                let is_data = frame.is_data();
                len += frame.data_ref().map_or(0, Bytes::len);
                read.push_back(frame);
                if !is_data {
                    break Some((NotStored::Streamed, None));
                }
                if len > limit {
                    break Some((NotStored::TooLarge, None));
                }
            }
        }
    };
    if let Some((reason, error)) = stopped {
        let rest = (reason != NotStored::Failed).then_some(body);
        let passed = Prefixed { read, rest, error };
        return (
            Response::from_parts(parts, boxed(passed)),
            Captured::NotStored(reason),
        );
    }
    let bytes = concat(read);
    let stored = StoredResponse {
        status: parts.status,
        headers: replayed_headers
            .iter()
            .flat_map(|name| {
                parts
                    .headers
                    .get_all(name)
                    .iter()
                    .map(move |v| (name.clone(), v.clone()))
            })
            .collect(),
        body: bytes.clone(),
    };
    (
        Response::from_parts(parts, full(bytes)),
        Captured::Stored(stored),
    )
}

fn concat(mut frames: VecDeque<Frame<Bytes>>) -> Bytes {
    if frames.len() == 1 {
        if let Some(Ok(data)) = frames.pop_front().map(Frame::into_data) {
            return data;
        }
        return Bytes::new();
    }
    let mut all = BytesMut::new();
    for frame in frames {
        if let Ok(data) = frame.into_data() {
            all.extend_from_slice(&data);
        }
    }
    all.freeze()
}
