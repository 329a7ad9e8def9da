//! What a transport failure proves, tested over real sockets: TLS with certificates made in the test, HTTP/2
//! refusals and GOAWAY, a listener that never accepts, a failing body stream, a DNS
//! failure from a custom resolver; and the same certificate verdict whichever
//! TLS backend reqwest ended up with (`--features native-tls` compiles both in). Every
//! server listens on 127.0.0.1 only.
//!
//! What loopback cannot produce honestly is documented instead of faked:
//! * a pooled connection closed inside hyper-util before the request was written —
//!   hyper-util retries those itself on a reused connection, and on a fresh one the
//!   close races the write; the classification (`ClosedBeforeSend` from hyper's
//!   `is_canceled()`) is the unit test
//!   `failure::chain::tests::a_request_hyper_handed_back_unsent_never_left`, on a real
//!   hyper connection dropped before it dispatched the request;
//! * a missing TLS backend — this binary needs one; the unit test
//!   `failure::tests::https_without_a_tls_backend_is_named_and_permanent` runs the real
//!   connector in `cargo test --lib --no-default-features`.

mod support;

mod body;
mod connect;
mod http2;
mod reset;
mod tls;
mod tls_backends;
