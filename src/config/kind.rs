//! What a setting's value is — a number, a flag, a duration, a list — and how an
//! environment variable writes it. A file's values come through serde; a variable's
//! text comes through [`Kind::from_env`], checked as it is read so that the error
//! names the variable.

use super::choice::{Choice, KeyAttachmentSetting, KeyFormatSetting, Strategy};
use super::duration::{DelayText, DurationText, LimitText};
use super::error::ConfigError;
use crate::StatusSet;

/// A setting's value type, as an environment variable holds it.
pub(super) trait Kind: Sized + Clone {
    /// How a variable writes it, for the doc table of variables.
    const ENV_FORM: &'static str;

    /// Reads the (trimmed) `text` of the variable `var`. `expected` is the setting's
    /// own description, for kinds whose form alone does not say enough (a number's
    /// range).
    fn from_env(var: &str, text: &str, expected: &str) -> Result<Self, ConfigError>;
}

/// The form every kind that is written as in a file, without quotes, shares.
const AS_IN_A_FILE: &str = "as in a file, without quotes";

macro_rules! numbers {
    ($($number:ty),*) => {$(
        impl Kind for $number {
            const ENV_FORM: &'static str = AS_IN_A_FILE;

            fn from_env(var: &str, text: &str, expected: &str) -> Result<Self, ConfigError> {
                text.parse().map_err(|_| invalid(var, text, expected))
            }
        }
    )*};
}

numbers!(u32, u64, f64);

impl Kind for bool {
    const ENV_FORM: &'static str = "`true`/`false` (or `1`/`0`)";

    fn from_env(var: &str, text: &str, _: &str) -> Result<Self, ConfigError> {
        match text.to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(invalid(var, text, "true or false")),
        }
    }
}

/// A header name, taken as it is; the builder checks it.
impl Kind for String {
    const ENV_FORM: &'static str = AS_IN_A_FILE;

    fn from_env(_: &str, text: &str, _: &str) -> Result<Self, ConfigError> {
        Ok(text.to_owned())
    }
}

/// Names, such as query parameters.
impl Kind for Vec<String> {
    const ENV_FORM: &'static str = "comma-separated";

    fn from_env(_: &str, text: &str, _: &str) -> Result<Self, ConfigError> {
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_owned)
            .collect())
    }
}

/// Status codes; empty for none. Checked here (not only when the policy is built)
/// so that the error names the variable.
impl Kind for Vec<u16> {
    const ENV_FORM: &'static str = "comma-separated (empty: no status is transient)";

    fn from_env(var: &str, text: &str, _: &str) -> Result<Self, ConfigError> {
        if text.is_empty() {
            return Ok(Vec::new());
        }
        let codes = text
            .split(',')
            .map(|code| {
                code.trim().parse::<u16>().map_err(|_| {
                    invalid(var, text, "comma-separated status codes, such as 429,503")
                })
            })
            .collect::<Result<Vec<u16>, ConfigError>>()?;
        status_set(var, &codes)?;
        Ok(codes)
    }
}

impl Kind for DurationText {
    const ENV_FORM: &'static str = AS_IN_A_FILE;

    fn from_env(var: &str, text: &str, _: &str) -> Result<Self, ConfigError> {
        Self::checked(var, text)
    }
}

impl Kind for LimitText {
    const ENV_FORM: &'static str = AS_IN_A_FILE;

    fn from_env(var: &str, text: &str, _: &str) -> Result<Self, ConfigError> {
        Self::checked(var, text)
    }
}

impl Kind for DelayText {
    const ENV_FORM: &'static str = AS_IN_A_FILE;

    fn from_env(var: &str, text: &str, _: &str) -> Result<Self, ConfigError> {
        Self::checked(var, text)
    }
}

macro_rules! choices {
    ($($choice:ty),*) => {$(
        impl Kind for $choice {
            const ENV_FORM: &'static str = AS_IN_A_FILE;

            fn from_env(var: &str, text: &str, _: &str) -> Result<Self, ConfigError> {
                Self::parse(var, text)
            }
        }
    )*};
}

choices!(Strategy, KeyAttachmentSetting, KeyFormatSetting);

/// The status codes as a [`StatusSet`]; an error names `field` (a setting or a
/// variable).
pub(super) fn status_set(field: &str, codes: &[u16]) -> Result<StatusSet, ConfigError> {
    if let Some(bad) = codes.iter().find(|code| !(100..=999).contains(*code)) {
        return Err(invalid(
            field,
            &bad.to_string(),
            "HTTP status codes from 100 to 999",
        ));
    }
    Ok(codes.iter().copied().collect())
}

fn invalid(field: &str, value: &str, expected: &str) -> ConfigError {
    ConfigError::InvalidValue {
        field: field.to_owned(),
        value: value.to_owned(),
        expected: expected.to_owned(),
    }
}
