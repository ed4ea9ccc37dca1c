//! Slots of a key's window this instance counted ahead (a lease): a busy
//! key's admission counts a few requests at once, and the instance admits
//! the next ones from what it holds, reading the key (and its counters)
//! instead of writing them. The counters hold every slot leased, so
//! instances together never admit more than the limit in a window; a
//! slot an instance leased and did not use is spent (it weighs like a
//! request, and goes with its window).
//!
//! A lease grows with what the instance used of the key's window (1, 1,
//! 2, 4, ... up to `RateLimitConfig::lease`), and stays at a quarter of
//! the budget the key had left, so a key near its limit counts one
//! request at a time, as without leases.
//!
//! A request the window refuses first waits for the key's admissions that
//! counted before it on this instance to hand over what they leased, and
//! takes a slot of that if one is left (`take_after`): one instance alone
//! admits exactly the limit, however many of its requests race.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::auth::key::KeyHash;

/// Keys whose leases are held at most; beyond it, those of past windows
/// go, then all (a few hundred KB).
pub const CAPACITY: usize = 10_000;

#[derive(Debug, Default)]
pub struct Leases {
    held: Mutex<Held>,
    /// Told whenever a counted admission ends.
    settled: Notify,
}

#[derive(Debug, Default)]
struct Held {
    leases: HashMap<[u8; 32], Lease>,
    /// Each key's counted admissions in flight, by the order they started.
    counting: HashMap<[u8; 32], BTreeSet<u64>>,
    started: u64,
}

/// A counted admission of a key in flight on this instance: it ends (and
/// its wait ends for the requests refused after it) when dropped, once its
/// slots are `granted`.
#[derive(Debug)]
pub struct Counting<'a> {
    leases: &'a Leases,
    key: [u8; 32],
    order: u64,
}

impl Drop for Counting<'_> {
    fn drop(&mut self) {
        let mut held = self.leases.held();
        if let Some(flight) = held.counting.get_mut(&self.key) {
            flight.remove(&self.order);
            if flight.is_empty() {
                held.counting.remove(&self.key);
            }
        }
        drop(held);
        self.leases.settled.notify_waiters();
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Lease {
    /// The window whose counter holds the slots.
    window: u64,
    /// Slots counted and not used yet.
    left: u32,
    /// Slots this instance used in the window (leased or not).
    used: u32,
    /// The key's budget left after the last admission that counted.
    room: u32,
}

impl Leases {
    /// Takes one slot of the key's lease in `window`, if one is left: the
    /// slots left after it.
    pub fn take(&self, hash: &KeyHash, window: u64) -> Option<u32> {
        let mut held = self.held();
        let lease = held
            .leases
            .get_mut(&hash.0)
            .filter(|l| l.window == window)?;
        if lease.left == 0 {
            return None;
        }
        lease.left -= 1;
        lease.used += 1;
        Some(lease.left)
    }

    /// Starts a counted admission of the key.
    pub fn counting(&self, hash: &KeyHash) -> Counting<'_> {
        let mut held = self.held();
        held.started += 1;
        let order = held.started;
        held.counting.entry(hash.0).or_default().insert(order);
        Counting {
            leases: self,
            key: hash.0,
            order,
        }
    }

    /// A slot of the key's lease in `window` for the request of `counting`,
    /// which the window refused: once the key's admissions that started
    /// before it have ended (their slots are held, or they failed), so
    /// none of what they counted is left unused while it is refused.
    pub async fn take_after(&self, counting: Counting<'_>, window: u64) -> Option<u32> {
        let (key, order) = (counting.key, counting.order);
        drop(counting);
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            let before = self
                .held()
                .counting
                .get(&key)
                .and_then(|flight| flight.first().copied())
                .is_some_and(|first| first < order);
            if !before {
                return self.take(&KeyHash(key), window);
            }
            settled.await;
        }
    }

    /// How many slots the key's next counted admission in `window` should
    /// count: what this instance used of the window, at most `max` and a
    /// quarter of the budget left, at least one.
    pub fn size(&self, hash: &KeyHash, window: u64, max: u32) -> u32 {
        let held = self.held();
        let Some(lease) = held.leases.get(&hash.0).filter(|l| l.window == window) else {
            return 1;
        };
        lease.used.min(max).min(lease.room / 4).max(1)
    }

    /// An admission counted `slots` in `window` (one of them for its own
    /// request) and left the key `room` to spend: the rest are held.
    pub fn granted(&self, hash: &KeyHash, window: u64, slots: u32, room: u32) {
        let mut held = self.held();
        let leases = &mut held.leases;
        if leases.len() >= CAPACITY && !leases.contains_key(&hash.0) {
            leases.retain(|_, l| l.window >= window);
            if leases.len() >= CAPACITY {
                leases.clear();
            }
        }
        let lease = leases.entry(hash.0).or_default();
        if lease.window != window {
            *lease = Lease {
                window,
                ..Lease::default()
            };
        }
        lease.left += slots.saturating_sub(1);
        lease.used += 1;
        lease.room = room;
    }

    /// Drops the key's lease (its key was refused): its slots stay spent.
    pub fn forget(&self, hash: &KeyHash) {
        self.held().leases.remove(&hash.0);
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_grows_with_use_and_shrinks_near_the_limit() {
        let leases = Leases::default();
        let key = KeyHash::of("k");
        // A key this instance has not admitted in the window: one slot.
        assert_eq!(leases.size(&key, 7, 8), 1);
        assert_eq!(leases.take(&key, 7), None);
        leases.granted(&key, 7, 1, 99);
        assert_eq!(leases.size(&key, 7, 8), 1, "used one");
        leases.granted(&key, 7, 1, 98);
        assert_eq!(leases.size(&key, 7, 8), 2, "used two");
        leases.granted(&key, 7, 2, 96);
        // One of the two slots is held: the next request takes it.
        assert_eq!(leases.take(&key, 7), Some(0));
        assert_eq!(leases.take(&key, 7), None);
        assert_eq!(leases.size(&key, 7, 8), 4, "used four");
        for _ in 0..20 {
            leases.granted(&key, 7, 1, 60);
        }
        assert_eq!(leases.size(&key, 7, 8), 8, "at most the setting's");
        assert_eq!(leases.size(&key, 7, 1), 1, "a setting of 1: no lease");
        leases.granted(&key, 7, 1, 11);
        assert_eq!(leases.size(&key, 7, 8), 2, "a quarter of what is left");
        leases.granted(&key, 7, 1, 3);
        assert_eq!(leases.size(&key, 7, 8), 1, "near the limit, one at a time");
    }

    #[test]
    fn a_lease_is_of_its_window_only() {
        let leases = Leases::default();
        let key = KeyHash::of("k");
        leases.granted(&key, 7, 4, 90);
        assert_eq!(leases.take(&key, 8), None, "the next window holds none");
        assert_eq!(leases.size(&key, 8, 8), 1, "nor what was used before");
        leases.granted(&key, 8, 1, 99);
        assert_eq!(
            leases.take(&key, 7),
            None,
            "the old window's slots are gone"
        );
        leases.granted(&key, 8, 3, 90);
        leases.forget(&key);
        assert_eq!(leases.take(&key, 8), None);
    }

    #[tokio::test]
    async fn a_refused_request_waits_for_the_admissions_before_it_and_takes_their_slot() {
        let leases: &'static Leases = Box::leak(Box::default());
        let key = KeyHash::of("k");
        let earlier = leases.counting(&key);
        let refused = leases.counting(&key);
        let later = leases.counting(&key);
        // A test's task: no request, no write gate.
        #[allow(clippy::disallowed_methods)]
        let waiting = tokio::spawn(leases.take_after(refused, 7));
        // The earlier admission counted 3 and has not said so yet.
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "it waits for the earlier one");
        leases.granted(&key, 7, 3, 90);
        drop(earlier);
        // The one still in flight started after it: not waited for.
        assert_eq!(waiting.await.unwrap(), Some(1), "one of the two held");
        drop(later);
        assert_eq!(leases.take(&key, 7), Some(0));
        assert!(leases.held().counting.is_empty(), "nothing left in flight");
    }

    #[tokio::test]
    async fn a_refused_request_with_nothing_before_it_takes_what_is_held_at_once() {
        let leases = Leases::default();
        let key = KeyHash::of("k");
        assert_eq!(leases.take_after(leases.counting(&key), 7).await, None);
        leases.granted(&key, 7, 2, 90);
        assert_eq!(leases.take_after(leases.counting(&key), 7).await, Some(0));
    }

    #[test]
    fn holds_at_most_capacity_keys() {
        let leases = Leases::default();
        for i in 0..CAPACITY + 5 {
            leases.granted(&KeyHash::of(&i.to_string()), 7, 2, 90);
        }
        assert!(leases.held().leases.len() <= CAPACITY);
    }
}
