//! A gate's settings as rows: one row per setting — its name, type, default, the
//! builder method's doc and, when the gate reports it, the getter's — and
//! everything else derived from them: the settings struct (with a derived `Debug`,
//! which the gate's own `Debug` shows), its `Default`, the builder method and the
//! getter. Adding a setting is adding its row, its check in `build` when it has a
//! range, and its use.

/// Declares a gate's settings struct, its defaults, its builder's setters (which
/// never fail: `build` validates) and the handle's getters. The builder holds a
/// `settings` field; the handle reads `self.inner.settings`.
macro_rules! gate_settings {
    (
        $(#[$meta:meta])*
        struct $settings:ident for $handle:ident, $builder:ident {
            $(
                $(#[$set_doc:meta])*
                $field:ident: $ty:ty = $default:expr
                $(=> $(#[$get_doc:meta])* $getter:ident)?;
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq)]
        struct $settings {
            $($field: $ty,)+
        }

        impl Default for $settings {
            fn default() -> Self {
                $settings {
                    $($field: $default,)+
                }
            }
        }

        impl $builder {
            $(
                $(#[$set_doc])*
                pub fn $field(mut self, $field: $ty) -> Self {
                    self.settings.$field = $field;
                    self
                }
            )+
        }

        impl $handle {
            $($(
                $(#[$get_doc])*
                pub fn $getter(&self) -> $ty {
                    self.inner.settings.$field
                }
            )?)+
        }
    };
}
pub(crate) use gate_settings;
