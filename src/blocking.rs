//! A blocking client, shaped like `reqwest::blocking` (feature `blocking`).
//!
//! Scripts, command-line tools and threads without an async runtime send intents
//! the same way the async client does: one idempotency key per intent, a fresh
//! request id per attempt, the policy's backoff, `Retry-After`, deadline, budget
//! and gates, and the same typed [`Error`](crate::Error).
//!
//! Like `reqwest::blocking`, a [`ResilientClient`] runs the async client on a thread
//! of its own, with a single-threaded tokio runtime; `send()` hands the intent to
//! that thread and waits for its end. Clones share the thread, the connection pool,
//! the retry budget and the gates; the thread stops when the last clone and the last
//! [`Response`] are dropped.
//!
//! # Inside an async runtime
//!
//! Blocking a thread that drives async tasks stalls every task on it, so the
//! calls that wait ([`RequestBuilder::send`], [`Response`]'s body readers) **panic**
//! when made on such a thread — before anything is sent — with tokio's message
//! ("Cannot block the current thread from within a runtime…"), as
//! `reqwest::blocking` does. From async code, use the async
//! [`crate::ResilientClient`], or call the blocking one inside
//! `tokio::task::spawn_blocking`, where waiting is allowed. Building and dropping a
//! blocking client is allowed anywhere.
//!
//! Why a panic and not an [`Error`](crate::Error): the only exact test of "may this
//! thread block?" that tokio offers is the check behind its own blocking calls, and
//! it panics. A test of "is a runtime entered?" would also refuse
//! `spawn_blocking` threads, the one place blocking code belongs in an async program.
//!
//! # Examples
//! ```no_run
//! use std::time::Duration;
//! use reqwest_resilience::{blocking, RetryPolicy};
//!
//! # fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let policy = RetryPolicy::builder().deadline(Duration::from_secs(10)).build()?;
//! let client = blocking::ResilientClient::with_policy(policy);
//! let response = client
//!     .post("http://127.0.0.1:8080/payments")
//!     .idempotency_key("order-1842-payment")
//!     .body(r#"{"amount": 500, "currency": "EUR"}"#)
//!     .send()?;
//! println!("{}: {}", response.status(), response.text()?);
//! # Ok(()) }
//! ```

mod client;
mod request_builder;
mod response;
mod runtime;

pub use client::ResilientClient;
pub use request_builder::RequestBuilder;
pub use response::Response;
