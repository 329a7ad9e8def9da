//! `RetryPolicyConfig`: policies from TOML, JSON and environment variables, and
//! errors that name the setting to fix.

#![cfg(feature = "serde")]

use std::time::{Duration, Instant};

use http::Method;
use reqwest_resilience::{
    Backoff, BuildError, ConfigError, KeyFormat, RetryBudget, RetryPolicy, RetryPolicyConfig,
};

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

fn toml_config(text: &str) -> RetryPolicyConfig {
    toml::from_str(text).unwrap_or_else(|e| panic!("valid TOML config: {e}"))
}

fn toml_error(text: &str) -> ConfigError {
    toml_config(text)
        .build()
        .expect_err("the policy is rejected")
}

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

/// Asserts that `error` names `field`, both in `field()` and in its message.
#[track_caller]
fn assert_names(error: &ConfigError, field: &str) {
    assert_eq!(error.field(), Some(field), "{error}");
    assert!(
        error.to_string().contains(field),
        "{field:?} not in the message {error}"
    );
}

const FULL_TOML: &str = r#"
max_attempts = 4
deadline = "5s"
attempt_timeout = "1.5s"
retry_after_ceiling = "20s"
transient_statuses = [429, 500, 503]
retry_conflict_when_keyed = false
conflict_delay = "2s"
key_attachment = "always"
key_format = "sf_string"
key_header = "X-Idempotency-Key"
request_id_header = "X-Correlation-Id"
server_hint_header = "Stripe-Should-Retry"
redact_query_params = ["api_key", "token"]
rng_seed = 7

[backoff]
strategy = "decorrelated_jitter"
base = "50ms"
cap = "1s"

[budget]
ratio = 0.2
window = "30s"
reserve = 5
per_host = true
"#;

fn assert_full_policy(policy: &RetryPolicy) {
    assert_eq!(policy.max_attempts(), 4);
    assert_eq!(
        policy.backoff(),
        Backoff::decorrelated_jitter(50 * MS, 1000 * MS)
    );
    assert_eq!(policy.deadline(), Some(5 * S));
    assert_eq!(policy.attempt_timeout(), Some(1500 * MS));
    assert_eq!(policy.retry_after_ceiling(), 20 * S);
    assert_eq!(policy.conflict_delay(), 2 * S);
    assert_eq!(
        policy.transient_statuses().iter().collect::<Vec<_>>(),
        vec![429, 500, 503]
    );
    assert!(
        policy.generates_key_for(&Method::GET),
        "key_attachment = always"
    );
    assert_eq!(policy.key_format(), KeyFormat::SfString);
    assert_eq!(policy.key_header().as_str(), "x-idempotency-key");
    assert_eq!(
        policy.server_hint_header().map(|h| h.as_str()),
        Some("stripe-should-retry")
    );
    assert_eq!(policy.request_id_header().as_str(), "x-correlation-id");
    assert_eq!(policy.redacted_query_params(), ["api_key", "token"]);
    assert_eq!(policy.budget().unwrap().ratio(), 0.2);
    assert_eq!(policy.budget().unwrap().window(), 30 * S);
    assert_eq!(policy.budget().unwrap().reserve(), 5);
    assert!(policy.budget().unwrap().is_per_host());
    assert!(!policy.retry_conflict_when_keyed());
    assert_eq!(
        policy.key_attachment(),
        reqwest_resilience::KeyAttachment::Always
    );
    assert!(policy.is_seeded());
}

#[test]
fn a_toml_file_becomes_the_policy_it_describes() {
    assert_full_policy(&toml_config(FULL_TOML).build().unwrap());
}

#[test]
fn a_json_file_becomes_the_policy_it_describes() {
    let json = r#"{
        "max_attempts": 4,
        "deadline": "5s",
        "attempt_timeout": "1.5s",
        "retry_after_ceiling": "20s",
        "transient_statuses": [429, 500, 503],
        "retry_conflict_when_keyed": false,
        "conflict_delay": "2s",
        "key_attachment": "always",
        "key_format": "sf_string",
        "key_header": "X-Idempotency-Key",
        "request_id_header": "X-Correlation-Id",
        "server_hint_header": "Stripe-Should-Retry",
        "redact_query_params": ["api_key", "token"],
        "rng_seed": 7,
        "backoff": { "strategy": "decorrelated_jitter", "base": "50ms", "cap": "1s" },
        "budget": { "ratio": 0.2, "window": "30s", "reserve": 5, "per_host": true }
    }"#;
    let config: RetryPolicyConfig = serde_json::from_str(json).unwrap();
    assert_eq!(config, toml_config(FULL_TOML));
    assert_full_policy(&config.build().unwrap());
}

#[test]
fn an_empty_config_is_the_default_policy() {
    let from_toml = toml_config("");
    let from_json: RetryPolicyConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(from_toml, RetryPolicyConfig::default());
    assert_eq!(from_json, RetryPolicyConfig::default());
    assert_eq!(
        RetryPolicyConfig::from_env_vars("RETRY", Vec::new()).unwrap(),
        RetryPolicyConfig::default()
    );

    let policy = RetryPolicyConfig::default().build().unwrap();
    let default = RetryPolicy::default();
    assert_eq!(policy.max_attempts(), default.max_attempts());
    assert_eq!(policy.backoff(), default.backoff());
    assert_eq!(policy.deadline(), default.deadline());
    assert_eq!(policy.attempt_timeout(), default.attempt_timeout());
    assert_eq!(policy.retry_after_ceiling(), default.retry_after_ceiling());
    assert_eq!(policy.transient_statuses(), default.transient_statuses());
    assert_eq!(policy.key_format(), default.key_format());
    assert_eq!(policy.key_header(), default.key_header());
    assert_eq!(policy.request_id_header(), default.request_id_header());
    assert_eq!(
        policy.budget().unwrap().ratio(),
        default.budget().unwrap().ratio()
    );
    assert_eq!(
        policy.budget().unwrap().window(),
        default.budget().unwrap().window()
    );
    assert_eq!(
        policy.budget().unwrap().reserve(),
        default.budget().unwrap().reserve()
    );
    assert_eq!(
        policy.budget().unwrap().is_per_host(),
        default.budget().unwrap().is_per_host()
    );
    for method in [Method::GET, Method::POST, Method::PUT, Method::PATCH] {
        assert_eq!(
            policy.generates_key_for(&method),
            default.generates_key_for(&method)
        );
    }
    assert_eq!(format!("{policy:?}"), format!("{default:?}"));
}

#[test]
fn only_the_settings_given_change() {
    let policy = toml_config("max_attempts = 5").build().unwrap();
    let default = RetryPolicy::default();
    assert_eq!(policy.max_attempts(), 5);
    assert_eq!(policy.backoff(), default.backoff());
    assert_eq!(policy.deadline(), default.deadline());
    // A short deadline implies half of it per attempt, as in the builder.
    let policy = toml_config(r#"deadline = "4s""#).build().unwrap();
    assert_eq!(policy.attempt_timeout(), Some(2 * S));
}

#[test]
fn every_duration_form() {
    let cases = [
        ("250ms", 250 * MS),
        ("2s", 2 * S),
        ("1.5s", 1500 * MS),
        ("1m", 60 * S),
        ("1m30s", 90 * S),
        ("500us", Duration::from_micros(500)),
        ("500µs", Duration::from_micros(500)),
        ("10ns", Duration::from_nanos(10)),
        ("1h", 3600 * S),
        ("2m 3.5s", Duration::from_millis(123_500)),
        ("0.25m", 15 * S),
        ("0", Duration::ZERO),
    ];
    for (text, expected) in cases {
        let config = toml_config(&format!("retry_after_ceiling = {text:?}"));
        let policy = config.build().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(policy.retry_after_ceiling(), expected, "{text}");
    }
}

#[test]
fn none_disables_the_deadline_and_the_attempt_timeout() {
    let policy = toml_config(
        r#"
        deadline = "none"
        attempt_timeout = "none"
        "#,
    )
    .build()
    .unwrap();
    assert_eq!(policy.deadline(), None);
    assert_eq!(policy.attempt_timeout(), None);
    // Without a deadline the default attempt timeout stays 10 s.
    let policy = toml_config(r#"deadline = "none""#).build().unwrap();
    assert_eq!(policy.attempt_timeout(), Some(10 * S));
    // `false` is not a spelling of "none": serde rejects it.
    let error = toml::from_str::<RetryPolicyConfig>("deadline = false")
        .unwrap_err()
        .to_string();
    assert!(error.contains("deadline"), "{error}");
    assert!(error.contains(r#"or "none" for no limit"#), "{error}");
}

#[test]
fn bad_durations_name_the_setting_and_the_value() {
    let cases = [
        (
            "[backoff]\nbase = \"2 parsecs\"",
            "backoff.base",
            "unknown unit \"parsecs\"",
        ),
        ("[backoff]\ncap = \"\"", "backoff.cap", "empty"),
        ("deadline = \"-1s\"", "deadline", "negative"),
        (
            "attempt_timeout = \"10\"",
            "attempt_timeout",
            "missing unit",
        ),
        (
            "retry_after_ceiling = \"1.5.2s\"",
            "retry_after_ceiling",
            "missing unit",
        ),
        (
            "retry_after_ceiling = \"99999999999999999999h\"",
            "retry_after_ceiling",
            "too large",
        ),
        (
            "[budget]\nwindow = \"ten seconds\"",
            "budget.window",
            "expected a number",
        ),
        (
            "[backoff]\nstrategy = \"constant\"\ndelay = \"5 fortnights\"",
            "backoff.delay",
            "unknown unit \"fortnights\"",
        ),
    ];
    for (text, field, reason) in cases {
        let error = toml_error(text);
        assert_names(&error, field);
        assert!(
            matches!(&error, ConfigError::InvalidDuration { .. }),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(reason), "{reason:?} not in {message}");
    }
    let error = toml_error("[backoff]\nbase = \"2 parsecs\"");
    assert_eq!(
        error.to_string(),
        r#"backoff.base: invalid duration "2 parsecs": unknown unit "parsecs" (use ns, us, ms, s, m or h)"#
    );
    assert!(matches!(
        &error,
        ConfigError::InvalidDuration { field, value, .. }
            if field == "backoff.base" && value == "2 parsecs"
    ));
}

#[test]
fn unknown_settings_are_rejected_by_name() {
    let error = toml::from_str::<RetryPolicyConfig>("max_attempt = 4").unwrap_err();
    assert!(error.to_string().contains("max_attempt"), "{error}");
    let error = toml::from_str::<RetryPolicyConfig>("[backoff]\njitter = true").unwrap_err();
    assert!(error.to_string().contains("jitter"), "{error}");
    let error =
        serde_json::from_str::<RetryPolicyConfig>(r#"{"budget": {"ratoi": 0.2}}"#).unwrap_err();
    assert!(error.to_string().contains("ratoi"), "{error}");
}

#[test]
fn bad_enum_values_name_the_setting() {
    for (text, field, value) in [
        (
            "key_attachment = \"sometimes\"",
            "key_attachment",
            "sometimes",
        ),
        ("key_format = \"quoted\"", "key_format", "quoted"),
        (
            "[backoff]\nstrategy = \"fibonacci\"",
            "backoff.strategy",
            "fibonacci",
        ),
        ("budget = \"plenty\"", "budget", "plenty"),
    ] {
        let error = toml::from_str::<RetryPolicyConfig>(text).unwrap_err();
        let message = error.to_string();
        assert!(message.contains(field), "{field} not in {message}");
        assert!(message.contains(value), "{value} not in {message}");
    }
    let error = serde_json::from_str::<RetryPolicyConfig>(r#"{"key_format": "quoted"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(
            "key_format: invalid value \"quoted\", expected one of \"token\", \"sf_string\""
        ),
        "{error}"
    );
    // Through environment variables the error is a ConfigError naming the variable.
    let error =
        RetryPolicyConfig::from_env_vars("RETRY", vars(&[("RETRY_KEY_ATTACHMENT", "sometimes")]))
            .unwrap_err();
    assert_names(&error, "RETRY_KEY_ATTACHMENT");
    assert!(error.to_string().contains("unsafe_methods"), "{error}");
}

#[test]
fn invalid_policies_name_the_setting() {
    let cases: [(&str, &str); 11] = [
        ("max_attempts = 0", "max_attempts"),
        ("max_attempts = 51", "max_attempts"),
        ("[backoff]\nbase = \"3s\"\ncap = \"2s\"", "backoff.base"),
        ("[backoff]\ncap = \"50ms\"", "backoff.base"),
        ("[backoff]\nbase = \"0s\"", "backoff.base"),
        ("[backoff]\ncap = \"2h\"", "backoff.cap"),
        (
            "[backoff]\nstrategy = \"constant\"\ndelay = \"2h\"",
            "backoff.delay",
        ),
        ("deadline = \"0s\"", "deadline"),
        (
            "deadline = \"1s\"\nattempt_timeout = \"2s\"",
            "attempt_timeout",
        ),
        ("key_header = \"bad header\"", "key_header"),
        (
            "request_id_header = \"Idempotency-Key\"",
            "request_id_header",
        ),
    ];
    for (text, field) in cases {
        let error = toml_error(text);
        assert_names(&error, field);
        assert!(
            matches!(&error, ConfigError::Policy { .. }),
            "{text}: {error:?}"
        );
    }
    // The budget validates its own settings (one way to configure it).
    let error = toml_error("[budget]\nratio = 0.0");
    assert_names(&error, "budget.ratio");
    let error = toml_error("[budget]\nwindow = \"0s\"");
    assert_names(&error, "budget.window");

    let error = toml_error("max_attempts = 0");
    assert_eq!(
        error,
        ConfigError::Policy {
            field: Some("max_attempts".to_owned()),
            source: BuildError::MaxAttempts(0),
        }
    );
    assert_eq!(
        error.to_string(),
        "max_attempts: max_attempts must be between 1 and 50, got 0"
    );
    let source = std::error::Error::source(&error).expect("the builder's error");
    assert_eq!(source.to_string(), BuildError::MaxAttempts(0).to_string());

    let error = toml_error("deadline = \"1s\"\nattempt_timeout = \"2s\"");
    assert_eq!(
        error.to_string(),
        "attempt_timeout: attempt_timeout 2s is longer than the deadline 1s"
    );
}

#[test]
fn backoff_settings_must_fit_the_strategy() {
    let cases = [
        ("[backoff]\ndelay = \"50ms\"", "backoff.delay"),
        (
            "[backoff]\nstrategy = \"decorrelated_jitter\"\ndelay = \"50ms\"",
            "backoff.delay",
        ),
        ("[backoff]\nstrategy = \"constant\"", "backoff.delay"),
        (
            "[backoff]\nstrategy = \"constant\"\ndelay = \"1s\"\ncap = \"2s\"",
            "backoff.cap",
        ),
        (
            "[backoff]\nstrategy = \"none\"\nbase = \"1s\"",
            "backoff.base",
        ),
    ];
    for (text, field) in cases {
        let error = toml_error(text);
        assert_names(&error, field);
        assert!(matches!(&error, ConfigError::Conflict { .. }), "{error:?}");
    }

    let strategy = |text: &str| toml_config(text).build().unwrap().backoff();
    assert_eq!(
        strategy("[backoff]\nstrategy = \"constant\"\ndelay = \"50ms\""),
        Backoff::constant(50 * MS)
    );
    assert_eq!(strategy("[backoff]\nstrategy = \"none\""), Backoff::none());
    // The strategy defaults to full jitter, base and cap to 100 ms and 2 s.
    assert_eq!(
        strategy("[backoff]\nbase = \"10ms\""),
        Backoff::full_jitter(10 * MS, 2 * S)
    );
    assert_eq!(
        strategy("[backoff]\nstrategy = \"decorrelated_jitter\"\ncap = \"5s\""),
        Backoff::decorrelated_jitter(100 * MS, 5 * S)
    );
    assert_eq!(
        strategy("backoff = { strategy = \"full_jitter\", base = \"100ms\", cap = \"2s\" }"),
        Backoff::full_jitter(100 * MS, 2 * S)
    );
}

#[test]
fn status_codes_must_be_http_statuses() {
    let error = toml_error("transient_statuses = [503, 42]");
    assert_names(&error, "transient_statuses");
    assert!(error.to_string().contains("\"42\""), "{error}");
    let policy = toml_config("transient_statuses = []").build().unwrap();
    assert_eq!(policy.transient_statuses().iter().count(), 0);
}

#[test]
fn an_unlimited_budget() {
    let policy = toml_config("budget = \"unlimited\"").build().unwrap();
    assert!(policy.budget().is_none(), "no budget gate at all");
    let limited = toml_config("[budget]\nreserve = 0").build().unwrap();
    assert_eq!(
        limited
            .budget()
            .unwrap()
            .available_at("any", Instant::now()),
        0
    );
    assert_eq!(
        limited.budget().unwrap().ratio(),
        0.1,
        "unset budget keys keep defaults"
    );
}

#[test]
fn environment_variables_configure_every_setting() {
    let config = RetryPolicyConfig::from_env_vars(
        RetryPolicyConfig::DEFAULT_ENV_PREFIX,
        vars(&[
            ("RESILIENCE_MAX_ATTEMPTS", "4"),
            ("RESILIENCE_BACKOFF_STRATEGY", "decorrelated_jitter"),
            ("RESILIENCE_BACKOFF_BASE", "50ms"),
            ("RESILIENCE_BACKOFF_CAP", "1s"),
            ("RESILIENCE_DEADLINE", "5s"),
            ("RESILIENCE_ATTEMPT_TIMEOUT", "1.5s"),
            ("RESILIENCE_RETRY_AFTER_CEILING", "20s"),
            ("RESILIENCE_TRANSIENT_STATUSES", "429, 500,503"),
            ("RESILIENCE_RETRY_CONFLICT_WHEN_KEYED", "false"),
            ("RESILIENCE_CONFLICT_DELAY", "2s"),
            ("RESILIENCE_KEY_ATTACHMENT", "always"),
            ("RESILIENCE_KEY_FORMAT", "sf_string"),
            ("RESILIENCE_KEY_HEADER", "X-Idempotency-Key"),
            ("RESILIENCE_REQUEST_ID_HEADER", "X-Correlation-Id"),
            ("RESILIENCE_SERVER_HINT_HEADER", "Stripe-Should-Retry"),
            ("RESILIENCE_REDACT_QUERY_PARAMS", "api_key, token"),
            ("RESILIENCE_BUDGET_RATIO", "0.2"),
            ("RESILIENCE_BUDGET_WINDOW", "30s"),
            ("RESILIENCE_BUDGET_RESERVE", "5"),
            ("RESILIENCE_BUDGET_PER_HOST", "true"),
            ("RESILIENCE_RNG_SEED", "7"),
            ("PATH", "/usr/bin"),
            ("RESILIENCEX_MAX_ATTEMPTS", "9"),
        ]),
    )
    .unwrap();
    assert_eq!(config, toml_config(FULL_TOML));
    assert_full_policy(&config.build().unwrap());
}

#[test]
fn environment_prefix_with_or_without_underscore() {
    let with = RetryPolicyConfig::from_env_vars(
        "PAYMENTS_RETRY_",
        vars(&[("PAYMENTS_RETRY_DEADLINE", "none")]),
    )
    .unwrap();
    let without = RetryPolicyConfig::from_env_vars(
        "PAYMENTS_RETRY",
        vars(&[("PAYMENTS_RETRY_DEADLINE", "none")]),
    )
    .unwrap();
    assert_eq!(with, without);
    assert_eq!(with.build().unwrap().deadline(), None);
}

#[test]
fn environment_errors_name_the_variable() {
    let error =
        RetryPolicyConfig::from_env_vars("RETRY", vars(&[("RETRY_MAX_ATEMPTS", "4")])).unwrap_err();
    assert_names(&error, "RETRY_MAX_ATEMPTS");
    assert!(matches!(error, ConfigError::UnknownVariable { .. }));
    assert!(error.to_string().contains("MAX_ATTEMPTS"), "{error}");

    let cases = [
        ("RETRY_MAX_ATTEMPTS", "four"),
        ("RETRY_BACKOFF_BASE", "2 parsecs"),
        ("RETRY_DEADLINE", ""),
        ("RETRY_TRANSIENT_STATUSES", "429,abc"),
        ("RETRY_TRANSIENT_STATUSES", "1000"),
        ("RETRY_RETRY_CONFLICT_WHEN_KEYED", "maybe"),
        ("RETRY_BUDGET", "lots"),
        ("RETRY_BUDGET_RATIO", "a fifth"),
        ("RETRY_BACKOFF_STRATEGY", "linear"),
        ("RETRY_RNG_SEED", "-1"),
    ];
    for (name, value) in cases {
        let error =
            RetryPolicyConfig::from_env_vars("RETRY", vars(&[(name, value)])).expect_err(name);
        assert_names(&error, name);
    }

    let error = RetryPolicyConfig::from_env_vars(
        "RETRY",
        vars(&[("RETRY_BUDGET_RATIO", "0.2"), ("RETRY_BUDGET", "unlimited")]),
    )
    .unwrap_err();
    assert_names(&error, "RETRY_BUDGET_RATIO");
    assert!(
        error.to_string().contains("RETRY_BUDGET is \"unlimited\""),
        "{error}"
    );

    // Range errors found only when the policy is built still name the variable.
    let config =
        RetryPolicyConfig::from_env_vars("RETRY", vars(&[("RETRY_MAX_ATTEMPTS", "0")])).unwrap();
    assert_names(&config.build().unwrap_err(), "RETRY_MAX_ATTEMPTS");
}

/// The TOML key → variable rule, applied mechanically: `{PREFIX}_` + the key in upper
/// case, a table's key joined with `_`. Every setting, one at a time, read both ways,
/// must give the same configuration; with the documented prefix no name doubles.
#[test]
fn every_variable_is_its_toml_key_in_upper_case_under_the_prefix() {
    // (TOML key, TOML value, the same value as an environment variable holds it)
    let settings = [
        ("max_attempts", "4", "4"),
        ("deadline", r#""5s""#, "5s"),
        ("attempt_timeout", r#""none""#, "none"),
        ("retry_after_ceiling", r#""20s""#, "20s"),
        ("transient_statuses", "[429, 503]", "429,503"),
        ("retry_conflict_when_keyed", "false", "false"),
        ("conflict_delay", r#""2s""#, "2s"),
        ("key_attachment", r#""always""#, "always"),
        ("key_format", r#""sf_string""#, "sf_string"),
        ("key_header", r#""X-Idempotency-Key""#, "X-Idempotency-Key"),
        (
            "request_id_header",
            r#""X-Correlation-Id""#,
            "X-Correlation-Id",
        ),
        (
            "server_hint_header",
            r#""Stripe-Should-Retry""#,
            "Stripe-Should-Retry",
        ),
        (
            "redact_query_params",
            r#"["api_key", "token"]"#,
            "api_key,token",
        ),
        ("rng_seed", "7", "7"),
        ("backoff.strategy", r#""constant""#, "constant"),
        ("backoff.base", r#""50ms""#, "50ms"),
        ("backoff.cap", r#""1s""#, "1s"),
        ("backoff.delay", r#""250ms""#, "250ms"),
        ("budget", r#""unlimited""#, "unlimited"),
        ("budget.ratio", "0.2", "0.2"),
        ("budget.window", r#""30s""#, "30s"),
        ("budget.reserve", "5", "5"),
        ("budget.per_host", "true", "true"),
        ("breaker", r#""on""#, "on"),
        ("breaker.failure_ratio", "0.25", "0.25"),
        ("breaker.sampling_duration", r#""10s""#, "10s"),
        ("breaker.minimum_throughput", "20", "20"),
        ("breaker.break_duration", r#""2s""#, "2s"),
        ("breaker.probes", "3", "3"),
        ("breaker.per_host", "false", "false"),
        ("breaker.slow_call_duration", r#""1s""#, "1s"),
        ("throttle", r#""on""#, "on"),
        ("throttle.k", "1.5", "1.5"),
        ("throttle.window", r#""10s""#, "10s"),
        ("throttle.min_requests", "50", "50"),
        ("throttle.max_rejection_probability", "0.5", "0.5"),
        ("throttle.per_host", "false", "false"),
        ("hedging", r#""on""#, "on"),
        ("hedging.delay", r#""adaptive""#, "adaptive"),
        ("hedging.percentile", "99.0", "99.0"),
        ("hedging.min_samples", "50", "50"),
        ("hedging.floor", r#""25ms""#, "25ms"),
        ("hedging.refresh", r#""2s""#, "2s"),
        ("hedging.max_copies", "3", "3"),
        ("hedging.cap_ratio", "0.1", "0.1"),
        ("hedging.cap_burst", "5", "5"),
        ("hedging.methods", r#"["GET", "PUT"]"#, "GET,PUT"),
    ];
    let prefix = RetryPolicyConfig::DEFAULT_ENV_PREFIX;
    // An unknown variable's message lists the variables that exist: exactly these.
    let unknown = RetryPolicyConfig::from_env_vars(prefix, vars(&[("RESILIENCE_NOPE", "1")]))
        .unwrap_err()
        .to_string();
    let listed: Vec<&str> = unknown
        .rsplit("followed by one of ")
        .next()
        .unwrap()
        .split(", ")
        .collect();
    assert_eq!(listed.len(), settings.len(), "{unknown}");
    for (key, toml_value, env_value) in settings {
        let toml_text = match key.split_once('.') {
            Some((table, key)) => format!("[{table}]\n{key} = {toml_value}"),
            None => format!("{key} = {toml_value}"),
        };
        let variable = format!("{prefix}_{}", key.to_uppercase().replace('.', "_"));
        assert!(!variable.contains("RETRY_RETRY"), "{variable} doubles");
        let suffix = &variable[prefix.len() + 1..];
        assert!(listed.contains(&suffix), "{suffix} not in {unknown}");
        let from_env = RetryPolicyConfig::from_env_vars(prefix, vars(&[(&variable, env_value)]))
            .unwrap_or_else(|error| panic!("{variable}: {error}"));
        assert_eq!(from_env, toml_config(&toml_text), "{variable} is not {key}");
    }
    // Every variable the loader knows is in the table above.
    assert_eq!(settings.len(), 47);
}

/// The policy errors `invalid_policies_name_the_setting` finds in a file, written as
/// environment variables: each names the variable that set the value, not the TOML path.
#[test]
fn invalid_policies_from_the_environment_name_the_variable() {
    let cases: [(&[(&str, &str)], &str); 14] = [
        (&[("APP_MAX_ATTEMPTS", "99")], "APP_MAX_ATTEMPTS"),
        (
            &[("APP_BACKOFF_BASE", "3s"), ("APP_BACKOFF_CAP", "2s")],
            "APP_BACKOFF_BASE",
        ),
        (&[("APP_BACKOFF_BASE", "5s")], "APP_BACKOFF_BASE"),
        (&[("APP_BACKOFF_CAP", "2h")], "APP_BACKOFF_CAP"),
        (
            &[
                ("APP_BACKOFF_STRATEGY", "constant"),
                ("APP_BACKOFF_DELAY", "2h"),
            ],
            "APP_BACKOFF_DELAY",
        ),
        (&[("APP_BACKOFF_DELAY", "1s")], "APP_BACKOFF_DELAY"),
        (
            &[("APP_DEADLINE", "1s"), ("APP_ATTEMPT_TIMEOUT", "2s")],
            "APP_ATTEMPT_TIMEOUT",
        ),
        (
            &[("APP_RETRY_AFTER_CEILING", "2h")],
            "APP_RETRY_AFTER_CEILING",
        ),
        (&[("APP_CONFLICT_DELAY", "2h")], "APP_CONFLICT_DELAY"),
        (&[("APP_KEY_HEADER", "bad header")], "APP_KEY_HEADER"),
        (
            &[("APP_REQUEST_ID_HEADER", "Idempotency-Key")],
            "APP_REQUEST_ID_HEADER",
        ),
        (&[("APP_BUDGET_RATIO", "5")], "APP_BUDGET_RATIO"),
        (&[("APP_BUDGET_WINDOW", "2h")], "APP_BUDGET_WINDOW"),
        (&[("APP_HEDGING_MAX_COPIES", "9")], "APP_HEDGING_MAX_COPIES"),
    ];
    for (pairs, variable) in cases {
        let config = RetryPolicyConfig::from_env_vars("APP", vars(pairs))
            .unwrap_or_else(|error| panic!("{pairs:?} reads: {error}"));
        let error = config.build().expect_err(variable);
        assert_names(&error, variable);
        assert!(error.to_string().starts_with(variable), "{error}");
    }
}

#[test]
fn one_call_layers_a_file_under_environment_overrides() {
    let file = toml_config(FULL_TOML);
    let layered = file
        .clone()
        .overridden_by_env_vars(
            "PAYMENTS_HTTP",
            vars(&[
                ("PAYMENTS_HTTP_MAX_ATTEMPTS", "2"),
                ("PAYMENTS_HTTP_BACKOFF_BASE", "20ms"),
                ("PAYMENTS_HTTP_BUDGET_RATIO", "0.5"),
                ("UNRELATED", "x"),
            ]),
        )
        .unwrap();
    let policy = layered.build().unwrap();
    // From the environment:
    assert_eq!(policy.max_attempts(), 2);
    assert_eq!(policy.budget().unwrap().ratio(), 0.5);
    // The file's strategy and cap, with the environment's base:
    assert_eq!(policy.backoff(), Backoff::decorrelated_jitter(20 * MS, S));
    // Everything else from the file:
    assert_eq!(policy.deadline(), Some(5 * S));
    assert_eq!(policy.attempt_timeout(), Some(1500 * MS));
    assert_eq!(policy.conflict_delay(), 2 * S);
    // Nothing set: the file as it was.
    assert_eq!(
        file.clone()
            .overridden_by_env_vars("PAYMENTS_HTTP", Vec::new())
            .unwrap(),
        file
    );

    // A strategy from the environment replaces the file's whole backoff table.
    let constant = file
        .clone()
        .overridden_by_env_vars(
            "P",
            vars(&[
                ("P_BACKOFF_STRATEGY", "constant"),
                ("P_BACKOFF_DELAY", "300ms"),
            ]),
        )
        .unwrap();
    assert_eq!(
        constant.build().unwrap().backoff(),
        Backoff::constant(300 * MS)
    );
    // "unlimited" replaces the file's budget table; a budget key over "unlimited"
    // starts from the default budget.
    let unlimited = file
        .clone()
        .overridden_by_env_vars("P", vars(&[("P_BUDGET", "unlimited")]))
        .unwrap();
    assert!(unlimited.build().unwrap().budget().is_none());
    let limited = toml_config("budget = \"unlimited\"")
        .overridden_by_env_vars("P", vars(&[("P_BUDGET_RATIO", "0.3")]))
        .unwrap();
    assert_eq!(limited.build().unwrap().budget().unwrap().ratio(), 0.3);

    // Errors name the variable for what the environment set, the path for the file's.
    let error = file
        .clone()
        .overridden_by_env_vars("P", vars(&[("P_DEADLINE", "1s")]))
        .unwrap()
        .build()
        .unwrap_err();
    assert_names(&error, "attempt_timeout"); // 1.5 s from the file > 1 s from P_DEADLINE
    let error = file
        .overridden_by_env_vars("P", vars(&[("P_ATTEMPT_TIMEOUT", "9s")]))
        .unwrap()
        .build()
        .unwrap_err();
    assert_names(&error, "P_ATTEMPT_TIMEOUT");
    // A bad variable is refused while reading, before any layering.
    let error = toml_config(FULL_TOML)
        .overridden_by_env_vars("P", vars(&[("P_MAX_ATTEMPTS", "lots")]))
        .unwrap_err();
    assert_names(&error, "P_MAX_ATTEMPTS");
}

/// Every duration the crate prints (give-up messages, the attempt log) is written in
/// the notation configuration reads, so it can be pasted back.
#[test]
fn durations_as_messages_print_them_are_valid_settings() {
    for (printed, expected) in [
        ("2.002s", Duration::from_millis(2002)),
        ("300ms", 300 * MS),
        ("120s", 120 * S),
        ("250µs", Duration::from_micros(250)),
        ("0ms", Duration::ZERO),
    ] {
        let config = toml_config(&format!("conflict_delay = \"{printed}\""));
        let policy = config
            .build()
            .unwrap_or_else(|error| panic!("{printed}: {error}"));
        assert_eq!(policy.conflict_delay(), expected, "{printed}");
    }
}

#[test]
fn environment_special_values() {
    let config = RetryPolicyConfig::from_env_vars(
        "RETRY",
        vars(&[
            ("RETRY_BUDGET", "unlimited"),
            ("RETRY_TRANSIENT_STATUSES", ""),
            ("RETRY_ATTEMPT_TIMEOUT", "NONE"),
        ]),
    )
    .unwrap();
    let policy = config.build().unwrap();
    assert!(policy.budget().is_none());
    assert_eq!(policy.transient_statuses().iter().count(), 0);
    assert_eq!(policy.attempt_timeout(), None);
    assert_eq!(
        config,
        toml_config("budget = \"unlimited\"\ntransient_statuses = []\nattempt_timeout = \"NONE\"")
    );
}

#[test]
fn from_env_reads_the_process_environment() {
    // A prefix no other test or tool uses.
    std::env::set_var("RRCFGTEST_MAX_ATTEMPTS", "6");
    std::env::set_var("RRCFGTEST_BACKOFF_STRATEGY", "none");
    let config = RetryPolicyConfig::from_env("RRCFGTEST").unwrap();
    let policy = config.build().unwrap();
    assert_eq!(policy.max_attempts(), 6);
    assert_eq!(policy.backoff(), Backoff::none());
}

#[test]
fn configs_round_trip_through_toml_and_json() {
    let configs = [
        toml_config(FULL_TOML),
        toml_config(""),
        toml_config("budget = \"unlimited\"\ndeadline = \"none\""),
        toml_config("[backoff]\nstrategy = \"constant\"\ndelay = \"1m30s\""),
        toml_config("[budget]\nper_host = true"),
    ];
    for config in configs {
        let text = toml::to_string(&config).unwrap();
        let back: RetryPolicyConfig =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back, config, "{text}");

        let json = serde_json::to_string(&config).unwrap();
        let back: RetryPolicyConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, config, "{json}");
    }
    // Unset settings are left out rather than written as null.
    assert_eq!(serde_json::to_string(&toml_config("")).unwrap(), "{}");
    assert_eq!(
        serde_json::to_string(&toml_config("budget = \"unlimited\"")).unwrap(),
        r#"{"budget":"unlimited"}"#
    );
}

#[test]
fn to_builder_lets_code_override_the_configuration() {
    let config = toml_config("max_attempts = 4\ndeadline = \"5s\"");
    let policy = config
        .to_builder()
        .unwrap()
        .max_attempts(2)
        .no_budget()
        .build()
        .unwrap();
    assert_eq!(policy.max_attempts(), 2);
    assert_eq!(policy.deadline(), Some(5 * S));
    // to_builder reports what it parses; range checks are the builder's.
    let error = toml_config("deadline = \"soon\"").to_builder().unwrap_err();
    assert_names(&error, "deadline");
    assert!(toml_config("max_attempts = 0").to_builder().is_ok());
}

#[test]
fn humantime_spellings_work_in_a_file() {
    let policy = toml_config(
        r#"
        deadline = "1 min"
        attempt_timeout = "20 sec"
        retry_after_ceiling = "0.5 hours"
        "#,
    )
    .build()
    .unwrap();
    assert_eq!(policy.deadline(), Some(60 * S));
    assert_eq!(policy.attempt_timeout(), Some(20 * S));
    assert_eq!(policy.retry_after_ceiling(), 1800 * S);
}

#[test]
fn a_backoff_table_fills_the_gaps_from_the_default_policy() {
    let Backoff::FullJitter { base, cap } = RetryPolicy::default().backoff() else {
        panic!("the default backoff is full jitter");
    };
    let backoff = |text: &str| toml_config(text).build().unwrap().backoff();
    assert_eq!(
        backoff("[backoff]\ncap = \"5s\""),
        Backoff::full_jitter(base, 5 * S)
    );
    assert_eq!(
        backoff("[backoff]\nbase = \"1ms\""),
        Backoff::full_jitter(MS, cap)
    );
    assert_eq!(
        backoff("[backoff]\nstrategy = \"decorrelated_jitter\""),
        Backoff::decorrelated_jitter(base, cap)
    );
}

#[test]
fn a_budget_out_of_range_names_its_key_from_to_builder_and_build() {
    for (text, field) in [
        ("[budget]\nratio = 1.5", "budget.ratio"),
        ("[budget]\nwindow = \"2h\"", "budget.window"),
    ] {
        let config = toml_config(text);
        for error in [
            config.to_builder().map(|_| ()).unwrap_err(),
            config.build().map(|_| ()).unwrap_err(),
        ] {
            assert_names(&error, field);
            assert!(matches!(&error, ConfigError::Budget { .. }), "{error:?}");
        }
    }
}

#[test]
fn code_can_replace_the_configured_budget() {
    let shared = RetryBudget::builder()
        .ratio(0.5)
        .reserve(0)
        .build()
        .unwrap();
    let policy = toml_config("[budget]\nratio = 0.2\nreserve = 7")
        .to_builder()
        .unwrap()
        .budget(shared.clone())
        .build()
        .unwrap();
    assert_eq!(policy.budget().unwrap().ratio(), 0.5);
    // The policy holds the shared budget itself, not a copy of its settings.
    shared.deposit("h");
    shared.deposit("h");
    assert!(policy.budget().unwrap().try_withdraw("h"));
    assert!(
        !shared.try_withdraw("h"),
        "one retry for two requests at 50%"
    );
}

#[test]
fn a_name_setting_of_the_wrong_type_names_the_setting_in_json_too() {
    for (json, field) in [
        (r#"{"key_format": 5}"#, "key_format"),
        (r#"{"key_attachment": true}"#, "key_attachment"),
        (r#"{"backoff": {"strategy": 1}}"#, "backoff.strategy"),
    ] {
        let error = serde_json::from_str::<RetryPolicyConfig>(json)
            .unwrap_err()
            .to_string();
        assert!(error.contains(field), "{field} not in {error}");
        assert!(error.contains("one of"), "{error}");
    }
}

/// `RESILIENCE_BREAKER=on` (or `breaker = "on"`) switches a gate on with its
/// defaults, with nothing else to set; another word is refused, naming the variable.
#[test]
fn a_gate_is_switched_on_with_its_defaults() {
    // The policy's Debug counts its gates (the budget is one of them).
    let gates = |policy: &reqwest_resilience::RetryPolicy| {
        let text = format!("{policy:?}");
        let count = text
            .split("gates: ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap();
        count.parse::<usize>().unwrap()
    };
    let plain = gates(&toml_config("").build().unwrap());
    let prefix = RetryPolicyConfig::DEFAULT_ENV_PREFIX;
    for variable in ["RESILIENCE_BREAKER", "RESILIENCE_THROTTLE"] {
        let policy = RetryPolicyConfig::from_env_vars(prefix, vars(&[(variable, "on")]))
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(gates(&policy), plain + 1, "{variable}");
        let error =
            RetryPolicyConfig::from_env_vars(prefix, vars(&[(variable, "yes")])).unwrap_err();
        assert_names(&error, variable);
        assert!(error.to_string().contains("\"on\""), "{error}");
    }
    let both = toml_config("breaker = \"on\"\nthrottle = \"on\"")
        .build()
        .unwrap();
    assert_eq!(gates(&both), plain + 2);
    let error = toml::from_str::<RetryPolicyConfig>("throttle = \"sometimes\"").unwrap_err();
    assert!(error.to_string().contains("expected \"on\""), "{error}");
}

/// A `[breaker]` table gives the policy a circuit breaker: two failed intents open it,
/// and the third is held back before anything reaches the server.
#[tokio::test]
async fn a_breaker_table_adds_a_circuit_breaker_that_opens() {
    use reqwest_resilience::ResilientClient;
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let policy = toml_config(
        r#"
        max_attempts = 1
        [breaker]
        minimum_throughput = 2
        failure_ratio = 0.5
        break_duration = "30s"
        "#,
    )
    .build()
    .unwrap();
    let client = ResilientClient::with_policy(policy);
    for _ in 0..2 {
        let _ = client.get(server.uri()).send().await;
    }
    let error = client
        .get(server.uri())
        .send()
        .await
        .expect_err("the circuit is open");
    assert!(error.is_first_attempt_refused(), "{error}");
    assert_eq!(
        error.gate_refusal().map(|refusal| refusal.gate()),
        Some("circuit_breaker"),
        "{error}"
    );
    let received = server.received_requests().await.unwrap();
    assert_eq!(
        received.len(),
        2,
        "the refused intent never reached the server"
    );
}

/// A `[throttle]` table gives the policy an adaptive throttle, its draws seeded by
/// `rng_seed`: once the service fails every attempt past the throttle's minimum
/// traffic, it refuses a share of first attempts locally.
#[tokio::test]
async fn a_throttle_table_adds_an_adaptive_throttle_that_refuses() {
    use reqwest_resilience::ResilientClient;
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let policy = toml_config(
        r#"
        max_attempts = 1
        rng_seed = 7
        [throttle]
        min_requests = 5
        max_rejection_probability = 0.5
        "#,
    )
    .build()
    .unwrap();
    let client = ResilientClient::with_policy(policy);
    let mut refused = 0;
    for _ in 0..40 {
        if let Err(error) = client.get(server.uri()).send().await {
            if error.is_gate_refused() {
                assert_eq!(
                    error.gate_refusal().map(|refusal| refusal.gate()),
                    Some("adaptive_throttle"),
                    "{error}"
                );
                refused += 1;
            }
        }
    }
    let received = server.received_requests().await.unwrap().len();
    assert!(refused > 0, "the throttle never refused");
    assert_eq!(received + refused, 40, "every intent was sent or refused");
}

/// A gate setting out of range names its key, or the variable that set it.
#[test]
fn gate_settings_out_of_range_name_their_key() {
    let error = toml_error("[breaker]\nminimum_throughput = 1\n");
    assert_eq!(error.field(), Some("breaker.minimum_throughput"), "{error}");
    assert!(matches!(error, ConfigError::Breaker { .. }), "{error:?}");
    let error = RetryPolicyConfig::from_env_vars("APP", vars(&[("APP_THROTTLE_K", "0.5")]))
        .unwrap()
        .build()
        .unwrap_err();
    assert_eq!(error.field(), Some("APP_THROTTLE_K"), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("APP_THROTTLE_K: adaptive throttle K"),
        "{error}"
    );
}

/// `RESILIENCE_HEDGING=on` (or `hedging = "on"`) turns hedged requests on with
/// `Hedging::default()`; another word is refused, naming the variable.
#[test]
fn hedging_is_switched_on_with_its_defaults() {
    use reqwest_resilience::Hedging;

    let prefix = RetryPolicyConfig::DEFAULT_ENV_PREFIX;
    assert_eq!(toml_config("").build().unwrap().hedging(), None);
    let policy = RetryPolicyConfig::from_env_vars(prefix, vars(&[("RESILIENCE_HEDGING", "on")]))
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(policy.hedging(), Some(&Hedging::default()));
    let policy = toml_config("hedging = \"on\"").build().unwrap();
    assert_eq!(policy.hedging(), Some(&Hedging::default()));
    let error = RetryPolicyConfig::from_env_vars(prefix, vars(&[("RESILIENCE_HEDGING", "off")]))
        .unwrap_err();
    assert_names(&error, "RESILIENCE_HEDGING");
    let error = toml::from_str::<RetryPolicyConfig>("hedging = \"sometimes\"").unwrap_err();
    assert!(error.to_string().contains("expected \"on\""), "{error}");

    // A table sets the keys it names; the rest keep Hedging's defaults.
    let policy = toml_config(
        "[hedging]\ndelay = \"40ms\"\nmax_copies = 3\ncap_burst = 2\nmethods = [\"get\", \"PUT\"]",
    )
    .build()
    .unwrap();
    let expected = Hedging::fixed(40 * MS)
        .max_copies(3)
        .cap(0.05, 2)
        .methods([Method::GET, Method::PUT]);
    assert_eq!(policy.hedging(), Some(&expected));
}

/// Every hedging setting out of range names its key in a file and its variable
/// from the environment, whether found while reading or when the policy is built.
#[test]
fn hedging_settings_out_of_range_name_their_key_or_variable() {
    // key, as a file writes it, as a variable writes it, what the message says
    let cases: [(&str, &str, &str, &str); 9] = [
        ("delay", "\"0s\"", "0s", "must be above zero"),
        ("delay", "\"soon\"", "soon", "invalid duration"),
        ("percentile", "100.0", "100.0", "(0, 100)"),
        ("min_samples", "0", "0", "at least 1"),
        ("floor", "\"2h\"", "2h", "at most one hour"),
        ("max_copies", "9", "9", "between 2 and 5"),
        ("cap_ratio", "0.0", "0.0", "(0, 1]"),
        (
            "methods",
            "[\"GET\", \"POST\"]",
            "GET,POST",
            "POST is not safe",
        ),
        ("methods", "[\"G ET\"]", "G ET", "method names"),
    ];
    for (key, value, text, problem) in cases {
        let path = format!("hedging.{key}");
        let error = toml_error(&format!("[hedging]\n{key} = {value}"));
        assert_names(&error, &path);
        assert!(error.to_string().contains(problem), "{error}");

        let variable = format!("APP_HEDGING_{}", key.to_uppercase());
        let error = RetryPolicyConfig::from_env_vars("APP", vars(&[(&variable, text)]))
            .and_then(|config| config.build().map(drop))
            .expect_err(&variable);
        assert_names(&error, &variable);
        assert!(error.to_string().starts_with(&variable), "{error}");
    }
}

/// A key only the adaptive delay reads, beside a fixed delay, would be silently
/// ignored: it is refused, naming it (or its variable).
#[test]
fn an_adaptive_key_beside_a_fixed_delay_is_a_conflict() {
    let error = toml_error("[hedging]\ndelay = \"50ms\"\npercentile = 99.0");
    assert_names(&error, "hedging.percentile");
    assert!(matches!(error, ConfigError::Conflict { .. }), "{error:?}");
    let error = RetryPolicyConfig::from_env_vars(
        "APP",
        vars(&[("APP_HEDGING_DELAY", "50ms"), ("APP_HEDGING_FLOOR", "5ms")]),
    )
    .unwrap()
    .build()
    .unwrap_err();
    assert_names(&error, "APP_HEDGING_FLOOR");
    assert!(error.to_string().contains("APP_HEDGING_DELAY"), "{error}");
    // Laid over a file: the file's adaptive key is named, with the variable.
    let error = toml_config("[hedging]\npercentile = 99.0")
        .overridden_by_env_vars("APP", vars(&[("APP_HEDGING_DELAY", "50ms")]))
        .unwrap()
        .build()
        .unwrap_err();
    assert_names(&error, "hedging.percentile");
    assert!(error.to_string().contains("APP_HEDGING_DELAY"), "{error}");
    // "adaptive" takes them.
    let policy = toml_config("[hedging]\ndelay = \"adaptive\"\npercentile = 99.0")
        .build()
        .unwrap();
    assert_eq!(policy.hedging().unwrap().fixed_delay(), None);
    // Hedging needs a second attempt: the error names the variable that turned it on.
    let error = RetryPolicyConfig::from_env_vars(
        "APP",
        vars(&[("APP_MAX_ATTEMPTS", "1"), ("APP_HEDGING_MAX_COPIES", "3")]),
    )
    .unwrap()
    .build()
    .unwrap_err();
    assert_names(&error, "APP_HEDGING_MAX_COPIES");
    assert!(error.to_string().contains("max_attempts"), "{error}");
}

/// Hedging configured from the environment hedges a slow GET over loopback: the
/// server receives the first copy and, no earlier than the configured delay, a
/// second, whose answer the caller gets.
#[tokio::test]
async fn hedging_from_the_environment_hedges_a_slow_get() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use reqwest_resilience::ResilientClient;
    use wiremock::{Mock, MockServer, Request, ResponseTemplate};

    let server = MockServer::start().await;
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    Mock::given(wiremock::matchers::method("GET"))
        .respond_with(
            move |_: &Request| match counter.fetch_add(1, Ordering::SeqCst) {
                0 => ResponseTemplate::new(200)
                    .set_body_string("slow")
                    .set_delay(3 * S),
                _ => ResponseTemplate::new(200).set_body_string("hedge"),
            },
        )
        .expect(2)
        .mount(&server)
        .await;
    let policy = RetryPolicyConfig::from_env_vars(
        "APP",
        vars(&[("APP_HEDGING", "on"), ("APP_HEDGING_DELAY", "100ms")]),
    )
    .unwrap()
    .build()
    .unwrap();
    let started = Instant::now();
    let response = ResilientClient::with_policy(policy)
        .get(server.uri())
        .send()
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap(), "hedge");
    let took = started.elapsed();
    assert!(
        took >= 100 * MS,
        "the hedge went before its delay: {took:?}"
    );
    assert!(took < 2 * S, "the slow copy was awaited: {took:?}");
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 2);
}
