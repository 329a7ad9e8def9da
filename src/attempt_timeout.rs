//! Each attempt's timeout, from the policy's setting to the wire: the one place
//! that decides it and the one place that writes it.
//!
//! It is decided in two steps: once per intent ([`AttemptTimeout::for_intent`]:
//! the policy's setting, or the one implied by the intent's deadline; a request's
//! own timeout, [`take_own`], replaces it), and once per attempt ([`of_attempt`]:
//! cut to the time left). Then it goes on the wire through [`WireTimeout`], which
//! knows whether the reqwest client applies it already or the request must carry
//! it.

use std::time::Duration;

/// The implied attempt timeout when the deadline is long (or there is none).
pub(crate) const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The policy's attempt timeout setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptTimeout {
    /// Derived from each intent's deadline (see [`AttemptTimeout::for_intent`]).
    Implied,
    /// Set by the user.
    Fixed(Duration),
    /// No per-attempt timeout: only the deadline bounds an attempt.
    Off,
}

impl AttemptTimeout {
    /// The timeout of each attempt of an intent with this deadline, before it is cut
    /// to the time left.
    ///
    /// The implied one is 10 s, or half the deadline if that is shorter: an attempt
    /// allowed the whole deadline would leave a server that hangs exactly one
    /// attempt, however many the policy allows. Half still lets a slow but healthy
    /// server (answering in 0.8 s under a 2 s deadline) succeed at the first
    /// attempt. A single-attempt policy has no retry to make room for.
    pub fn for_intent(self, deadline: Option<Duration>, max_attempts: u32) -> Option<Duration> {
        match self {
            Self::Fixed(timeout) => Some(timeout),
            Self::Off => None,
            Self::Implied => Some(match deadline {
                None => DEFAULT_ATTEMPT_TIMEOUT,
                Some(deadline) if max_attempts <= 1 => deadline.min(DEFAULT_ATTEMPT_TIMEOUT),
                Some(deadline) => (deadline / 2).min(DEFAULT_ATTEMPT_TIMEOUT),
            }),
        }
    }
}

/// Takes the request's own timeout (the caller's `.timeout()`, a middleware's)
/// off it, once before the first attempt, so that it cannot outlive the deadline
/// on any attempt, and returns it: it replaces the policy's attempt timeout.
pub(crate) fn take_own(request: &mut reqwest::Request) -> Option<Duration> {
    // `timeout_mut` creates reqwest's extension entry when there is none: only
    // a request that has a timeout pays for taking it.
    request.timeout()?;
    request.timeout_mut().take()
}

/// The timeout of an attempt: the intent's (`each`) cut to the time `left`
/// before the deadline (`None`: the intent has none).
pub fn of_attempt(each: Option<Duration>, left: Option<Duration>) -> Option<Duration> {
    match (left, each) {
        (Some(left), Some(each)) => Some(left.min(each)),
        (left, each) => left.or(each),
    }
}

/// Who applies an attempt's timeout on the wire: the reqwest client, built with
/// it, or the request, which then carries its own.
///
/// reqwest keeps a per-request timeout in an extension map, which costs
/// allocations on every request; a client the crate builds
/// (`ResilientClient::from_builder`) gets the policy's attempt timeout as its own,
/// so a request whose timeout is exactly that goes without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireTimeout {
    /// The reqwest client was built with this timeout.
    BuiltIntoClient(Duration),
    /// The client's own timeout is unknown (a client built elsewhere, a
    /// middleware chain's): every request carries its timeout.
    PerRequest,
}

impl WireTimeout {
    /// Builds `attempt_timeout` into the client `builder` will build, when there
    /// is one, and says who applies it then.
    pub(crate) fn build_into(
        builder: reqwest::ClientBuilder,
        attempt_timeout: Option<Duration>,
    ) -> (reqwest::ClientBuilder, Self) {
        match attempt_timeout {
            Some(timeout) => (builder.timeout(timeout), Self::BuiltIntoClient(timeout)),
            None => (builder, Self::PerRequest),
        }
    }

    /// Writes the attempt's `timeout` on `request` unless the client applies
    /// exactly that one already. (No timeout at all through a client that has one
    /// cannot happen: the crate builds such a client only for a policy whose
    /// attempts always have one.)
    pub(crate) fn write(self, request: &mut reqwest::Request, timeout: Option<Duration>) {
        let client_applies = match self {
            Self::BuiltIntoClient(timeout) => Some(timeout),
            Self::PerRequest => None,
        };
        if timeout != client_applies {
            *request.timeout_mut() = timeout;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    fn request(timeout: Option<Duration>) -> reqwest::Request {
        let mut request =
            reqwest::Request::new(http::Method::POST, "http://127.0.0.1:1/".parse().unwrap());
        if let Some(timeout) = timeout {
            *request.timeout_mut() = Some(timeout);
        }
        request
    }

    #[test]
    fn the_callers_timeout_is_taken_off_once() {
        let mut with = request(Some(5000 * MS));
        assert_eq!(take_own(&mut with), Some(5000 * MS));
        assert_eq!(with.timeout(), None);
        let mut without = request(None);
        assert_eq!(take_own(&mut without), None);
        assert_eq!(without.timeout(), None);
    }

    #[test]
    fn attempt_timeout_is_clipped_to_the_time_left() {
        assert_eq!(of_attempt(Some(3 * S), Some(10 * S)), Some(3 * S));
        assert_eq!(of_attempt(Some(3 * S), Some(2 * S)), Some(2 * S));
        assert_eq!(of_attempt(None, Some(2 * S)), Some(2 * S));
        assert_eq!(of_attempt(Some(3 * S), None), Some(3 * S));
        assert_eq!(of_attempt(None, None), None);
    }

    #[test]
    fn the_implied_attempt_timeout_by_deadline_and_attempts() {
        let ms = Duration::from_millis;
        // (setting, deadline, max attempts) -> each attempt's timeout
        let table = [
            (AttemptTimeout::Implied, None, 3, Some(10 * S)),
            (AttemptTimeout::Implied, Some(30 * S), 3, Some(10 * S)),
            (AttemptTimeout::Implied, Some(20 * S), 3, Some(10 * S)),
            (AttemptTimeout::Implied, Some(2 * S), 4, Some(S)),
            (AttemptTimeout::Implied, Some(ms(200)), 3, Some(ms(100))),
            (AttemptTimeout::Implied, Some(2 * S), 1, Some(2 * S)),
            (AttemptTimeout::Implied, Some(60 * S), 1, Some(10 * S)),
            (AttemptTimeout::Fixed(3 * S), Some(2 * S), 4, Some(3 * S)),
            (AttemptTimeout::Fixed(3 * S), None, 4, Some(3 * S)),
            (AttemptTimeout::Off, Some(2 * S), 4, None),
        ];
        for (setting, deadline, attempts, expected) in table {
            assert_eq!(
                setting.for_intent(deadline, attempts),
                expected,
                "{setting:?} deadline {deadline:?} attempts {attempts}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn an_attempt_never_outlives_the_deadline_nor_its_own_timeout(
            deadline in proptest::option::of(1u64..100_000),
            own in proptest::option::of(1u64..100_000),
            fixed in proptest::option::of(1u64..100_000),
            elapsed in 0u64..200_000,
            attempts in 1u32..10,
        ) {
            let ms = Duration::from_millis;
            let start = std::time::Instant::now();
            let setting = fixed.map_or(AttemptTimeout::Implied, |f| AttemptTimeout::Fixed(ms(f)));
            let per_attempt = own.map(ms).or(setting.for_intent(deadline.map(ms), attempts));
            let window = crate::deadline::Deadline::new(start, deadline.map(ms));
            let left = window.remaining(start + ms(elapsed));
            let timeout = of_attempt(per_attempt, left);
            if let Some(left) = left {
                proptest::prop_assert!(timeout.is_some_and(|t| t <= left));
            }
            if let Some(each) = per_attempt {
                proptest::prop_assert!(timeout.is_some_and(|t| t <= each));
            }
            if let (Some(d), None, None) = (deadline, own, fixed) {
                // The implied timeout leaves room for a second attempt.
                if attempts > 1 {
                    proptest::prop_assert!(per_attempt.unwrap() <= ms(d) / 2);
                }
            }
        }
    }

    #[test]
    fn the_attempt_goes_out_with_exactly_its_timeout() {
        // (attempt's timeout, the client's own) -> what reqwest applies: the
        // request's timeout, else the client's
        let table = [
            (Some(200 * MS), Some(200 * MS)),
            (Some(200 * MS), Some(10_000 * MS)),
            (Some(200 * MS), None),
            (Some(10_000 * MS), Some(200 * MS)),
            (None, None),
        ];
        for (timeout, client_applies) in table {
            let builder = reqwest::Client::builder();
            let (_, wire) = WireTimeout::build_into(builder, client_applies);
            let mut request = request(None);
            wire.write(&mut request, timeout);
            assert_eq!(
                request.timeout().copied().or(client_applies),
                timeout,
                "attempt {timeout:?} built in {client_applies:?}"
            );
        }
    }

    #[test]
    fn a_request_the_client_times_already_carries_no_timeout() {
        let (_, wire) = WireTimeout::build_into(reqwest::Client::builder(), Some(200 * MS));
        let mut request = request(None);
        wire.write(&mut request, Some(200 * MS));
        assert_eq!(request.timeout(), None);
    }
}
