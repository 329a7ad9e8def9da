//! Bad input over real HTTP: Retry-After fields no sane server sends (invalid UTF-8,
//! absurd numbers, signs, fractions, year 9999, repeated fields) and caller keys
//! that cannot travel in a header. The client never panics, never sleeps past the
//! policy's ceiling, and either retries with a bounded pause or fails fast with the
//! requested time; a bad key fails before anything is sent.

use std::time::{Duration, Instant, SystemTime};

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestRunner};
use reqwest_resilience::{
    parse_retry_after_bytes, Backoff, DelayReason, InvalidKey, KeyFormat, ResilientClient,
    RETRY_AFTER_SATURATION,
};

use crate::support::raw_server::{unavailable_with_retry_after, RawServer};
use crate::support::{
    payment, post_payment, recording_client, Config, IdempotentServer, ReferenceServer, MS,
};

const CEILING: Duration = Duration::from_secs(20);
const DEADLINE: Duration = Duration::from_secs(30);
const BACKOFF_CAP: Duration = Duration::from_millis(50);

fn bad_input_client() -> (ResilientClient, reqwest_resilience::RecordingSleeper) {
    recording_client(|p| {
        p.retry_after_ceiling(CEILING)
            .deadline(DEADLINE)
            .attempt_timeout(Duration::from_secs(5))
            .backoff(Backoff::full_jitter(10 * MS, BACKOFF_CAP))
    })
}

#[derive(Debug, Clone, Copy)]
enum Expect {
    /// The value is ignored: the pause is the backoff's.
    Backoff,
    /// The pause is exactly the server's.
    Wait(Duration),
    /// The intent ends at once with this requested time (`None`: just "too long").
    FailFast(Option<Duration>),
}

#[tokio::test]
async fn fuzz_absurd_retry_after_values_over_http_are_bounded_or_fail_fast() {
    let digits_10k = "9".repeat(10_000);
    let cases: Vec<(&str, Vec<&[u8]>, Expect)> = vec![
        ("invalid UTF-8", vec![b"\xff\xfe"], Expect::Backoff),
        ("digits then invalid UTF-8", vec![b"1\xff"], Expect::Backoff),
        ("obs-text only", vec![b"\x80\x81\x82"], Expect::Backoff),
        (
            "20 nines",
            vec![b"99999999999999999999"],
            Expect::FailFast(Some(RETRY_AFTER_SATURATION)),
        ),
        (
            "10,000 nines",
            vec![digits_10k.as_bytes()],
            Expect::FailFast(Some(RETRY_AFTER_SATURATION)),
        ),
        ("negative", vec![b"-1"], Expect::Backoff),
        ("fraction", vec![b"1.5"], Expect::Backoff),
        ("empty", vec![b""], Expect::Backoff),
        (
            "year 9999",
            vec![b"Fri, 31 Dec 9999 23:59:59 GMT"],
            Expect::FailFast(None),
        ),
        (
            "year 9999, wrong weekday",
            vec![b"Mon, 31 Dec 9999 23:59:59 GMT"],
            Expect::Backoff,
        ),
        (
            // "Now" is no reason to skip the jitter: the backoff's pause is used.
            "past date",
            vec![b"Sun, 06 Nov 1994 08:49:37 GMT"],
            Expect::Backoff,
        ),
        (
            "whitespace around",
            vec![b" \t 3 \t "],
            Expect::Wait(Duration::from_secs(3)),
        ),
        ("at the ceiling", vec![b"20"], Expect::Wait(CEILING)),
        (
            "past the ceiling",
            vec![b"21"],
            Expect::FailFast(Some(Duration::from_secs(21))),
        ),
        (
            "repeated",
            vec![b"1", b"2"],
            Expect::Wait(Duration::from_secs(2)),
        ),
        (
            "repeated with garbage",
            vec![b"\xff", b"1", b"-1", b"1.5"],
            Expect::Wait(Duration::from_secs(1)),
        ),
        (
            "repeated with an absurd one",
            vec![b"1", b"99999999999999999999"],
            Expect::FailFast(Some(RETRY_AFTER_SATURATION)),
        ),
        (
            "repeated garbage only",
            vec![b"soon", b"\xff", b"-1"],
            Expect::Backoff,
        ),
    ];
    let server = RawServer::start().await;
    for (name, fields, expect) in cases {
        server.reset();
        server.script([unavailable_with_retry_after(&fields)]);
        let (client, sleeper) = bad_input_client();
        let started = Instant::now();
        let result = client.get(&server.url).send().await;
        let delays = sleeper.delays();
        assert!(
            delays.iter().all(|d| *d <= CEILING),
            "{name}: slept past the ceiling: {delays:?}"
        );
        match (expect, result) {
            (Expect::Backoff, Ok(response)) => {
                assert_eq!(response.status(), 200, "{name}");
                let log = reqwest_resilience::ResponseExt::attempt_log(&response).unwrap();
                let pause = log.attempts()[0].delay_after().unwrap();
                assert_eq!(pause.reason, DelayReason::Backoff, "{name}");
                assert!(pause.delay <= BACKOFF_CAP, "{name}: {pause:?}");
                assert_eq!(delays, vec![pause.delay], "{name}");
            }
            (Expect::Wait(wait), Ok(response)) => {
                assert_eq!(response.status(), 200, "{name}");
                let log = reqwest_resilience::ResponseExt::attempt_log(&response).unwrap();
                let pause = log.attempts()[0].delay_after().unwrap();
                assert_eq!(pause.reason, DelayReason::RetryAfter, "{name}");
                assert_eq!(delays, vec![wait], "{name}");
            }
            (Expect::FailFast(asked), Err(error)) => {
                assert!(error.is_retry_after_too_long(), "{name}: {error}");
                assert!(
                    delays.is_empty(),
                    "{name}: slept before failing: {delays:?}"
                );
                assert_eq!(error.attempts(), 1, "{name}");
                assert_eq!(error.last_status().map(|s| s.as_u16()), Some(503));
                assert!(error.retry_after().unwrap() > CEILING, "{name}");
                if let Some(asked) = asked {
                    assert_eq!(error.retry_after(), Some(asked), "{name}");
                }
                assert_eq!(server.received().len(), 1, "{name}");
            }
            (expect, result) => panic!("{name}: expected {expect:?}, got {result:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{name}: took too long"
        );
    }
}

/// Any Retry-After bytes (one to three fields, CR and LF excluded so the framing
/// holds): no panic, no pause past the ceiling, and when hyper accepts the field
/// bytes, exactly what the parser implies (the longest valid value wins).
#[test]
fn fuzz_random_retry_after_bytes_over_http_never_panic_nor_oversleep() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(RawServer::start());
    let field = prop_oneof![
        proptest::collection::vec(
            any::<u8>().prop_filter("no CR/LF", |b| *b != b'\r' && *b != b'\n'),
            0..24
        ),
        "[ \t]{0,2}[0-9]{1,25}[ \t]{0,2}".prop_map(String::into_bytes),
        "[ -~]{0,30}".prop_map(String::into_bytes),
    ];
    let fields = proptest::collection::vec(field, 1..=3);
    let mut runner = TestRunner::new(ProptestConfig::with_cases(256));
    runner
        .run(&fields, |fields| {
            runtime.block_on(async {
                server.reset();
                let refs: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
                server.script([unavailable_with_retry_after(&refs)]);
                let (client, sleeper) = bad_input_client();
                let started = Instant::now();
                let result = client.get(&server.url).send().await;
                let delays = sleeper.delays();
                prop_assert!(started.elapsed() < Duration::from_secs(10));
                prop_assert!(delays.len() <= 2, "{delays:?}");
                prop_assert!(delays.iter().all(|d| *d <= CEILING), "{delays:?}");
                // Header bytes hyper accepts: HTAB, visible ASCII, space, obs-text.
                let clean = fields
                    .iter()
                    .flatten()
                    .all(|b| *b == b'\t' || (0x20..=0x7e).contains(b) || *b >= 0x80);
                if !clean {
                    return Ok(()); // a malformed response: any typed ending will do
                }
                let now = SystemTime::now();
                let asked = fields
                    .iter()
                    .filter_map(|f| parse_retry_after_bytes(f, now))
                    .max();
                match (asked, result) {
                    (Some(asked), Err(error)) if asked > CEILING => {
                        prop_assert!(error.is_retry_after_too_long(), "{error}");
                        prop_assert!(delays.is_empty());
                    }
                    (Some(asked), Ok(response)) => {
                        prop_assert_eq!(response.status().as_u16(), 200);
                        prop_assert_eq!(delays.len(), 1);
                        // The pause is max(asked, backoff): never earlier than asked,
                        // and a short ask keeps the jitter. Dates are whole seconds:
                        // allow the clock to move between the client's parse and this one.
                        let slack = Duration::from_secs(2);
                        prop_assert!(
                            asked.saturating_sub(delays[0]) < slack
                                && delays[0] <= asked.max(BACKOFF_CAP) + slack,
                            "asked {asked:?}, slept {delays:?}"
                        );
                    }
                    (None, Ok(response)) => {
                        prop_assert_eq!(response.status().as_u16(), 200);
                        prop_assert_eq!(delays.len(), 1);
                        prop_assert!(delays[0] <= BACKOFF_CAP);
                    }
                    (asked, result) => {
                        return Err(TestCaseError::fail(format!(
                            "fields {fields:?}: asked {asked:?}, got {result:?}"
                        )))
                    }
                }
                Ok(())
            })
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
}

/// Whether a refusal is the expected one.
type KeyCheck = fn(&InvalidKey) -> bool;

/// A caller key with control characters, a newline, non-ASCII or over 255 bytes is
/// refused before anything is sent, with the precise reason.
#[tokio::test]
async fn fuzz_invalid_caller_keys_fail_before_anything_is_sent() {
    let server = ReferenceServer::start(Config::default()).await;
    let (client, sleeper) = recording_client(|p| p);
    let too_long = "k".repeat(256);
    let much_too_long = "k".repeat(10_000);
    let cases: Vec<(&str, KeyCheck)> = vec![
        ("line\nbreak", |e| {
            matches!(e, InvalidKey::ForbiddenByte { position: 4 })
        }),
        ("header\r\nX-Injected: 1", |e| {
            matches!(e, InvalidKey::ForbiddenByte { position: 6 })
        }),
        ("nul\0byte", |e| {
            matches!(e, InvalidKey::ForbiddenByte { position: 3 })
        }),
        ("tab\there", |e| {
            matches!(e, InvalidKey::ForbiddenByte { .. })
        }),
        ("bell\x07", |e| {
            matches!(e, InvalidKey::ForbiddenByte { .. })
        }),
        ("del\x7f", |e| {
            matches!(e, InvalidKey::ForbiddenByte { position: 3 })
        }),
        ("escape\x1b[31m", |e| {
            matches!(e, InvalidKey::ForbiddenByte { .. })
        }),
        ("clé-unicode", |e| {
            matches!(e, InvalidKey::ForbiddenByte { position: 2 })
        }),
        (too_long.as_str(), |e| matches!(e, InvalidKey::TooLong(256))),
        (much_too_long.as_str(), |e| {
            matches!(e, InvalidKey::TooLong(10_000))
        }),
        ("", |e| matches!(e, InvalidKey::Empty)),
        (" leading", |e| {
            matches!(e, InvalidKey::SurroundingWhitespace)
        }),
        ("trailing ", |e| {
            matches!(e, InvalidKey::SurroundingWhitespace)
        }),
    ];
    for (bad, reason) in cases {
        let started = Instant::now();
        let error = post_payment(&client, &server, bad, &payment(500))
            .send()
            .await
            .expect_err("an invalid key is refused");
        assert!(error.is_invalid_request(), "{bad:?}: {error}");
        let key_error = error.key_error().expect("the key's reason");
        assert!(reason(key_error), "{bad:?}: {key_error:?}");
        assert!(error.to_string().contains("idempotency key"), "{error}");
        assert_eq!(error.attempts(), 0);
        assert!(!error.is_outcome_unknown(), "nothing was sent");
        assert!(started.elapsed() < Duration::from_secs(1));
    }
    // A key header written by hand is checked the same way.
    let by_hand = client
        .post(server.at("/payments"))
        .header(
            "Idempotency-Key",
            http::HeaderValue::from_bytes(b"by-hand-\xff").unwrap(),
        )
        .body(payment(500).to_string())
        .send()
        .await
        .expect_err("refused");
    assert!(by_hand.is_invalid_request());
    assert!(matches!(
        by_hand.key_error(),
        Some(InvalidKey::ForbiddenByte { .. })
    ));
    // A header value that cannot be a header at all: the request cannot be built.
    let unbuildable = client
        .post(server.at("/payments"))
        .header("Idempotency-Key", "line\nbreak")
        .body(payment(500).to_string())
        .send()
        .await
        .expect_err("refused");
    assert!(unbuildable.is_invalid_request(), "{unbuildable}");
    assert_eq!(unbuildable.attempts(), 0);
    // Server received nothing, and nothing was waited for.
    assert!(server.received().is_empty(), "{:#?}", server.received());
    assert!(sleeper.delays().is_empty());
    assert_eq!(server.effects(), 0);

    // The boundary: 255 bytes, quotes and backslashes travel verbatim.
    for good in ["k".repeat(255), r#"order-42/"quoted"\back"#.to_owned()] {
        let response = post_payment(&client, &server, &good, &payment(500))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        assert_eq!(
            server.received().last().unwrap().key.as_deref(),
            Some(good.as_str())
        );
    }
    // In the draft's sf-string format the server gets the quoted form.
    let (sf_client, _) = recording_client(|p| p.key_format(KeyFormat::SfString));
    let response = post_payment(&sf_client, &server, r#"a"b\c"#, &payment(500))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    assert_eq!(
        server.received().last().unwrap().key.as_deref(),
        Some(r#""a\"b\\c""#)
    );
}
