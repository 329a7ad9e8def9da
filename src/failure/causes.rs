//! Walking an error's source chain, the one way every reader of the chain does it.
//!
//! At every `io::Error` the walk also looks through `get_ref()`, because
//! `io::Error::source()` skips the error it wraps.

use std::error::Error as StdError;
use std::io;

/// Longer chains than this are not real (and a cycle must not hang the walk).
const MAX_CHAIN: usize = 32;

/// Calls `visit` on every error in the chain, including the error each `io::Error`
/// wraps (which `io::Error::source()` skips: it returns the wrapped error's source).
pub(crate) fn for_each_cause(
    error: &(dyn StdError + 'static),
    mut visit: impl FnMut(&(dyn StdError + 'static)),
) {
    let mut next = Some(error);
    for _ in 0..MAX_CHAIN {
        let Some(current) = next else { return };
        visit(current);
        // io::Error inside io::Error: look through every layer.
        let mut wrapped = current;
        for _ in 0..MAX_CHAIN {
            let Some(inner) = wrapped
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
            else {
                break;
            };
            let inner: &(dyn StdError + 'static) = inner;
            visit(inner);
            wrapped = inner;
        }
        next = current.source();
    }
}
