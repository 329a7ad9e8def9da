//! What is retried: the classifier's contract, its verdict, and the `Retry-After`
//! reader it uses.
//!
//! A [`Classifier`] sees each attempt ([`AttemptView`], [`AttemptResult`]) and
//! returns a [`Decision`]; the built-in one retries the statuses of a
//! [`StatusSet`] and transport failures that prove nothing was processed, and
//! retries POST/PATCH only with a key ([`is_idempotent_method`]). The `Retry-After`
//! parsers read all three date forms and delay-seconds, saturating at
//! [`RETRY_AFTER_SATURATION`].

pub use crate::classify::{
    is_idempotent_method, AttemptResult, AttemptView, Classifier, StatusSet,
};
pub use crate::decision::Decision;
pub use crate::retry_after::{
    parse_retry_after, parse_retry_after_bytes, retry_after_of, RETRY_AFTER_SATURATION,
};
