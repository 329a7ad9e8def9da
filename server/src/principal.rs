//! Who is calling: keys are scoped to a principal, so a stored response is never
//! replayed to another caller.
//!
//! The principal is a stable account identity (an account id, a tenant id), never the
//! credential: a token refreshed between two attempts would otherwise turn the retry
//! into a new key scope and a second payment.

use http::request::Parts;

/// A stable identity of the caller (an account or tenant id, never a token).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Principal(String);

impl Principal {
    /// A principal named by a stable account identity.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The identity as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Principal").field(&self.0).finish()
    }
}

/// Finds the principal of a request, usually in an extension that the
/// authentication layer (which runs before this one) inserted.
///
/// Returning `None` refuses the request with 401: a key cannot be scoped to nobody.
/// Any `Fn(&Parts) -> Option<Principal>` is an extractor.
///
/// # Examples
///
/// ```
/// use tower_idempotency::Principal;
///
/// #[derive(Clone)]
/// struct AccountId(String); // inserted by the authentication middleware
///
/// let extractor = |parts: &http::request::Parts| {
///     parts.extensions.get::<AccountId>().map(|a| Principal::new(a.0.clone()))
/// };
/// # let _ = extractor;
/// ```
pub trait PrincipalExtractor: Send + Sync + 'static {
    /// The caller of this request, or `None` when it has none.
    fn principal(&self, parts: &Parts) -> Option<Principal>;
}

impl<F> PrincipalExtractor for F
where
    F: Fn(&Parts) -> Option<Principal> + Send + Sync + 'static,
{
    fn principal(&self, parts: &Parts) -> Option<Principal> {
        self(parts)
    }
}

/// Every request belongs to one principal: for a service with a single caller
/// (an internal service behind its own network boundary).
#[derive(Debug, Clone, Copy, Default)]
pub struct SinglePrincipal;

impl PrincipalExtractor for SinglePrincipal {
    fn principal(&self, _: &Parts) -> Option<Principal> {
        Some(Principal::new(""))
    }
}
