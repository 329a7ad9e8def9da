//! Per-authority state for the gates: the key (scheme, host, port) and the one
//! bounded map the breaker, the throttle and a per-host budget keep it in.
//!
//! A gate that keys by host name alone makes two services on one host at different
//! ports share a circuit: one's outage refuses the other's intents. A gate that
//! stops tracking past a bound by putting every further authority into one shared
//! entry does the same to strangers. So the key is the origin, and past the bound
//! an entry is *replaced*, never shared: the least recently used idle entry (one
//! whose window holds nothing and whose circuit is closed) makes room. When every
//! tracked authority is busy, the new one is admitted untracked — a gate that
//! cannot remember an authority must not refuse it on another's record.

use std::borrow::Cow;
use std::collections::HashMap;

/// Authorities tracked at once by one gate.
pub(crate) const MAX_AUTHORITIES: usize = 1024;

/// `url`'s origin, `scheme://host[:port]`: the port is left out when it is the
/// scheme's default (the URL parser already drops it), credentials never appear.
/// Borrowed from the URL unless it carries credentials.
pub(crate) fn of(url: &reqwest::Url) -> Cow<'_, str> {
    let host = url.host_str().unwrap_or("");
    let port_len = url.port().map_or(0, |port| 1 + decimal_len(port));
    let len = url.scheme().len() + "://".len() + host.len() + port_len;
    let plain = url.username().is_empty() && url.password().is_none();
    match url.as_str().get(..len) {
        Some(origin) if plain => Cow::Borrowed(origin),
        _ => match url.port() {
            Some(port) => Cow::Owned(format!("{}://{host}:{port}", url.scheme())),
            None => Cow::Owned(format!("{}://{host}", url.scheme())),
        },
    }
}

fn decimal_len(n: u16) -> usize {
    match n {
        0..=9 => 1,
        10..=99 => 2,
        100..=999 => 3,
        1_000..=9_999 => 4,
        _ => 5,
    }
}

/// A gate's per-authority entries, at most `bound` of them.
pub(crate) struct AuthorityMap<V> {
    entries: HashMap<Box<str>, Entry<V>>,
    bound: usize,
    /// Counts uses: the entry with the smallest `last_used` is the least recent.
    uses: u64,
}

struct Entry<V> {
    value: V,
    last_used: u64,
}

impl<V: Default> AuthorityMap<V> {
    pub(crate) fn new(bound: usize) -> Self {
        AuthorityMap {
            entries: HashMap::new(),
            bound,
            uses: 0,
        }
    }

    /// The entry of `authority`, created if needed. Past the bound it takes the
    /// place of the least recently used entry `idle` says is idle; `None` when
    /// every entry is busy (the caller admits and records nothing).
    pub(crate) fn entry(&mut self, authority: &str, idle: impl Fn(&V) -> bool) -> Option<&mut V> {
        self.uses += 1;
        let uses = self.uses;
        if !self.entries.contains_key(authority) {
            if self.entries.len() >= self.bound {
                let oldest_idle = self
                    .entries
                    .iter()
                    .filter(|(_, entry)| idle(&entry.value))
                    .min_by_key(|(_, entry)| entry.last_used)
                    .map(|(key, _)| key.clone())?;
                self.entries.remove(&oldest_idle);
            }
            self.entries.insert(
                authority.into(),
                Entry {
                    value: V::default(),
                    last_used: uses,
                },
            );
        }
        let entry = self.entries.get_mut(authority)?;
        entry.last_used = uses;
        Some(&mut entry.value)
    }

    /// The entry of `authority` if it is tracked; reading does not count as a use.
    pub(crate) fn get(&self, authority: &str) -> Option<&V> {
        self.entries.get(authority).map(|entry| &entry.value)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.values().map(|entry| &entry.value)
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_scheme_host_and_port() {
        #[rustfmt::skip]
        let rows = [
            ("default port left out",        "http://127.0.0.1/a?b=c",       "http://127.0.0.1"),
            ("explicit default port dropped", "https://api.example.com:443/", "https://api.example.com"),
            ("other port kept",              "http://127.0.0.1:8080/pay",    "http://127.0.0.1:8080"),
            ("one-digit port",               "http://h:1/",                  "http://h:1"),
            ("five-digit port",              "http://h:65535/",              "http://h:65535"),
            ("host lower-cased",             "http://API.Example.COM/",      "http://api.example.com"),
            ("IPv6 in brackets",             "http://[::1]:9000/x",          "http://[::1]:9000"),
            ("credentials never in the key", "http://user:pw@h:81/",         "http://h:81"),
            ("user only",                    "https://user@h/",              "https://h"),
        ];
        for (name, url, expected) in rows {
            let url = reqwest::Url::parse(url).unwrap();
            assert_eq!(of(&url), expected, "{name}");
        }
    }

    #[test]
    fn past_the_bound_the_least_recently_used_idle_entry_makes_room() {
        // Values are "busy" flags.
        let mut map = AuthorityMap::<bool>::new(3);
        for key in ["a", "b", "c"] {
            map.entry(key, |busy| !busy).unwrap();
        }
        *map.entry("a", |busy| !busy).unwrap() = true; // a: busy, most recent
        map.entry("b", |busy| !busy).unwrap(); // b: more recent than c
                                               // d replaces c (least recently used idle), never shares with it.
        *map.entry("d", |busy| !busy).unwrap() = true;
        assert!(map.get("c").is_none() && map.get("b").is_some());
        assert!(map.get("d") == Some(&true));
        // e replaces b, the only idle one left.
        *map.entry("e", |busy| !busy).unwrap() = true;
        assert!(map.get("b").is_none());
        // Every entry busy: f is not tracked, and nothing is evicted.
        assert!(map.entry("f", |busy| !busy).is_none());
        assert_eq!(map.len(), 3);
        assert!(map.get("f").is_none());
        // A tracked entry is still reachable when the map is full.
        assert_eq!(map.entry("a", |busy| !busy), Some(&mut true));
    }
}
