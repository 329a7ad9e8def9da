//! A store in one process's memory: tests, single-instance services, and the
//! reference the database stores are compared with.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use super::rules::{claim_rule, token_holds, Found, Seen};
use super::{Claim, ClaimRequest, ClaimToken, Store, StoreFuture};
use crate::fingerprint::Fingerprint;
use crate::record::{Completion, Existing, ExistingState};
use crate::scope::ScopeId;

/// Claims and responses in a map behind one lock (the lock makes a claim atomic).
///
/// Nothing survives the process, and a fleet behind a load balancer needs a shared
/// database store instead.
#[derive(Debug, Default)]
pub struct MemoryStore {
    records: Mutex<HashMap<ScopeId, Record>>,
    // Store-wide, so a key released or pruned and claimed again never repeats a
    // generation that a lapsed holder still carries.
    generations: AtomicU64,
}

#[derive(Debug)]
struct Record {
    fingerprint: Fingerprint,
    generation: u64,
    expires_at: SystemTime,
    completion: Option<Completion>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many records it holds, expired ones included until pruned.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ScopeId, Record>> {
        // A panic elsewhere cannot leave a record half-written: each change is one assignment.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn claim_now(&self, request: &ClaimRequest) -> Claim {
        let mut records = self.lock();
        let previous = records.get(&request.scope);
        let seen = previous.map(|r| Seen {
            expires_at: r.expires_at,
            completed: r.completion.is_some(),
        });
        let found = claim_rule(seen, request.now);
        if let (Found::Taken, Some(record)) = (found, previous) {
            let state = match &record.completion {
                Some(done) => ExistingState::Completed(done.clone()),
                None => ExistingState::InProgress {
                    lease_until: record.expires_at,
                },
            };
            return Claim::Existing(Existing {
                fingerprint: record.fingerprint.clone(),
                state,
            });
        }
        let reclaimed = matches!(found, Found::Free { reclaimed: true });
        let generation = self.generations.fetch_add(1, Ordering::Relaxed) + 1;
        records.insert(
            request.scope,
            Record {
                fingerprint: request.fingerprint.clone(),
                generation,
                expires_at: request.now + request.lease,
                completion: None,
            },
        );
        Claim::Acquired {
            token: ClaimToken {
                scope: request.scope,
                generation,
            },
            reclaimed,
        }
    }

    fn holds<'a>(
        records: &'a mut HashMap<ScopeId, Record>,
        token: &ClaimToken,
    ) -> Option<&'a mut Record> {
        records.get_mut(&token.scope).filter(|r| {
            token_holds(
                Some((r.generation, r.completion.is_some())),
                token.generation,
            )
        })
    }
}

impl Store for MemoryStore {
    fn claim<'a>(&'a self, request: &'a ClaimRequest) -> StoreFuture<'a, Claim> {
        let claim = self.claim_now(request);
        Box::pin(async move { Ok(claim) })
    }

    fn complete<'a>(
        &'a self,
        token: &'a ClaimToken,
        completion: Completion,
        expires_at: SystemTime,
    ) -> StoreFuture<'a, bool> {
        let mut records = self.lock();
        let held = match Self::holds(&mut records, token) {
            Some(record) => {
                record.completion = Some(completion);
                record.expires_at = expires_at;
                true
            }
            None => false,
        };
        Box::pin(async move { Ok(held) })
    }

    fn release<'a>(&'a self, token: &'a ClaimToken) -> StoreFuture<'a, bool> {
        let mut records = self.lock();
        let held = Self::holds(&mut records, token).is_some();
        if held {
            records.remove(&token.scope);
        }
        Box::pin(async move { Ok(held) })
    }

    fn prune(&self, now: SystemTime) -> StoreFuture<'_, u64> {
        let mut records = self.lock();
        let before = records.len();
        records.retain(|_, r| r.expires_at > now);
        let pruned = (before - records.len()) as u64;
        Box::pin(async move { Ok(pruned) })
    }
}
