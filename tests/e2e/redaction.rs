//! Secrets never reach the logs: the whole idempotency key, Authorization values
//! and bodies are absent from everything the intent traces, at TRACE level, on a
//! failing intent (the path with the most logging).

use crate::log_capture::capture_traces;
use crate::support::{
    recording_client, Config, Expected, Fault, IdempotentServer, ReferenceServer,
};

const KEY: &str = "idem-SECRETKEY-7c1f09a2b3d4e5f6";
const KEY_TAIL: &str = "SECRETKEY-7c1f09a2b3d4e5f6";
const TOKEN: &str = "sk_live_TOKEN_must_not_leak_91ab";
const USER_PASSWORD: &str = "PASSWORD_must_not_leak_55";
const CARD: &str = "4242424242424242";

/// Current-thread runtime: the subscriber set with `set_default` sees the client
/// (and the server, which traces nothing) on this thread.
#[tokio::test]
async fn redaction_failing_intent_never_logs_the_key_authorization_or_body() {
    let (captured, _guard) = capture_traces();

    let server = ReferenceServer::start(Config::default()).await;
    // A lost response, then refusals until the attempts run out.
    server.plan(
        KEY,
        [
            Fault::DropAfterCommit,
            Fault::Unavailable {
                retry_after_secs: None,
            },
            Fault::Unavailable {
                retry_after_secs: None,
            },
        ],
    );
    // Expected: one payment (committed, response lost), three deliveries.
    let expected = Expected {
        effects: 1,
        deliveries: Some(3),
    };
    let (client, _) = recording_client(|p| p.max_attempts(3));
    let body = format!(r#"{{"amount":500,"card":"{CARD}","cvc":"123"}}"#);

    let error = client
        .post(server.at("/payments"))
        .bearer_auth(TOKEN)
        .idempotency_key(KEY)
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .expect_err("the intent gives up");
    assert!(error.is_attempts_exhausted(), "{error}");
    assert!(error.is_outcome_unknown());
    server.assert_state(KEY, &expected);

    // A second failing intent with basic auth (user:password in the header).
    let basic_key = "basic-SECRET-0123456789abcdef";
    server.plan(basic_key, [Fault::DropBeforeCommit; 3]);
    let basic_error = client
        .post(server.at("/payments"))
        .basic_auth("merchant_user", Some(USER_PASSWORD))
        .idempotency_key(basic_key)
        .body(body)
        .send()
        .await
        .expect_err("gives up");
    assert!(basic_error.is_outcome_unknown());

    let output = captured.text();
    // The capture works: the intent, its attempts and its end are there, with the
    // key's short prefix.
    for present in [
        "intent",
        "attempt",
        "intent gave up",
        "idempotency_key=idem-SEC…",
        "http.request.resend_count=2",
    ] {
        assert!(
            output.contains(present),
            "missing {present:?} in:\n{output}"
        );
    }
    let basic_credentials = {
        use base64_free::encode;
        encode(format!("merchant_user:{USER_PASSWORD}").as_bytes())
    };
    for secret in [
        KEY,
        KEY_TAIL,
        basic_key,
        TOKEN,
        "Bearer",
        "Basic ",
        USER_PASSWORD,
        basic_credentials.as_str(),
        CARD,
        "cvc",
        "authorization",
        "Authorization",
    ] {
        assert!(
            !output.contains(secret),
            "{secret:?} leaked into:\n{output}"
        );
    }
    // Nor in what the caller might log: the error's Display and Debug.
    for shown in [
        format!("{error}"),
        format!("{error:?}"),
        format!("{basic_error}"),
        format!("{basic_error:?}"),
        format!("{:?}", error.attempt_log()),
    ] {
        for secret in [KEY, KEY_TAIL, TOKEN, USER_PASSWORD, CARD] {
            assert!(!shown.contains(secret), "{secret:?} leaked into {shown}");
        }
    }
}

/// Base64 without a dependency (the standard alphabet, with padding).
mod base64_free {
    pub fn encode(bytes: &[u8]) -> String {
        const TABLE: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                chunk.get(1).copied().unwrap_or(0),
                chunk.get(2).copied().unwrap_or(0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(TABLE[(n >> (18 - 6 * i)) as usize & 63] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }
}

/// A short caller key must not be logged whole either. `IdempotencyKey::redacted`
/// shows the first 8 characters, which for a key of 8 characters or fewer is the
/// whole key: the intent span's `idempotency_key` field and `Error`'s `Debug` then
/// carry it in full (DESIGN: "never log it whole (a short prefix or a hash)").
#[tokio::test]
async fn redaction_short_caller_key_is_never_logged_whole() {
    let (captured, _guard) = capture_traces();
    let server = ReferenceServer::start(Config::default()).await;
    let (client, _) = recording_client(|p| p.max_attempts(2));
    // Keys of 6 and 8 characters, made of letters no log line otherwise contains.
    let mut debugs = Vec::new();
    for key in ["Zq84xW", "ord-1842"] {
        server.plan(key, [Fault::DropAfterCommit, Fault::DropBeforeCommit]);
        // Expected: one payment, two deliveries, outcome unknown.
        let error = client
            .post(server.at("/payments"))
            .idempotency_key(key)
            .body(r#"{"amount":1}"#)
            .send()
            .await
            .expect_err("gives up");
        server.assert_state(
            key,
            &Expected {
                effects: 1,
                deliveries: Some(2),
            },
        );
        debugs.push((key, format!("{error:?}")));
    }
    let output = captured.text();
    assert!(output.contains("intent gave up"), "{output}");
    for key in ["Zq84xW", "ord-1842"] {
        assert!(!output.contains(key), "{key:?} logged whole:\n{output}");
    }
    for (key, debug) in debugs {
        assert!(
            !debug.contains(key),
            "{key:?} whole in the error's Debug: {debug}"
        );
    }
    // The public redaction itself, for every short length.
    for key in ["Q", "ab", "k-42", "Zq84xW", "ord-1842"] {
        let shown = reqwest_resilience::IdempotencyKey::new(key)
            .unwrap()
            .redacted();
        assert!(
            !shown.contains(key),
            "redacted() of {key:?} shows it whole: {shown:?}"
        );
    }
}
