//! Model checks of reqwest-resilience's three protocols, in every interleaving.
//!
//! Each model is a [`stateright::Model`] whose actions are as fine as the code's await
//! points, and whose rules are the crates' own pure functions wherever the crate has one
//! (reached through each crate's hidden `model_rules` module). `check-models --bounded`
//! (CI) and `--full` (`model/scripts/full.sh`) print one `MODEL` line per model.
#![deny(missing_docs)]
#![warn(missing_debug_implementations, rust_2018_idioms, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod client;
pub mod journal;
pub mod report;
pub mod server;
