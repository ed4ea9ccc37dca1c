//! What an instance remembers of the keys it admitted: by the key's hash
//! (never the key), the key's stored record as the last admission read it
//! and whether it had budget left. Bounded (`CAPACITY` keys) and expiring
//! (`TTL`). It is only a guess of what the next admission will say, used to
//! start a read's own query at the same time as its admission
//! (`http::lifecycle`): admission still runs on every request and decides,
//! so a revoked key, a deactivated organization or a spent budget is
//! refused on the very next request all the same.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

use super::decision::ApiKeyRecord;
use super::key::KeyHash;
use super::scope::Scope;
use crate::model::Timestamp;

/// Keys remembered at most (a few MB); beyond it, the expired go, then all.
pub const CAPACITY: usize = 10_000;
/// How long an admission is remembered.
pub const TTL: Duration = Duration::from_secs(300);

#[derive(Debug, Default)]
pub struct KeyMemory(Mutex<HashMap<[u8; 32], Remembered>>);

#[derive(Debug)]
struct Remembered {
    record: ApiKeyRecord,
    /// The last admission left the key budget to spend.
    spendable: bool,
    at: Instant,
}

/// A key the last admission let in, as the next request may assume it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recalled {
    pub org_id: Uuid,
    pub key_id: Uuid,
}

impl KeyMemory {
    /// The key's organization, when this instance admitted the key lately,
    /// its record then allowed a request that needs `needed` at `now`, and
    /// it had budget left: a request worth starting before its admission.
    pub fn recall(
        &self,
        hash: &KeyHash,
        needed: Scope,
        api_enabled: bool,
        now: Timestamp,
    ) -> Option<Recalled> {
        let entries = self.entries();
        let remembered = entries.get(&hash.0)?;
        let usable = remembered.at.elapsed() < TTL
            && remembered.spendable
            && remembered.record.rejection(now).is_none()
            && remembered.record.refusal(needed, api_enabled).is_none();
        usable.then_some(Recalled {
            org_id: remembered.record.org_id,
            key_id: remembered.record.key_id,
        })
    }

    /// What an admission of the key read: its record, and whether the key
    /// has budget left after it.
    pub fn remember(&self, hash: &KeyHash, record: &ApiKeyRecord, spendable: bool) {
        let mut entries = self.entries();
        if entries.len() >= CAPACITY && !entries.contains_key(&hash.0) {
            entries.retain(|_, r| r.at.elapsed() < TTL);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(
            hash.0,
            Remembered {
                record: record.clone(),
                spendable,
                at: Instant::now(),
            },
        );
    }

    /// Forgets the key (an admission refused it, or named another
    /// organization than remembered).
    pub fn forget(&self, hash: &KeyHash) {
        self.entries().remove(&hash.0);
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Remembered>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(scopes: Vec<Scope>) -> ApiKeyRecord {
        ApiKeyRecord {
            key_id: Uuid::now_v7(),
            org_id: Uuid::now_v7(),
            key_hash: String::new(),
            scopes,
            label: None,
            public_api: true,
            org_active: true,
            created_at: crate::model::now(),
            expires_at: None,
            revoked_at: None,
        }
    }

    #[test]
    fn recalls_only_what_the_next_admission_would_let_in() {
        let memory = KeyMemory::default();
        let hash = KeyHash::of("k");
        let now = crate::model::now();
        assert_eq!(memory.recall(&hash, Scope::ReadData, true, now), None);
        let key = record(vec![Scope::ReadData]);
        memory.remember(&hash, &key, true);
        let recalled = memory.recall(&hash, Scope::ReadData, true, now).unwrap();
        assert_eq!((recalled.org_id, recalled.key_id), (key.org_id, key.key_id));
        // A scope the key lacks, the API switched off, no budget left, a
        // revoked key: nothing to start early.
        assert_eq!(memory.recall(&hash, Scope::WriteData, true, now), None);
        assert_eq!(memory.recall(&hash, Scope::ReadData, false, now), None);
        memory.remember(&hash, &key, false);
        assert_eq!(memory.recall(&hash, Scope::ReadData, true, now), None);
        let mut revoked = key.clone();
        revoked.revoked_at = Some(now);
        memory.remember(&hash, &revoked, true);
        assert_eq!(memory.recall(&hash, Scope::ReadData, true, now), None);
        memory.remember(&hash, &key, true);
        memory.forget(&hash);
        assert_eq!(memory.recall(&hash, Scope::ReadData, true, now), None);
    }

    /// A memory of keys `keys` (named by their numbers), all live, and
    /// their record.
    fn holding(keys: std::ops::Range<usize>) -> (KeyMemory, ApiKeyRecord) {
        let memory = KeyMemory::default();
        let key = record(vec![Scope::ReadData]);
        for i in keys {
            memory.remember(&KeyHash::of(&i.to_string()), &key, true);
        }
        (memory, key)
    }

    #[test]
    fn holds_at_most_capacity_keys() {
        let (memory, _) = holding(0..CAPACITY + 5);
        assert!(memory.entries().len() <= CAPACITY);
    }

    #[test]
    fn a_new_key_at_capacity_makes_room_by_dropping_the_expired_only() {
        let (memory, key) = holding(1..CAPACITY);
        let now = crate::model::now();
        let Some(long_ago) = Instant::now().checked_sub(TTL + Duration::from_secs(1)) else {
            return; // a machine up for less than the TTL
        };
        let expired = KeyHash::of("expired");
        memory.entries().insert(
            expired.0,
            Remembered {
                record: key.clone(),
                spendable: true,
                at: long_ago,
            },
        );
        memory.remember(&KeyHash::of("new"), &key, true);
        let entries = memory.entries();
        assert!(!entries.contains_key(&expired.0), "the expired key goes");
        assert_eq!(entries.len(), CAPACITY, "every live key stays");
        drop(entries);
        for live in ["1", "new"] {
            let recalled = memory.recall(&KeyHash::of(live), Scope::ReadData, true, now);
            assert!(recalled.is_some(), "{live}");
        }
    }

    #[test]
    fn a_key_admitted_again_at_capacity_keeps_the_others() {
        let (memory, key) = holding(0..CAPACITY);
        let now = crate::model::now();
        // Full of live keys: one of them admitted again replaces its own
        // entry, and every other key is still remembered.
        memory.remember(&KeyHash::of("0"), &key, true);
        assert_eq!(memory.entries().len(), CAPACITY);
        assert!(
            memory
                .recall(&KeyHash::of("1"), Scope::ReadData, true, now)
                .is_some()
        );
    }
}
