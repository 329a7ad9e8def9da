//! Every row, end to end: settable from a file and from a variable, the two equal,
//! laid over a file, read back from the built policy through its public getters,
//! and listed in both doc tables — which are rendered from the rows and checked
//! here (`BLESS=1` rewrites them).

use std::collections::BTreeSet;

use super::gates_table::{breaker, throttle};
use super::row::{env_text, Row};
use super::settings::{rows, RetryPolicyConfig};
use crate::{AdaptiveThrottle, CircuitBreaker, Hedging, RetryPolicy};

/// The prefix the doc table of variables uses.
const PREFIX: &str = RetryPolicyConfig::DEFAULT_ENV_PREFIX;

/// A policy's value of one key, through its public getters, as text to compare.
type Getter = fn(&RetryPolicy) -> String;

/// How each key reads back from a built policy: adding a key adds its line here.
const READ_BACK: &[(&str, Getter)] = &[
    ("max_attempts", |p| p.max_attempts().to_string()),
    ("deadline", |p| format!("{:?}", p.deadline())),
    ("attempt_timeout", |p| format!("{:?}", p.attempt_timeout())),
    ("retry_after_ceiling", |p| {
        format!("{:?}", p.retry_after_ceiling())
    }),
    ("transient_statuses", |p| {
        format!("{:?}", p.transient_statuses().iter().collect::<Vec<_>>())
    }),
    ("retry_conflict_when_keyed", |p| {
        p.retry_conflict_when_keyed().to_string()
    }),
    ("conflict_delay", |p| format!("{:?}", p.conflict_delay())),
    ("key_attachment", |p| format!("{:?}", p.key_attachment())),
    ("key_format", |p| format!("{:?}", p.key_format())),
    ("key_header", |p| p.key_header().to_string()),
    ("request_id_header", |p| p.request_id_header().to_string()),
    ("server_hint_header", |p| {
        format!("{:?}", p.server_hint_header())
    }),
    ("redact_query_params", |p| {
        format!("{:?}", p.redacted_query_params())
    }),
    ("rng_seed", |p| p.is_seeded().to_string()),
    ("backoff.strategy", |p| format!("{:?}", p.backoff())),
    ("backoff.base", |p| format!("{:?}", p.backoff())),
    ("backoff.cap", |p| format!("{:?}", p.backoff())),
    ("backoff.delay", |p| format!("{:?}", p.backoff())),
    ("budget", |p| format!("{:?}", p.budget().map(|b| b.ratio()))),
    ("budget.ratio", |p| p.budget().unwrap().ratio().to_string()),
    ("budget.window", |p| {
        format!("{:?}", p.budget().unwrap().window())
    }),
    ("budget.reserve", |p| {
        p.budget().unwrap().reserve().to_string()
    }),
    ("budget.per_host", |p| {
        p.budget().unwrap().is_per_host().to_string()
    }),
    ("hedging", |p| p.hedging().is_some().to_string()),
    ("hedging.delay", |p| {
        format!("{:?}", hedging_of(p).fixed_delay())
    }),
    ("hedging.percentile", |p| {
        hedging_of(p).trigger_percentile().to_string()
    }),
    ("hedging.min_samples", |p| {
        hedging_of(p).min_samples.to_string()
    }),
    ("hedging.floor", |p| format!("{:?}", hedging_of(p).floor)),
    ("hedging.refresh", |p| {
        format!("{:?}", hedging_of(p).refresh)
    }),
    ("hedging.max_copies", |p| hedging_of(p).copies().to_string()),
    ("hedging.cap_ratio", |p| {
        hedging_of(p).cap_limits().0.to_string()
    }),
    ("hedging.cap_burst", |p| {
        hedging_of(p).cap_limits().1.to_string()
    }),
    ("hedging.methods", |p| {
        format!("{:?}", hedging_of(p).methods)
    }),
];

/// A policy's hedging, or the defaults when it has none: a `hedging.*` key alone
/// turns hedging on, so comparing with "off" would pass for any value; compared
/// with the defaults, the key's own value must arrive.
fn hedging_of(policy: &RetryPolicy) -> Hedging {
    policy.hedging().cloned().unwrap_or_default()
}

/// A gate's value of one key, as text to compare: the policy keeps its gates behind
/// the `Gate` trait, so a gate key reads back from the gate its table builds.
type GateGetter = fn(&RetryPolicyConfig) -> String;

/// How each gate key reads back: adding a key to a gate's table adds its line here.
const GATE_READ_BACK: &[(&str, GateGetter)] = &[
    ("breaker", |c| c.breaker.is_some().to_string()),
    ("throttle", |c| c.throttle.is_some().to_string()),
    ("breaker.failure_ratio", |c| {
        breaker_of(c).failure_ratio().to_string()
    }),
    ("breaker.sampling_duration", |c| {
        format!("{:?}", breaker_of(c).sampling_duration())
    }),
    ("breaker.minimum_throughput", |c| {
        breaker_of(c).minimum_throughput().to_string()
    }),
    ("breaker.break_duration", |c| {
        format!("{:?}", breaker_of(c).break_duration())
    }),
    ("breaker.probes", |c| breaker_of(c).probes().to_string()),
    ("breaker.per_host", |c| {
        breaker_of(c).is_per_host().to_string()
    }),
    ("breaker.slow_call_duration", |c| {
        format!("{:?}", breaker_of(c).slow_call_duration())
    }),
    ("throttle.k", |c| throttle_of(c).k().to_string()),
    ("throttle.window", |c| {
        format!("{:?}", throttle_of(c).window())
    }),
    ("throttle.min_requests", |c| {
        throttle_of(c).min_requests().to_string()
    }),
    ("throttle.max_rejection_probability", |c| {
        throttle_of(c).max_rejection_probability().to_string()
    }),
    ("throttle.per_host", |c| {
        throttle_of(c).is_per_host().to_string()
    }),
];

/// The breaker a configuration's `breaker` table builds (the defaults without one).
fn breaker_of(config: &RetryPolicyConfig) -> CircuitBreaker {
    breaker(&config.breaker.clone().unwrap_or_default(), &config.origins).unwrap()
}

/// The throttle a configuration's `throttle` table builds (the defaults without one).
fn throttle_of(config: &RetryPolicyConfig) -> AdaptiveThrottle {
    throttle(
        &config.throttle.clone().unwrap_or_default(),
        &config.origins,
        config.rng_seed,
    )
    .unwrap()
}

/// What a key needs beside it to make a valid policy (path, TOML value).
fn companions(path: &str) -> &'static [(&'static str, &'static str)] {
    match path {
        "backoff.delay" => &[("backoff.strategy", r#""constant""#)],
        _ => &[],
    }
}

fn toml_of(settings: &[(&str, &str)]) -> RetryPolicyConfig {
    let text: String = settings
        .iter()
        .map(|(path, value)| format!("{path} = {value}\n"))
        .collect();
    toml::from_str(&text).unwrap_or_else(|error| panic!("{text}: {error}"))
}

fn variables_of(settings: &[(&str, &str)]) -> Vec<(String, String)> {
    settings
        .iter()
        .map(|(path, value)| {
            let row = rows().find(|row| row.path == *path).expect("a row");
            (row.variable(PREFIX), env_text(value))
        })
        .collect()
}

fn read_back(row: &Row<RetryPolicyConfig>) -> Getter {
    READ_BACK
        .iter()
        .find(|(path, _)| *path == row.path)
        .map(|(_, getter)| *getter)
        .unwrap_or_else(|| panic!("{} has no line in READ_BACK", row.path))
}

#[test]
fn every_row_is_read_from_a_file_and_a_variable_and_reaches_the_policy() {
    for row in rows() {
        let alone = companions(row.path);
        let with_it: Vec<(&str, &str)> = alone
            .iter()
            .copied()
            .chain([(row.path, row.example)])
            .collect();

        let from_file = toml_of(&with_it);
        let from_env = RetryPolicyConfig::from_env_vars(PREFIX, variables_of(&with_it))
            .unwrap_or_else(|error| panic!("{}: {error}", row.path));
        assert_eq!(from_env, from_file, "{}", row.path);

        let file = toml_of(alone);
        let layered = file
            .clone()
            .overridden_by_env_vars(PREFIX, variables_of(&[(row.path, row.example)]))
            .unwrap_or_else(|error| panic!("{}: {error}", row.path));
        assert_eq!(layered, from_file, "{} laid over a file", row.path);

        if let Some((_, getter)) = GATE_READ_BACK.iter().find(|(path, _)| *path == row.path) {
            from_file
                .build()
                .unwrap_or_else(|error| panic!("{}: {error}", row.path));
            assert_ne!(
                getter(&from_file),
                getter(&file),
                "{} = {} does not reach its gate",
                row.path,
                row.example
            );
            assert_eq!(getter(&from_env), getter(&from_file));
            continue;
        }
        let getter = read_back(row);
        let policy = from_file
            .build()
            .unwrap_or_else(|error| panic!("{}: {error}", row.path));
        // A key whose companions alone make no policy (a constant backoff without
        // its delay) is compared with the default policy.
        let without = file.build().unwrap_or_default();
        assert_ne!(
            getter(&policy),
            getter(&without),
            "{} = {} does not reach the policy",
            row.path,
            row.example
        );
        assert_eq!(getter(&from_env.build().unwrap()), getter(&policy));
    }
}

#[test]
fn every_row_has_one_read_back_and_one_variable() {
    let paths: Vec<&str> = rows().map(|row| row.path).collect();
    let unique: BTreeSet<&str> = paths.iter().copied().collect();
    assert_eq!(unique.len(), paths.len(), "a path twice: {paths:?}");
    let read_back: BTreeSet<&str> = READ_BACK
        .iter()
        .map(|(path, _)| *path)
        .chain(GATE_READ_BACK.iter().map(|(path, _)| *path))
        .collect();
    assert_eq!(read_back, unique, "READ_BACK and the rows differ");
    let variables: BTreeSet<String> = rows().map(Row::variable_suffix).collect();
    assert_eq!(variables.len(), paths.len(), "two keys share a variable");
}

/// A value the key does not accept is an error naming its variable (a header name
/// is taken as written, and checked when the policy is built).
#[test]
fn a_bad_value_names_the_variable() {
    for row in rows() {
        let variable = row.variable("APP");
        match RetryPolicyConfig::from_env_vars("APP", [(variable.clone(), "?".to_owned())]) {
            Ok(config) => {
                let error = config
                    .build()
                    .map_or_else(|e| e.field().map(str::to_owned), |_| None);
                if let Some(field) = error {
                    assert_eq!(field, variable);
                }
            }
            Err(error) => assert_eq!(error.field(), Some(variable.as_str()), "{error}"),
        }
    }
}

/// The table of keys on [`RetryPolicyConfig`].
fn render_settings() -> String {
    let mut out = String::from("| key | value | example |\n|---|---|---|\n");
    for row in rows() {
        out += &format!("| `{}` | {} | `{}` |\n", row.path, row.value, row.example);
    }
    out
}

/// The table of variables on `from_env_vars`.
fn render_variables() -> String {
    let mut out =
        String::from("| variable | TOML key | written as | example |\n|---|---|---|---|\n");
    for row in rows() {
        out += &format!(
            "| `{}` | `{}` | {} | `{}` |\n",
            row.variable(PREFIX),
            row.path,
            row.env_form,
            row.env_example()
        );
    }
    out
}

/// Checks a doc table against its rendering, or rewrites it with `BLESS=1`.
fn check_or_bless(file: &str, committed: &str, rendered: &str) {
    if std::env::var_os("BLESS").is_some() {
        let path = format!("{}/src/config/{file}", env!("CARGO_MANIFEST_DIR"));
        std::fs::write(&path, rendered).unwrap_or_else(|error| panic!("{path}: {error}"));
        return;
    }
    assert!(
        rendered == committed,
        "src/config/{file} is out of date (BLESS=1 rewrites it); it should read:\n{rendered}"
    );
}

#[test]
fn the_doc_tables_are_rendered_from_the_rows() {
    let (settings, variables) = (render_settings(), render_variables());
    for row in rows() {
        let key = format!("| `{}` |", row.path);
        assert!(settings.contains(&key), "{key}");
        let variable = format!("| `{}` |", row.variable(PREFIX));
        assert!(variables.contains(&variable), "{variable}");
    }
    check_or_bless("settings.md", include_str!("settings.md"), &settings);
    check_or_bless("variables.md", include_str!("variables.md"), &variables);
}
