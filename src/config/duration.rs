//! Durations as written in configuration — `"250ms"`, `"1.5s"`, `"1m30s"` — parsed
//! by [humantime], through a small shim for the cases it gets wrong.
//!
//! The text is split into `<number><unit>` parts; humantime reads each part's whole
//! number and unit. The shim does three things itself, each proved necessary by a
//! test below that fails once humantime no longer needs it:
//!
//! - **Fractions** are computed here, truncated to the nanosecond. humantime
//!   refuses a fraction it cannot divide exactly in its internal unit: `"0.001h"`
//!   (3.6 s) is "too large", and so is any digit finer than a nanosecond.
//! - **The sum** of the parts is checked here. humantime panics when the parts
//!   add up to `u64::MAX` seconds plus a carried second (chronotope/humantime
//!   issue 66), and configuration must never panic.
//! - **Digits across a space** (`"1 0s"`) are refused; humantime reads them as one
//!   number (10 s).
//!
//! It also accepts the Greek letter mu (`μs`) as well as the micro sign (`µs`), as
//! the hand-written parser this replaces did, and keeps its error messages.

use std::fmt;
use std::time::Duration;

use humantime::DurationError;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use super::error::ConfigError;

/// The units to suggest in error messages (humantime's longer spellings work too).
const UNITS: &str = "ns, us, ms, s, m or h";

/// A duration as written; parsed when the policy is built, so that the error can
/// name the setting.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(transparent)]
pub(super) struct DurationText(pub(super) String);

/// A duration or `"none"` (no limit), as written.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(transparent)]
pub(super) struct LimitText(pub(super) String);

/// A hedge delay as written: a duration, or `"adaptive"` (the authority's latency
/// percentile). A word of its own rather than "leave the key out", so that a
/// variable laid over a file with a fixed delay can turn it back to adaptive.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(transparent)]
pub(super) struct DelayText(pub(super) String);

impl DurationText {
    /// The duration; an error names `field`.
    pub(super) fn parse(&self, field: &str) -> Result<Duration, ConfigError> {
        duration_setting(field, &self.0)
    }

    /// Checks `text` (read from the variable `field`) and keeps it.
    pub(super) fn checked(field: &str, text: &str) -> Result<Self, ConfigError> {
        duration_setting(field, text).map(|_| Self(text.to_owned()))
    }
}

impl LimitText {
    /// The duration, or `None` for `"none"`; an error names `field`.
    pub(super) fn parse(&self, field: &str) -> Result<Option<Duration>, ConfigError> {
        if self.0.trim().eq_ignore_ascii_case("none") {
            Ok(None)
        } else {
            duration_setting(field, &self.0).map(Some)
        }
    }

    /// Checks `text` (read from the variable `field`) and keeps it.
    pub(super) fn checked(field: &str, text: &str) -> Result<Self, ConfigError> {
        let limit = Self(text.to_owned());
        limit.parse(field).map(|_| limit)
    }
}

impl DelayText {
    /// The fixed delay, or `None` for `"adaptive"`; an error names `field`.
    pub(super) fn parse(&self, field: &str) -> Result<Option<Duration>, ConfigError> {
        if self.0.trim().eq_ignore_ascii_case("adaptive") {
            Ok(None)
        } else {
            duration_setting(field, &self.0).map(Some)
        }
    }

    /// Checks `text` (read from the variable `field`) and keeps it.
    pub(super) fn checked(field: &str, text: &str) -> Result<Self, ConfigError> {
        let delay = Self(text.to_owned());
        delay.parse(field).map(|_| delay)
    }
}

/// Accepts a string; `expecting` says what it should hold. Hand-written because
/// serde's own `String` would only say "expected a string".
struct TextVisitor(&'static str);

impl Visitor<'_> for TextVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<String, E> {
        Ok(value.to_owned())
    }
}

impl<'de> Deserialize<'de> for DurationText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_str(TextVisitor(r#"a duration such as "250ms" or "2s""#))
            .map(Self)
    }
}

impl<'de> Deserialize<'de> for LimitText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_str(TextVisitor(
                r#"a duration such as "5s", or "none" for no limit"#,
            ))
            .map(Self)
    }
}

impl<'de> Deserialize<'de> for DelayText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_str(TextVisitor(
                r#"a duration such as "50ms", or "adaptive" for the latency percentile"#,
            ))
            .map(Self)
    }
}

/// Parses `text` as a duration; the error names `field`.
fn duration_setting(field: &str, text: &str) -> Result<Duration, ConfigError> {
    parse_duration(text).map_err(|reason| ConfigError::InvalidDuration {
        field: field.to_owned(),
        value: text.to_owned(),
        reason,
    })
}

/// Parses a human-readable duration: one or more `<number><unit>` parts, spaces
/// allowed between them; `"0"` alone is zero. The error says what is wrong.
pub(super) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim().replace('\u{3bc}', "\u{b5}");
    if text.is_empty() {
        return Err(r#"empty (write e.g. "250ms" or "2s")"#.to_owned());
    }
    if text.starts_with('-') {
        return Err("negative durations are not allowed".to_owned());
    }
    parts(&text)?
        .into_iter()
        .try_fold(Duration::ZERO, |total, part| {
            total.checked_add(parse_part(part)?).ok_or_else(too_large)
        })
}

/// Splits `"1m30s"` or `"1h 30m"` into its `<number><unit>` parts: a part ends
/// where a number follows a letter. A number right after a number ("1 0s") is an
/// error.
fn parts(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut previous: Option<char> = None;
    let mut space_since_previous = false;
    for (at, c) in text.char_indices() {
        if c.is_whitespace() {
            space_since_previous = true;
            continue;
        }
        if is_numeric(c) {
            match previous {
                Some(p) if p.is_alphabetic() => {
                    parts.push(&text[start..at]);
                    start = at;
                }
                Some(p) if is_numeric(p) && space_since_previous => {
                    let number = text[start..at].trim();
                    return Err(format!("missing unit after {number} (use {UNITS})"));
                }
                _ => {}
            }
        }
        previous = Some(c);
        space_since_previous = false;
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn is_numeric(c: char) -> bool {
    c.is_ascii_digit() || c == '.'
}

/// One `<number><unit>` part: humantime reads the whole number and the unit; a
/// fraction is computed here.
fn parse_part(part: &str) -> Result<Duration, String> {
    let part = part.trim();
    let Some((whole, rest)) = part.split_once('.') else {
        return humantime_parse(part);
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("expected a number at {part:?}"));
    }
    let digits_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (digits, unit) = rest.split_at(digits_end);
    if digits.is_empty() {
        return Err(format!("expected digits after \"{whole}.\""));
    }
    let unit = unit.trim_start();
    if !unit.starts_with(char::is_alphabetic) {
        return Err(format!("missing unit after {whole}.{digits} (use {UNITS})"));
    }
    let whole = humantime_parse(&format!("{whole}{unit}"))?;
    let one_unit = humantime_parse(&format!("1{unit}"))?;
    whole
        .checked_add(fraction_of(one_unit, digits)?)
        .ok_or_else(too_large)
}

/// `0.<digits>` of `unit`, truncated to the nanosecond. Exact: integers only.
fn fraction_of(unit: Duration, digits: &str) -> Result<Duration, String> {
    // 18 digits are finer than a nanosecond of humantime's longest unit (a year,
    // 3.2·10^16 ns), and the product below (< 10^18 · 10^17) fits in a u128.
    let digits = &digits[..digits.len().min(18)];
    let numerator: u128 = digits.parse().map_err(|_| too_large())?;
    let denominator = 10u128.pow(digits.len() as u32);
    let nanos = numerator * unit.as_nanos() / denominator;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| too_large())
}

/// humantime's reading of `text`, its error turned into a sentence.
fn humantime_parse(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|error| match error {
        DurationError::Empty => r#"empty (write e.g. "250ms" or "2s")"#.to_owned(),
        DurationError::InvalidCharacter(at) if ends_with_digit(&text[..at]) => {
            let number = text[..at].trim_start_matches(|c: char| !c.is_ascii_digit());
            format!("missing unit after {number} (use {UNITS})")
        }
        DurationError::InvalidCharacter(at) | DurationError::NumberExpected(at) => {
            format!("expected a number at {:?}", &text[at..])
        }
        DurationError::UnknownUnit { unit, value, .. } if unit.is_empty() => {
            format!("missing unit after {value} (use {UNITS})")
        }
        DurationError::UnknownUnit { unit, .. } => format!("unknown unit {unit:?} (use {UNITS})"),
        DurationError::NumberOverflow => too_large(),
    })
}

fn ends_with_digit(text: &str) -> bool {
    text.trim_end().ends_with(|c: char| c.is_ascii_digit())
}

fn too_large() -> String {
    "too large".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Duration {
        parse_duration(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn err(text: &str) -> String {
        parse_duration(text).expect_err(text)
    }

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(ok("250ms"), Duration::from_millis(250));
        assert_eq!(ok("2s"), Duration::from_secs(2));
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("1m"), Duration::from_secs(60));
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("500us"), Duration::from_micros(500));
        assert_eq!(ok("500µs"), Duration::from_micros(500));
        assert_eq!(ok("10ns"), Duration::from_nanos(10));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
        assert_eq!(ok(" 1h 2m 3s "), Duration::from_secs(3723));
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("0s"), Duration::ZERO);
        assert_eq!(ok("0.000000001s"), Duration::from_nanos(1));
        assert_eq!(ok("0.0000000019s"), Duration::from_nanos(1));
        assert_eq!(ok("1.25h"), Duration::from_secs(4500));
        assert_eq!(
            ok("0.123456789123456789123s"),
            Duration::from_nanos(123_456_789)
        );
        assert_eq!(ok("18446744073709551615s"), Duration::from_secs(u64::MAX));
    }

    #[test]
    fn bad_durations_say_why() {
        assert!(err("").contains("empty"));
        assert!(err("   ").contains("empty"));
        assert!(err("-1s").contains("negative"));
        assert!(err("100").contains("missing unit after 100"));
        assert!(err("1h30").contains("missing unit after 30"));
        assert!(err("2 parsecs").contains(r#"unknown unit "parsecs""#));
        assert!(err("5S").contains(r#"unknown unit "S""#));
        assert!(err("1.s").contains("digits after"));
        assert!(err(".5s").contains("expected a number"));
        assert!(err("+5s").contains("expected a number"));
        assert!(err("5s!").contains("expected a number"));
        assert!(err("18446744073709551616s").contains("too large"));
        assert!(err("99999999999999999999999999999999999999999h").contains("too large"));
        assert!(err("1e3s").contains(r#"unknown unit "e""#));
    }

    #[test]
    fn more_mistakes_say_why() {
        assert_eq!(
            err("1.5.2s"),
            "missing unit after 1.5 (use ns, us, ms, s, m or h)"
        );
        assert_eq!(
            err("1.5"),
            "missing unit after 1.5 (use ns, us, ms, s, m or h)"
        );
        assert_eq!(
            err("1,5s"),
            "missing unit after 1 (use ns, us, ms, s, m or h)"
        );
        assert_eq!(err("ten seconds"), r#"expected a number at "ten seconds""#);
        assert_eq!(err("1h.5m"), r#"expected a number at ".5m""#);
        assert_eq!(
            err("1.5 parsecs"),
            r#"unknown unit "parsecs" (use ns, us, ms, s, m or h)"#
        );
        assert_eq!(err("1.5s!"), r#"expected a number at "!""#);
        assert_eq!(err("18446744073709551615.5s 0.5s"), "too large");
    }

    #[test]
    fn humantime_spellings_are_accepted_too() {
        assert_eq!(ok("30sec"), Duration::from_secs(30));
        assert_eq!(ok("2min"), Duration::from_secs(120));
        assert_eq!(ok("1 hour 30 minutes"), Duration::from_secs(5400));
        assert_eq!(ok("1.5 hours"), Duration::from_secs(5400));
        assert_eq!(ok("250msec"), Duration::from_millis(250));
        assert_eq!(ok("1d"), Duration::from_secs(86_400));
    }

    mod agrees_with_humantime {
        use super::*;
        use proptest::prelude::*;

        /// Well-formed parts without fractions, small enough that humantime
        /// cannot hit its carry panic.
        fn whole_parts() -> impl Strategy<Value = String> {
            let unit = prop::sample::select(vec![
                "ns", "us", "µs", "ms", "s", "m", "h", "sec", "min", "hours", "d", "w",
            ]);
            let part = (0u64..1_000_000, unit, prop::bool::ANY)
                .prop_map(|(n, unit, space)| format!("{n}{}{unit}", if space { " " } else { "" }));
            prop::collection::vec(part, 1..4).prop_map(|parts| parts.join(" "))
        }

        proptest! {
            #[test]
            fn on_whole_numbers(text in whole_parts()) {
                prop_assert_eq!(parse_duration(&text), humantime::parse_duration(&text).map_err(|e| e.to_string()));
            }

            /// Where humantime can divide a fraction exactly, the shim's
            /// truncation gives the same result.
            #[test]
            fn on_fractions_humantime_accepts(
                whole in 0u64..1_000_000,
                digits in "[0-9]{1,9}",
                unit in prop::sample::select(vec!["us", "ms", "s", "m", "h"]),
            ) {
                let text = format!("{whole}.{digits}{unit}");
                if let Ok(expected) = humantime::parse_duration(&text) {
                    prop_assert_eq!(parse_duration(&text), Ok(expected));
                }
            }

            /// Any text at all: an answer, never a panic.
            #[test]
            fn never_panics(text in "[0-9 .smhunµdM+-]{0,30}") {
                let _ = parse_duration(&text);
            }
        }
    }

    // Why the shim: each test shows humantime alone getting the case wrong, and
    // the shim getting it right. When one fails on a humantime upgrade, that part
    // of the shim can go.

    #[test]
    fn humantime_alone_panics_on_a_carry_past_the_largest_duration() {
        let text = "18446744073709551615s 1000ms";
        let alone = std::panic::catch_unwind(|| humantime::parse_duration(text));
        assert!(alone.is_err(), "humantime no longer panics: {alone:?}");
        assert_eq!(err(text), "too large");
        assert_eq!(err("18446744073709551615s 999999999ns 1ns"), "too large");
        assert_eq!(
            ok("18446744073709551614s 1000ms"),
            Duration::from_secs(u64::MAX)
        );
    }

    #[test]
    fn humantime_alone_refuses_fractions_it_cannot_divide_exactly() {
        assert_eq!(
            humantime::parse_duration("0.001h"),
            Err(DurationError::NumberOverflow)
        );
        assert_eq!(ok("0.001h"), Duration::from_millis(3600));
        assert_eq!(
            humantime::parse_duration("1.333h"),
            Err(DurationError::NumberOverflow)
        );
        assert_eq!(ok("1.333h"), Duration::from_millis(4_798_800));
        assert_eq!(
            humantime::parse_duration("0.0000000019s"),
            Err(DurationError::NumberOverflow)
        );
        assert_eq!(ok("0.0000000019s"), Duration::from_nanos(1));
        assert_eq!(
            humantime::parse_duration("1.5ns"),
            Err(DurationError::NumberOverflow)
        );
        assert_eq!(ok("1.5ns"), Duration::from_nanos(1));
    }

    #[test]
    fn humantime_alone_reads_digits_across_a_space_as_one_number() {
        assert_eq!(
            humantime::parse_duration("1 0s"),
            Ok(Duration::from_secs(10))
        );
        assert_eq!(
            err("1 0s"),
            "missing unit after 1 (use ns, us, ms, s, m or h)"
        );
        assert!(err("1.5 5s").contains("missing unit after 1.5"));
    }

    #[test]
    fn humantime_alone_refuses_the_greek_mu() {
        assert!(humantime::parse_duration("500\u{3bc}s").is_err());
        assert_eq!(ok("500\u{3bc}s"), Duration::from_micros(500));
        assert_eq!(ok("500\u{b5}s"), Duration::from_micros(500));
    }
}
