//! One configuration key as one row: its path, what its value is, an example, and
//! how it is read from a variable, laid over a file and applied to the builder.
//! Everything else about a key — its variable's name, the list of variables, the
//! two doc tables — is derived from the row. The rows themselves are in
//! `settings.rs` and its `settings/` tables, declared with [`settings_table!`]
//! beside the fields they fill (visible to all of `config`, wherever declared).

use super::error::ConfigError;
use super::origins::Origins;
use crate::RetryPolicyBuilder;

/// One key of a configuration `C`. Its value, example and env form are read by the
/// test that renders the doc tables, not by the library.
#[cfg_attr(not(test), allow(dead_code))]
pub(super) struct Row<C> {
    /// Its path in a file: `max_attempts`, `backoff.base`.
    pub(super) path: &'static str,
    /// What its value is, for the doc tables (and, for a number, the error that
    /// rejects one).
    pub(super) value: &'static str,
    /// An example value as a TOML file writes it: `4`, `"50ms"`, `[429, 503]`.
    pub(super) example: &'static str,
    /// How a variable writes a value of its kind.
    pub(super) env_form: &'static str,
    /// Sets it in a configuration from a variable's (trimmed) text; an error names
    /// the variable.
    pub(super) read_env: fn(&mut C, &str, &str) -> Result<(), ConfigError>,
    /// Copies it, when the first configuration sets it, into the second: one key of
    /// the environment laid over a file.
    pub(super) layer: fn(&C, &mut C),
    /// How it reaches the builder.
    pub(super) applies: Applies<C>,
}

/// How a key reaches the [`RetryPolicyBuilder`].
pub(super) enum Applies<C> {
    /// Alone, through one setter; an error names the key, or its variable.
    Alone(fn(&C, RetryPolicyBuilder) -> Result<RetryPolicyBuilder, ConfigError>),
    /// With the other keys of its table, which together build one value (a
    /// backoff, a budget) under rules between them.
    WithItsTable,
}

impl<C> Row<C> {
    /// The name of its variable after `{prefix}_`: the path in upper case, a
    /// table's key joined with `_` (`backoff.base` → `BACKOFF_BASE`).
    pub(super) fn variable_suffix(&self) -> String {
        self.path.replace('.', "_").to_ascii_uppercase()
    }

    /// Its variable under `prefix` (given without its trailing `_`; empty for none).
    #[cfg(test)]
    pub(super) fn variable(&self, prefix: &str) -> String {
        if prefix.is_empty() {
            self.variable_suffix()
        } else {
            format!("{prefix}_{}", self.variable_suffix())
        }
    }

    /// The example as a variable writes it.
    #[cfg(test)]
    pub(super) fn env_example(&self) -> String {
        env_text(self.example)
    }
}

/// A value as a TOML file writes it (`"50ms"`, `[429, 503]`), as a variable
/// writes it: without quotes, a list comma-separated.
#[cfg(test)]
pub(super) fn env_text(toml: &str) -> String {
    let list = toml.trim_start_matches('[').trim_end_matches(']');
    list.split(',')
        .map(|item| item.trim().trim_matches('"'))
        .collect::<Vec<_>>()
        .join(",")
}

/// Applies a key that is set: `set_it` gets the builder, the value and the name an
/// error should use (the key's path, or the variable that set it).
pub(super) fn apply_if_set<T>(
    value: Option<&T>,
    builder: RetryPolicyBuilder,
    origins: &Origins,
    path: &str,
    set_it: impl FnOnce(RetryPolicyBuilder, &T, &str) -> Result<RetryPolicyBuilder, ConfigError>,
) -> Result<RetryPolicyBuilder, ConfigError> {
    match value {
        Some(value) => set_it(builder, value, &origins.name_of(path)),
        None => Ok(builder),
    }
}

/// Declares a table of settings from its rows: the serde struct, with one optional
/// field per key, and `ROWS`, the key's rows in the fields' order. A key with
/// `apply` reaches the builder alone; one without reaches it with its table.
///
/// `get` and `get_mut` lead from the whole configuration to the table (`get_mut`
/// creating it), so that every row reads and writes a whole configuration.
macro_rules! settings_table {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident at $prefix:literal in ($get:path, $get_mut:path) {
            $(
                $field:ident: $kind:ty {
                    value: $value:expr,
                    example: $example:expr,
                    $( apply: $apply:expr, )?
                }
            )*
        }
        $( and {
            $( $(#[$extra_meta:meta])* $extra:ident: $extra_ty:ty, )*
        } )?
    ) => {
        $(#[$meta])*
        #[derive(serde::Deserialize, serde::Serialize, Debug, Clone, Default, PartialEq)]
        #[serde(deny_unknown_fields)]
        $vis struct $name {
            $(
                #[serde(skip_serializing_if = "Option::is_none")]
                pub(in crate::config) $field: Option<$kind>,
            )*
            $($( $(#[$extra_meta])* pub(in crate::config) $extra: $extra_ty, )*)?
        }

        impl $name {
            /// The rows of this table's keys, in its fields' order.
            pub(in crate::config) const ROWS: &'static [Row<RetryPolicyConfig>] = &[$(
                Row {
                    path: concat!($prefix, stringify!($field)),
                    value: $value,
                    example: $example,
                    env_form: <$kind as Kind>::ENV_FORM,
                    read_env: |config, var, text| {
                        $get_mut(config).$field = Some(<$kind as Kind>::from_env(var, text, $value)?);
                        Ok(())
                    },
                    layer: |over, merged| {
                        if let Some(value) = $get(over).and_then(|table| table.$field.as_ref()) {
                            $get_mut(merged).$field = Some(value.clone());
                        }
                    },
                    applies: settings_table!(@applies $field, concat!($prefix, stringify!($field)) $(, $apply)?),
                },
            )*];
        }
    };
    (@applies $field:ident, $path:expr, $apply:expr) => {
        Applies::Alone(|config, builder| {
            apply_if_set(config.$field.as_ref(), builder, &config.origins, $path, $apply)
        })
    };
    (@applies $field:ident, $path:expr) => {
        Applies::WithItsTable
    };
}

pub(super) use settings_table;

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: &'static str, example: &'static str) -> Row<()> {
        Row {
            path,
            value: "",
            example,
            env_form: "",
            read_env: |_, _, _| Ok(()),
            layer: |_, _| {},
            applies: Applies::WithItsTable,
        }
    }

    #[test]
    fn a_variable_is_its_path_in_upper_case_under_the_prefix() {
        let cases = [
            ("max_attempts", "", "MAX_ATTEMPTS"),
            ("max_attempts", "APP", "APP_MAX_ATTEMPTS"),
            (
                "backoff.base",
                "PAYMENTS_HTTP",
                "PAYMENTS_HTTP_BACKOFF_BASE",
            ),
            ("budget.per_host", "R", "R_BUDGET_PER_HOST"),
        ];
        for (path, prefix, variable) in cases {
            assert_eq!(row(path, "").variable(prefix), variable, "{path}");
        }
    }

    #[test]
    fn an_example_as_a_variable_writes_it() {
        let cases = [
            ("4", "4"),
            ("0.2", "0.2"),
            ("true", "true"),
            (r#""50ms""#, "50ms"),
            (r#""X-Idempotency-Key""#, "X-Idempotency-Key"),
            ("[429, 502, 503]", "429,502,503"),
            (r#"["api_key", "token"]"#, "api_key,token"),
        ];
        for (toml, env) in cases {
            assert_eq!(row("key", toml).env_example(), env, "{toml}");
            assert_eq!(env_text(toml), env, "{toml}");
        }
    }
}
