//! `breaker = "on"`, `throttle = "on"`, `hedging = "on"` (and `{PREFIX}_BREAKER=on`…):
//! a gate, or hedged requests, with the builder's defaults, for an operator who only
//! needs to switch it on. A table of its keys says the same and sets them too.

use serde::{Deserialize, Deserializer};

use super::error::ConfigError;

/// A switched key: `"on"`, or the table of its settings.
pub(super) fn table_or_on<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written<T> {
        Switch(String),
        Table(T),
    }
    match Written::<T>::deserialize(deserializer)? {
        Written::Table(table) => Ok(Some(table)),
        Written::Switch(text) if text.eq_ignore_ascii_case("on") => Ok(Some(T::default())),
        Written::Switch(text) => Err(serde::de::Error::custom(format!(
            r#"expected "on" or a table of its keys, got "{text}""#
        ))),
    }
}

/// A switch's variable says `on`; anything else is an error naming it.
pub(super) fn switch_on(var: &str, text: &str) -> Result<(), ConfigError> {
    if text.eq_ignore_ascii_case("on") {
        return Ok(());
    }
    Err(ConfigError::InvalidValue {
        field: var.to_owned(),
        value: text.to_owned(),
        expected: format!(r#""on" (set {var}_* for its own settings)"#),
    })
}
