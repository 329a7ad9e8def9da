//! Which environment variable set each setting, so that an error found only when
//! the policy is built still names the variable rather than the setting it fills.

/// Setting path → the environment variable it was read from (settings from a file
/// or from code have none, and errors name their path).
#[derive(Debug, Clone, Default)]
pub(super) struct Origins(Vec<(String, String)>);

impl Origins {
    /// Records that `path` (`"backoff.base"`) was set by `variable`.
    pub(super) fn set(&mut self, path: &str, variable: String) {
        self.0.retain(|(known, _)| known != path);
        self.0.push((path.to_owned(), variable));
    }

    /// The name an error about `path` should use: the variable that set it, or the
    /// path itself. An error about a whole table (`hedging`, which needs two
    /// attempts or more) that only its keys' variables turned on names the first of
    /// those: an operator who set only variables should be pointed at one.
    pub(super) fn name_of(&self, path: &str) -> String {
        let table = format!("{path}.");
        self.variable_of(path)
            .or_else(|| self.variable_where(|known| known.starts_with(&table)))
            .map_or_else(|| path.to_owned(), str::to_owned)
    }

    /// The variable that set `path`, if one did.
    pub(super) fn variable_of(&self, path: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(known, _)| known == path)
            .map(|(_, variable)| variable.as_str())
    }

    /// The variable of the first setting recorded whose path passes `wanted`.
    pub(super) fn variable_where(&self, wanted: impl Fn(&str) -> bool) -> Option<&str> {
        self.0
            .iter()
            .find(|(path, _)| wanted(path))
            .map(|(_, variable)| variable.as_str())
    }

    /// Adds `newer`'s records, which win over this one's.
    pub(super) fn extend(&mut self, newer: Origins) {
        for (path, variable) in newer.0 {
            self.set(&path, variable);
        }
    }
}

/// Where a setting came from does not change what it says: two configurations with
/// the same settings are equal, whether read from a file or from the environment.
impl PartialEq for Origins {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
