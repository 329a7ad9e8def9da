//! Settings written as one of a few names: `backoff.strategy`, `key_attachment`
//! and `key_format`. Names are matched ignoring case and surrounding spaces, the
//! same in a file and in an environment variable, and a wrong one is answered
//! with every accepted name.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use super::error::ConfigError;
use crate::{KeyAttachment, KeyFormat};

/// A setting with a fixed set of names (an enum written as a string).
pub(super) trait Choice: Sized + Copy + PartialEq + 'static {
    /// The setting's path, for messages.
    const FIELD: &'static str;
    /// Every accepted name and its value.
    const NAMES: &'static [(&'static str, Self)];

    /// The name this value is written as.
    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, value)| *value == self)
            .map_or("", |(name, _)| name)
    }

    /// Every accepted name, for messages.
    fn expected() -> String {
        let names: Vec<String> = Self::NAMES
            .iter()
            .map(|(name, _)| format!("{name:?}"))
            .collect();
        format!("one of {}", names.join(", "))
    }

    /// Parses `value`; an error names `field` (a setting path or a variable).
    fn parse(field: &str, value: &str) -> Result<Self, ConfigError> {
        Self::NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(value.trim()))
            .map(|(_, choice)| *choice)
            .ok_or_else(|| ConfigError::InvalidValue {
                field: field.to_owned(),
                value: value.to_owned(),
                expected: Self::expected(),
            })
    }
}

/// `backoff.strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "&'static str")]
pub(super) enum Strategy {
    FullJitter,
    DecorrelatedJitter,
    Constant,
    None,
}

impl Choice for Strategy {
    const FIELD: &'static str = "backoff.strategy";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("full_jitter", Self::FullJitter),
        ("decorrelated_jitter", Self::DecorrelatedJitter),
        ("constant", Self::Constant),
        ("none", Self::None),
    ];
}

/// `key_attachment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "&'static str")]
pub(super) struct KeyAttachmentSetting(pub(super) KeyAttachment);

impl Choice for KeyAttachmentSetting {
    const FIELD: &'static str = "key_attachment";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("unsafe_methods", Self(KeyAttachment::UnsafeMethods)),
        ("always", Self(KeyAttachment::Always)),
        ("never", Self(KeyAttachment::Never)),
    ];
}

/// `key_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "&'static str")]
pub(super) struct KeyFormatSetting(pub(super) KeyFormat);

impl Choice for KeyFormatSetting {
    const FIELD: &'static str = "key_format";
    const NAMES: &'static [(&'static str, Self)] = &[
        ("token", Self(KeyFormat::Token)),
        ("sf_string", Self(KeyFormat::SfString)),
    ];
}

/// Reads a name. Hand-written rather than a derived `try_from = "String"`: serde's
/// `String` answers a number with "expected a string", which in JSON names no
/// setting; this answers with the setting and its names.
struct ChoiceVisitor<T>(PhantomData<T>);

impl<T: Choice> Visitor<'_> for ChoiceVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", T::FIELD, T::expected())
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<T, E> {
        T::parse(T::FIELD, value).map_err(E::custom)
    }
}

// Read through `ChoiceVisitor`, written (derived `Serialize`) as the name.
macro_rules! serde_through_names {
    ($($choice:ty),*) => {$(
        impl<'de> Deserialize<'de> for $choice {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_str(ChoiceVisitor(PhantomData))
            }
        }

        impl From<$choice> for &'static str {
            fn from(choice: $choice) -> Self {
                choice.name()
            }
        }
    )*};
}

serde_through_names!(Strategy, KeyAttachmentSetting, KeyFormatSetting);
