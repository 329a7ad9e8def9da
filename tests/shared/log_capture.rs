//! Captures everything `tracing` prints while a test runs (shared by the test
//! binaries through `#[path]`).

#![allow(dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::fmt::MakeWriter;

/// The text written so far. Clones share it.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Prints every span (at close, with its fields) and event at TRACE level into the
/// returned buffer, on this thread, until the guard is dropped. Use it from a
/// current-thread runtime so the client's spans are on this thread.
pub fn capture_traces() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_span_events(FmtSpan::CLOSE)
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .finish();
    // tracing-core caches each callsite's interest globally. While only one
    // dispatcher is registered, it computes that interest from the *registering
    // thread's* default alone: a test on another thread (no subscriber) that hits a
    // callsite first caches "never", and this capture silently misses it. A second,
    // permanent dispatcher makes it ask every registered dispatcher instead.
    static SECOND_DISPATCHER: OnceLock<tracing::Dispatch> = OnceLock::new();
    SECOND_DISPATCHER
        .get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    let guard = tracing::subscriber::set_default(subscriber);
    // Interest cached before this capture existed (or during the one-dispatcher
    // window) is recomputed now, with it.
    tracing::callsite::rebuild_interest_cache();
    (captured, guard)
}
