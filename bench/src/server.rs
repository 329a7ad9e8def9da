//! The loopback HTTP/1.1 server every network figure runs against (hyper 1, bound to
//! 127.0.0.1 on an ephemeral port, on its own thread and single-threaded runtime so
//! that the client side keeps the other core).
//!
//! Routes:
//! * `/ok` — `200 OK`, body `ok`;
//! * `/down` — `503`, small body (total outage, P3);
//! * `/ra/secs/<id>` and `/ra/date/<id>` — the first request for `<id>` gets `503`
//!   with `Retry-After: 1` or an IMF-fixdate 2–3 s ahead; later ones get `200`.
//!   Every arrival is recorded with the earliest time the server allowed (P4);
//! * `/slow503` — `503` after 150 ms (P5).
//!
//! The server counts requests per route and accepted connections.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::oneshot;

/// What P4 learned about one intent: every arrival, and the earliest time the
/// server's `Retry-After` allowed the second one.
#[derive(Debug, Clone, Default)]
pub struct RetryAfterTrace {
    pub arrivals: Vec<SystemTime>,
    pub not_before: Option<SystemTime>,
}

#[derive(Default)]
pub struct Counters {
    pub ok: AtomicU64,
    pub down: AtomicU64,
    pub slow: AtomicU64,
    pub retry_after: AtomicU64,
    pub connections: AtomicU64,
}

#[derive(Default)]
struct State {
    counters: Counters,
    traces: Mutex<HashMap<String, RetryAfterTrace>>,
}

/// A running server; stops when [`Server::stop`] is called (or on drop).
pub struct Server {
    pub addr: SocketAddr,
    state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    pub fn start() -> std::io::Result<Server> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let state = Arc::new(State::default());
        let (stop_tx, stop_rx) = oneshot::channel();
        let thread_state = state.clone();
        let thread = std::thread::Builder::new()
            .name("bench-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("server runtime");
                runtime.block_on(serve(std_listener, thread_state, stop_rx));
                // Dropping the runtime cancels every connection task.
            })?;
        Ok(Server {
            addr,
            state,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn counters(&self) -> &Counters {
        &self.state.counters
    }

    /// The P4 traces whose path starts with `prefix`.
    pub fn traces(&self, prefix: &str) -> HashMap<String, RetryAfterTrace> {
        let traces = self.state.traces.lock().unwrap_or_else(|e| e.into_inner());
        traces
            .iter()
            .filter(|(path, _)| path.starts_with(prefix))
            .map(|(path, trace)| (path.clone(), trace.clone()))
            .collect()
    }

    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn serve(
    std_listener: std::net::TcpListener,
    state: Arc<State>,
    mut stop: oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // Out of file descriptors or similar: back off a little, keep serving.
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        state.counters.connections.fetch_add(1, Ordering::Relaxed);
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(state.clone(), request));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

fn respond(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = request.uri().path();
    let counters = &state.counters;
    let response = match path {
        "/ok" => {
            counters.ok.fetch_add(1, Ordering::Relaxed);
            respond(StatusCode::OK, "ok")
        }
        "/down" => {
            counters.down.fetch_add(1, Ordering::Relaxed);
            respond(StatusCode::SERVICE_UNAVAILABLE, "service unavailable")
        }
        "/slow503" => {
            counters.slow.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(150)).await;
            respond(StatusCode::SERVICE_UNAVAILABLE, "service unavailable")
        }
        _ if path.starts_with("/ra/") => {
            counters.retry_after.fetch_add(1, Ordering::Relaxed);
            retry_after_route(&state, path)
        }
        _ => respond(StatusCode::NOT_FOUND, "not found"),
    };
    Ok(response)
}

fn retry_after_route(state: &State, path: &str) -> Response<Full<Bytes>> {
    let now = SystemTime::now();
    let mut traces = state.traces.lock().unwrap_or_else(|e| e.into_inner());
    let trace = traces.entry(path.to_owned()).or_default();
    trace.arrivals.push(now);
    if trace.arrivals.len() > 1 {
        return respond(StatusCode::OK, "ok");
    }
    let (value, not_before) = if path.starts_with("/ra/date/") {
        // The next whole second at least 2 s ahead: an IMF-fixdate has no fraction.
        let ahead = now + Duration::from_secs(2);
        let secs = ahead
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() + u64::from(d.subsec_nanos() > 0));
        (imf_fixdate(secs), UNIX_EPOCH + Duration::from_secs(secs))
    } else {
        ("1".to_owned(), now + Duration::from_secs(1))
    };
    trace.not_before = Some(not_before);
    let mut response = respond(StatusCode::SERVICE_UNAVAILABLE, "come back later");
    response.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        hyper::header::HeaderValue::from_str(&value).expect("ASCII date"),
    );
    response
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` for `secs` after the Unix epoch (RFC 9110 §5.6.7).
pub fn imf_fixdate(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let second_of_day = secs % 86_400;
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (a Thursday).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

/// The formatter against RFC 9110's own example; run once at start-up.
pub fn self_check() {
    assert_eq!(imf_fixdate(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(imf_fixdate(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
}
