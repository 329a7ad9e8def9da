//! The crate's pure rules, for the workspace's model checker (`model/`) only.
//!
//! Behind the `unstable-model-rules` feature and hidden from the docs: no part of the
//! crate's API, no promise of stability. Everything here calls the same function the
//! crate itself runs.
