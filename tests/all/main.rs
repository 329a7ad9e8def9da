//! Integration tests against real HTTP servers on 127.0.0.1 (wiremock, and a raw
//! TCP server for what wiremock cannot do). One binary, shared helpers.

#[path = "../shared/log_capture.rs"]
mod log_capture;
#[path = "../shared/raw_http.rs"]
mod raw_http;
mod support;

mod attempt_loop;
mod attempt_timeouts;
mod bodies;
mod breaker;
mod budget;
mod classification;
mod deadline;
mod extension_points;
mod gates;
mod hedging;
mod keys;
mod middleware;
mod per_request;
mod prepare;
mod retry_after;
mod server_hints;
mod tracing_spans;
mod transport;
