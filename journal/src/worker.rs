//! Who holds a lease: a worker's stable name and its process's incarnation.
//!
//! The name survives restarts (a host name, a pod name, a systemd instance); the
//! incarnation is new in every process. A claim by a worker also takes every
//! lease its own name holds under another incarnation — those belong to a
//! previous process of the same worker, which is dead if names are unique among
//! live processes — at once, without waiting for the lease to end. The fencing
//! counter makes it safe: the predecessor's late result, if any, is dropped.

use std::sync::OnceLock;

/// A lease holder: a stable worker name and the incarnation (one per process)
/// that holds the lease now.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Worker {
    name: String,
    incarnation: String,
}

impl Worker {
    /// A worker named `name` in this process's incarnation (see
    /// [`this_process_incarnation`](Self::this_process_incarnation)).
    pub fn new(name: impl Into<String>) -> Self {
        Self::with_incarnation(name, Self::this_process_incarnation())
    }

    /// A worker with an explicit incarnation (a boot id of your own, or a test
    /// that plays a restart inside one process).
    pub fn with_incarnation(name: impl Into<String>, incarnation: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            incarnation: incarnation.into(),
        }
    }

    /// A name of its own (`worker-<uuid v4>`): no later process shares it, so
    /// its leases are only ever taken over when they end.
    pub fn unique() -> Self {
        Self::new(format!("worker-{}", uuid::Uuid::new_v4()))
    }

    /// The stable name (stored as the lease's `owner`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The incarnation holding the lease.
    pub fn incarnation(&self) -> &str {
        &self.incarnation
    }

    /// This process's incarnation: a UUID v4 made once per process.
    pub fn this_process_incarnation() -> &'static str {
        static INCARNATION: OnceLock<String> = OnceLock::new();
        INCARNATION.get_or_init(|| uuid::Uuid::new_v4().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_incarnation_per_process_and_unique_names() {
        assert_eq!(
            Worker::new("a").incarnation(),
            Worker::new("b").incarnation()
        );
        assert_ne!(Worker::unique().name(), Worker::unique().name());
        let restarted = Worker::with_incarnation("a", "boot-2");
        assert_eq!((restarted.name(), restarted.incarnation()), ("a", "boot-2"));
    }
}
