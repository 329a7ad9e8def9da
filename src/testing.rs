//! Being written (feature-gated; see the issue).
