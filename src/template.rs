//! The request each attempt is copied from.
//!
//! A retry layer must keep a copy of the request: the first attempt consumes it.
//! Copying costs allocations on every intent, retried or not, so this file keeps
//! that copy as cheap as reqwest allows, and skips it when no retry can follow.

/// Where each attempt's request comes from.
pub(crate) enum Requests {
    /// Cloned for every attempt (bytes bodies are reference-counted, not copied).
    Template(reqwest::Request),
    /// Sent at most once (a streamed body, or a single-attempt policy): moved into
    /// its attempt, not cloned; the URL stays for spans and classification.
    Once(Option<reqwest::Request>, reqwest::Url),
}

impl Requests {
    pub(crate) fn next(&mut self) -> Option<reqwest::Request> {
        match self {
            Self::Template(template) => copy_of(template),
            Self::Once(request, _) => request.take(),
        }
    }

    /// The request as it will leave, while no attempt has taken it.
    pub(crate) fn unsent(&self) -> Option<&reqwest::Request> {
        match self {
            Self::Template(template) => Some(template),
            Self::Once(request, _) => request.as_ref(),
        }
    }

    pub(crate) fn url(&self) -> &reqwest::Url {
        match self {
            Self::Template(template) => template.url(),
            Self::Once(_, url) => url,
        }
    }
}

/// A fresh copy of the template for one attempt; `None` when its body cannot be
/// copied. Without a body it is copied by hand: `Request::try_clone` would also
/// build and then replace an extension map (three allocations), of which reqwest
/// reads only the timeout, and the loop sets each attempt's own timeout. A body can
/// only be copied by `try_clone` (reqwest shares its bytes, never copies them).
fn copy_of(template: &reqwest::Request) -> Option<reqwest::Request> {
    if template.body().is_some() {
        return template.try_clone();
    }
    let mut copy = reqwest::Request::new(template.method().clone(), template.url().clone());
    *copy.headers_mut() = template.headers().clone();
    // `fetch` chooses the version itself: its requests have none to copy.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    {
        *copy.version_mut() = template.version();
    }
    Some(copy)
}
