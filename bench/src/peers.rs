//! The five clients compared and the reference rows, built with comparable
//! settings, behind one `get`.
//!
//! Every one is a reqwest 0.13 `Client` from the same builder settings (no proxy,
//! same pool, `TCP_NODELAY`). reqwest's own retry layer is turned off with
//! `.retry(reqwest::retry::never())` for every client except the one that *is*
//! reqwest's retry layer, so the bare baseline pays for the same (disabled) layer and
//! no retries stack under the wrappers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use reqwest::StatusCode;
use reqwest_resilience::{Backoff, ResilientClient, RetryPolicy, RetryPolicyBuilder};
use reqwest_retry::policies::ExponentialBackoff;
use reqwest_retry::{Jitter, RetryTransientMiddleware};

use crate::floor;
use crate::floor::deposits::DepositWindow;
pub use crate::row::{drain, Outcome, DEFAULT_ATTEMPT_TIMEOUT};

/// Backoff settings shared by every peer that has them.
pub const BASE: Duration = Duration::from_millis(10);
pub const CAP: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    Bare,
    Resilient,
    ReqwestRetry,
    Builtin,
    Backon,
    /// reqwest-resilience without deadline or attempt timeout: a reference row in
    /// P1/P2 that shows what the default timer costs (not a peer; not in `ALL`).
    ResilientNoTimer,
    /// Bare reqwest with the per-request timeout reqwest-resilience sets by default
    /// ([`DEFAULT_ATTEMPT_TIMEOUT`]): what a careful user pays for the same
    /// protection without the crate (a reference row; not in `ALL`).
    BareTimeout,
    /// Bare reqwest doing by hand, as cheaply as possible, all that
    /// reqwest-resilience's defaults must do on a successful single-attempt GET
    /// (see [`floor::defaults::send`]). Shows how much of the crate's overhead its
    /// defaults account for (a reference row; not in `ALL`).
    Floor,
    /// The floor without the budget deposit, the classification, the spans and the
    /// clock reads (see [`floor::defaults::partial`]): the row the no-regression
    /// gate was set against (a reference row; not in `ALL`).
    FloorPartial,
    /// reqwest-resilience wrapping a prebuilt client through
    /// `ResilientClient::from_parts`: what bringing your own client costs (a P8 row
    /// only; not in `ALL`).
    ResilientFromParts,
    /// (reference) reqwest-resilience with one observer that only counts, through
    /// the synchronous hooks: what metrics cost an intent.
    ResilientObserved,
}

impl Peer {
    pub const ALL: [Peer; 5] = [
        Peer::Bare,
        Peer::Resilient,
        Peer::ReqwestRetry,
        Peer::Builtin,
        Peer::Backon,
    ];

    /// The reference rows P1 and P2 add after the peers: the careful bare user, the
    /// defaults' work done by hand on bare reqwest (partly, then completely), and the
    /// crate without its timer.
    pub const REFERENCES: [Peer; 4] = [
        Peer::BareTimeout,
        Peer::FloorPartial,
        Peer::Floor,
        Peer::ResilientNoTimer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Peer::Bare => "bare reqwest 0.13",
            Peer::Resilient => "reqwest-resilience",
            Peer::ReqwestRetry => "reqwest-retry 0.9 + middleware 0.5",
            Peer::Builtin => "reqwest 0.13 retry::for_host",
            Peer::Backon => "backon 1 + reqwest",
            Peer::ResilientNoTimer => "(reference) reqwest-resilience, no deadline/timeout",
            Peer::BareTimeout => "(reference) bare reqwest 0.13 + 10 s request timeout",
            Peer::Floor => "(reference) floor: bare reqwest 0.13 doing the defaults' work by hand",
            Peer::FloorPartial => {
                "(reference) partial floor: timeout, copy, request id, extension by hand"
            }
            Peer::ResilientFromParts => "reqwest-resilience, prebuilt client via `from_parts`",
            Peer::ResilientObserved => "reqwest-resilience + one counting observer",
        }
    }

    pub fn short(self) -> &'static str {
        match self {
            Peer::Bare => "bare",
            Peer::Resilient => "resilience",
            Peer::ReqwestRetry => "reqwest-retry",
            Peer::Builtin => "builtin",
            Peer::Backon => "backon",
            Peer::ResilientNoTimer => "resilience-no-timer",
            Peer::BareTimeout => "bare-timeout",
            Peer::Floor => "floor",
            Peer::FloorPartial => "floor-partial",
            Peer::ResilientFromParts => "resilience-from-parts",
            Peer::ResilientObserved => "resilience-observed",
        }
    }

    /// The name over short lines, for the picture.
    pub fn label_lines(self) -> &'static [&'static str] {
        match self {
            Peer::Bare => &["bare", "reqwest"],
            Peer::Resilient => &["reqwest-", "resilience"],
            Peer::ReqwestRetry => &["reqwest-retry", "+ middleware"],
            Peer::Builtin => &["reqwest", "retry::for_host"],
            Peer::Backon => &["backon", "+ reqwest"],
            Peer::ResilientNoTimer => &["reqwest-resilience", "no timer"],
            Peer::BareTimeout => &["bare reqwest", "+ 10 s timeout"],
            Peer::Floor => &["bare reqwest", "defaults by hand"],
            Peer::FloorPartial => &["bare reqwest", "partial floor"],
            Peer::ResilientFromParts => &["reqwest-resilience", "from_parts"],
            Peer::ResilientObserved => &["reqwest-resilience", "+ counting observer"],
        }
    }

    /// How this peer's retries are configured in the comparable settings.
    pub fn settings_note(self) -> &'static str {
        match self {
            Peer::Bare => "no retries (`retry::never()`)",
            Peer::Resilient => "full jitter 10–100 ms, default budget (10 % + 10/10 s)",
            Peer::ReqwestRetry => "`ExponentialBackoff` 10–100 ms, `Jitter::Full`, no budget",
            Peer::Builtin => {
                "classifier 429/5xx; no backoff (retries at once); TpsBudget 20 % (default)"
            }
            Peer::Backon => "`ExponentialBuilder` 10–100 ms + jitter (d + U(0,d)), no budget",
            Peer::ResilientNoTimer => {
                "as reqwest-resilience, with `no_deadline().no_attempt_timeout()`"
            }
            Peer::BareTimeout => "no retries; `RequestBuilder::timeout(10 s)` on every request",
            Peer::Floor => {
                "no retries; `ClientBuilder::timeout(10 s)`, a budget deposit (atomic add \
                 into a 10 s window), disabled intent and attempt spans, the clock read at \
                 the attempt's start and end, a hand copy of the request kept, a fresh UUID \
                 `x-request-id`, the status classified, one response extension"
            }
            Peer::FloorPartial => {
                "no retries; `ClientBuilder::timeout(10 s)`, a hand copy of the request \
                 kept, a fresh UUID `x-request-id`, one response extension"
            }
            Peer::ResilientFromParts => {
                "as reqwest-resilience, on a client built with `retry::never()` and \
                 `timeout(10 s)`, wrapped by `from_parts`"
            }
            Peer::ResilientObserved => {
                "as reqwest-resilience, with an observer counting attempts, scheduled \
                 retries and ends (synchronous hooks only)"
            }
        }
    }
}

/// Settings that vary between figures.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Attempts per intent, the first included.
    pub max_attempts: u32,
    /// The peer's total-time setting, where it has one.
    pub deadline: Option<Duration>,
    /// Whether peers that have a retry budget keep it (default) or turn it off.
    pub budget: bool,
}

impl Settings {
    pub const COMPARABLE: Settings = Settings {
        max_attempts: 4,
        deadline: None,
        budget: true,
    };
}

/// One built client.
pub enum Client {
    Bare {
        client: reqwest::Client,
        /// A per-request timeout (the fair reference row), or none.
        timeout: Option<Duration>,
    },
    Resilient {
        client: ResilientClient,
        deadline: Option<Duration>,
    },
    ReqwestRetry(reqwest_middleware::ClientWithMiddleware),
    Builtin {
        client: reqwest::Client,
        timeout: Option<Duration>,
    },
    Backon {
        client: reqwest::Client,
        backoff: ExponentialBuilder,
    },
    /// Bare reqwest with the attempt timeout as its client-level timeout, driven by
    /// [`floor::defaults::complete`]; `deposits` is its retry budget's window.
    Floor {
        client: reqwest::Client,
        deposits: DepositWindow,
    },
    /// As `Floor`, driven by [`floor::defaults::partial`].
    FloorPartial(reqwest::Client),
}

/// The settings every reqwest client gets.
fn common(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    builder
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(256)
        .pool_idle_timeout(Duration::from_secs(90))
}

/// A reqwest client builder with the common settings and reqwest's retry layer off.
pub fn bare_reqwest_builder() -> reqwest::ClientBuilder {
    common(reqwest::Client::builder()).retry(reqwest::retry::never())
}

/// A reqwest client with the common settings and reqwest's retry layer off.
pub fn bare_reqwest() -> reqwest::Client {
    bare_reqwest_builder().build().expect("reqwest client")
}

/// The floor rows' client: the attempt timeout applied as reqwest-resilience applies
/// it, on the client, not on each request (which would cost the request an
/// extension map).
fn floor_reqwest() -> reqwest::Client {
    bare_reqwest_builder()
        .timeout(DEFAULT_ATTEMPT_TIMEOUT)
        .build()
        .expect("reqwest client")
}

fn transient(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// The policy reqwest-resilience runs with: builder defaults (budget, deadline,
/// attempt timeout, TokioSleeper) except the attempts and the backoff.
fn resilient_policy_builder(max_attempts: u32, budget: bool) -> RetryPolicyBuilder {
    let builder = RetryPolicy::builder()
        .max_attempts(max_attempts)
        .backoff(Backoff::full_jitter(BASE, CAP));
    if budget {
        builder
    } else {
        builder.no_budget()
    }
}

/// `peer`'s client with `settings`.
pub fn build(peer: Peer, settings: Settings) -> Arc<Client> {
    let retries = settings.max_attempts - 1;
    let client = match peer {
        Peer::Bare => Client::Bare {
            client: bare_reqwest(),
            timeout: None,
        },
        Peer::BareTimeout => Client::Bare {
            client: bare_reqwest(),
            timeout: Some(DEFAULT_ATTEMPT_TIMEOUT),
        },
        Peer::Floor => Client::Floor {
            client: floor_reqwest(),
            deposits: DepositWindow::new(Instant::now()),
        },
        Peer::FloorPartial => Client::FloorPartial(floor_reqwest()),
        Peer::ResilientFromParts => {
            let policy = resilient_policy_builder(settings.max_attempts, settings.budget)
                .build()
                .expect("valid policy");
            // Built as `from_builder` builds it (connect timeout included), with
            // the attempt timeout set on the client by its owner.
            let prebuilt = common(ResilientClient::reqwest_builder_for(&policy))
                .timeout(DEFAULT_ATTEMPT_TIMEOUT)
                .build()
                .expect("reqwest client");
            Client::Resilient {
                client: ResilientClient::from_parts(prebuilt, policy),
                deadline: settings.deadline,
            }
        }
        Peer::Resilient | Peer::ResilientNoTimer | Peer::ResilientObserved => {
            let builder = resilient_policy_builder(settings.max_attempts, settings.budget);
            let policy = match peer {
                Peer::ResilientNoTimer => builder.no_deadline().no_attempt_timeout(),
                Peer::ResilientObserved => builder.observer(Counting::default()),
                _ => builder,
            }
            .build()
            .expect("valid policy");
            Client::Resilient {
                // As `ResilientClient::with_policy` builds it, with the common settings.
                client: ResilientClient::from_builder(common(reqwest::Client::builder()), policy)
                    .expect("reqwest client"),
                deadline: settings.deadline,
            }
        }
        Peer::ReqwestRetry => {
            let backoff = ExponentialBackoff::builder()
                .retry_bounds(BASE, CAP)
                .jitter(Jitter::Full)
                .base(2);
            let inner = reqwest_middleware::ClientBuilder::new(bare_reqwest());
            let with_retry = match settings.deadline {
                // The closest thing it has to a deadline: no retry is *scheduled*
                // once this much time has passed since the first attempt.
                Some(total) => inner.with(RetryTransientMiddleware::new_with_policy(
                    backoff.build_with_total_retry_duration_and_max_retries(total, retries),
                )),
                None => inner.with(RetryTransientMiddleware::new_with_policy(
                    backoff.build_with_max_retries(retries),
                )),
            };
            Client::ReqwestRetry(with_retry.build())
        }
        Peer::Builtin => {
            let policy = reqwest::retry::for_host("127.0.0.1")
                .max_retries_per_request(retries)
                .classify_fn(|req_rep| match req_rep.status() {
                    Some(status) if transient(status) => req_rep.retryable(),
                    _ => req_rep.success(),
                });
            let policy = if settings.budget {
                policy
            } else {
                policy.no_budget()
            };
            Client::Builtin {
                client: common(reqwest::Client::builder())
                    .retry(policy)
                    .build()
                    .expect("reqwest client"),
                // reqwest's total timeout wraps its retry layer: a real deadline.
                timeout: settings.deadline,
            }
        }
        Peer::Backon => {
            let backoff = ExponentialBuilder::new()
                .with_min_delay(BASE)
                .with_max_delay(CAP)
                .with_jitter()
                .with_max_times(retries as usize)
                // Bounds the *sum of sleeps* only, not the time spent in attempts.
                .with_total_delay(settings.deadline);
            Client::Backon {
                client: bare_reqwest(),
                backoff,
            }
        }
    };
    Arc::new(client)
}

enum BackonError {
    Status(reqwest::Response),
    Transport(reqwest::Error),
}

impl BackonError {
    fn is_transient(&self) -> bool {
        match self {
            BackonError::Status(response) => transient(response.status()),
            BackonError::Transport(error) => error.is_connect() || error.is_timeout(),
        }
    }
}

impl Client {
    /// One GET intent: every attempt the peer decides to make, then the body.
    pub async fn get(&self, url: &str) -> Outcome {
        match self {
            Client::Bare { client, timeout } => {
                let request = client.get(url);
                let request = match timeout {
                    Some(timeout) => request.timeout(*timeout),
                    None => request,
                };
                match request.send().await {
                    Ok(response) => drain(response).await,
                    Err(_) => Outcome { status: None },
                }
            }
            Client::Resilient { client, deadline } => {
                let request = client.get(url);
                let request = match deadline {
                    Some(deadline) => request.deadline(*deadline),
                    None => request,
                };
                match request.send().await {
                    Ok(response) => drain(response).await,
                    Err(error) => {
                        let status = error.last_status();
                        match error.into_response() {
                            Some(response) => drain(response).await,
                            None => Outcome { status },
                        }
                    }
                }
            }
            Client::Floor { client, deposits } => {
                floor::defaults::complete(client, deposits, url).await
            }
            Client::FloorPartial(client) => floor::defaults::partial(client, url).await,
            Client::ReqwestRetry(client) => match client.get(url).send().await {
                Ok(response) => drain(response).await,
                Err(_) => Outcome { status: None },
            },
            Client::Builtin { client, timeout } => {
                let request = client.get(url);
                let request = match timeout {
                    Some(timeout) => request.timeout(*timeout),
                    None => request,
                };
                match request.send().await {
                    Ok(response) => drain(response).await,
                    Err(_) => Outcome { status: None },
                }
            }
            Client::Backon { client, backoff } => {
                let attempt = || async {
                    match client.get(url).send().await {
                        Ok(response) if transient(response.status()) => {
                            Err(BackonError::Status(response))
                        }
                        Ok(response) => Ok(response),
                        Err(error) => Err(BackonError::Transport(error)),
                    }
                };
                let result = attempt
                    .retry(*backoff)
                    .sleep(tokio::time::sleep)
                    .when(BackonError::is_transient)
                    .await;
                match result {
                    Ok(response) | Err(BackonError::Status(response)) => drain(response).await,
                    Err(BackonError::Transport(_)) => Outcome { status: None },
                }
            }
        }
    }
}

/// Counts what a metrics observer would.
#[derive(Default)]
struct Counting {
    attempts: std::sync::atomic::AtomicU64,
    retries: std::sync::atomic::AtomicU64,
    ended: std::sync::atomic::AtomicU64,
}

impl reqwest_resilience::IntentObserver for Counting {
    fn attempt_finished(&self, _: &reqwest_resilience::AttemptFinished<'_>) {
        self.attempts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn retry_scheduled(&self, _: &reqwest_resilience::RetryScheduled<'_>) {
        self.retries
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn finished(&self, _: &reqwest_resilience::IntentEnd<'_>) {
        self.ended
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}
