//! Per-key sliding-window rate limit (the sliding-window-counter method):
//! the estimate is this fixed window's count plus the previous window's
//! count weighted by how much of it still overlaps the last 60 seconds.
//!
//! Only successful (2xx) requests spend budget, without losing the bound
//! under concurrency: admission reserves a slot with one conditional write
//! on the key's counters, made at the same time as the read that
//! authenticates the request (`ApiKeys::admit`: the store refuses to count
//! past the limit, so N parallel requests never admit more than the
//! limit), and a request whose answer is not a success gives its slot back
//! (`release`). A request
//! refused by the weighted estimate is taken back at once, so a 429 never
//! spends budget.
//!
//! Failures have a ceiling of their own (`RateLimitConfig::failure_limit`,
//! five times the limit, in one fixed window): the slot a failure gives
//! back is counted as a failure in the same write, and the admitting
//! write refuses a key whose window holds that many (429, `Retry-After`
//! the window's end), so 404 loops, paid provider calls that fail and
//! password hashes that end in a 409 are bounded per key.
//!
//! A busy key's admission counts a few slots at once, and the instance
//! admits the key's next requests in the window from them (`lease`): a
//! read of the key instead of a write, with the bound kept (the counters
//! hold every slot leased).
//!
//! The headers: `X-RateLimit-Remaining` is the budget left after this
//! request; `X-RateLimit-Reset` is the Unix time at which, with no further
//! requests, none of the key's requests so far counts any more (the full
//! budget is back); `Retry-After` on a 429 is the number of seconds after
//! which the next request is admitted.

mod lease;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderValue};

use crate::auth::key::KeyHash;
use crate::config::RateLimitConfig;
use crate::error::ApiError;
use crate::store::Store;
use crate::store::operators::api_keys::KeyState;

pub use lease::Leases;

/// What the `X-RateLimit-*` headers say about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimitDecision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Unix seconds when the full budget is back (see the module docs).
    pub reset: u64,
    /// Seconds until the next request is admitted (refused requests).
    pub retry_after: u64,
    /// Refused because the key's failed requests reached their ceiling
    /// (`RateLimitConfig::failure_limit`) in this window.
    pub failures: bool,
}

/// A slot counted for an admitted request, given back unless it succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub key: KeyHash,
    pub window: u64,
}

impl RateLimitDecision {
    /// Headers for a response that used no budget and whose key was not
    /// accepted (or the limit is switched off): the full budget.
    pub fn untouched(config: &RateLimitConfig, now: SystemTime) -> Self {
        let window = Window::at(now, config.window);
        Self {
            allowed: true,
            limit: config.limit,
            remaining: config.limit,
            reset: window.end(),
            retry_after: 0,
            failures: false,
        }
    }

    /// The same decision after its reserved slot was given back.
    pub fn released(self) -> Self {
        Self {
            remaining: (self.remaining + 1).min(self.limit),
            ..self
        }
    }

    pub fn write_headers(&self, headers: &mut HeaderMap) {
        headers.insert("x-ratelimit-limit", HeaderValue::from(self.limit));
        headers.insert("x-ratelimit-remaining", HeaderValue::from(self.remaining));
        headers.insert("x-ratelimit-reset", HeaderValue::from(self.reset));
    }
}

/// One fixed window of the sliding-window counter.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Windows since the Unix epoch: the key of its counter.
    pub index: u64,
    /// Window length in milliseconds.
    len: u64,
    /// Milliseconds into the window.
    elapsed: u64,
}

impl Window {
    pub fn at(now: SystemTime, len: Duration) -> Self {
        let since_epoch = now
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        let len = (len.as_millis() as u64).max(1);
        Self {
            index: since_epoch / len,
            len,
            elapsed: since_epoch % len,
        }
    }

    /// Unix seconds at the end of window `index + ahead`.
    fn end_of(&self, ahead: u64) -> u64 {
        ((self.index + 1 + ahead) * self.len).div_ceil(1000)
    }

    fn end(&self) -> u64 {
        self.end_of(0)
    }

    /// The previous window's count that still weighs after `elapsed` ms.
    fn carried(&self, previous: u32, elapsed: u64) -> u32 {
        let overlap = self.len.saturating_sub(elapsed);
        (u64::from(previous) * overlap / self.len) as u32
    }

    /// This window's count plus the overlapping share of the previous one.
    fn estimate(&self, current: u32, previous: u32) -> u32 {
        current + self.carried(previous, self.elapsed)
    }

    /// When the full budget is back: the end of the window after the last
    /// one that holds a request.
    fn reset(&self, current: u32) -> u64 {
        if current > 0 {
            self.end_of(1)
        } else {
            self.end()
        }
    }

    /// Milliseconds from now until one more request fits under `limit`,
    /// with `current` and `previous` as they are.
    fn wait(&self, limit: u32, current: u32, previous: u32) -> u64 {
        // Earliest point `e` of a window with counts (c, p) at which
        // c + 1 + carried(p, e) <= limit, if any.
        let earliest = |c: u32, p: u32| -> Option<u64> {
            let room = u64::from(limit.checked_sub(c + 1)?);
            if p == 0 {
                return Some(0);
            }
            // carried <= room  <=>  p * (len - e) < (room + 1) * len
            let limit_overlap = ((room + 1) * self.len).div_ceil(u64::from(p)) - 1;
            Some(self.len.saturating_sub(limit_overlap))
        };
        if let Some(at) = earliest(current, previous).filter(|at| *at < self.len) {
            return at.saturating_sub(self.elapsed);
        }
        let next = earliest(0, current).unwrap_or(0);
        self.len - self.elapsed + next
    }
}

fn decision(
    config: &RateLimitConfig,
    window: Window,
    current: u32,
    previous: u32,
) -> RateLimitDecision {
    let estimate = window.estimate(current, previous);
    RateLimitDecision {
        allowed: true,
        limit: config.limit,
        remaining: config.limit.saturating_sub(estimate),
        reset: window.reset(current),
        retry_after: 0,
        failures: false,
    }
}

/// The decision for a request of a valid key that may use its route, from
/// what the admitting write found: admitted with its reservation and the
/// slots it counted beyond its own (to lease), or refused with
/// `retry_after` (nothing spent: what the weighted estimate refuses after
/// it was counted is taken back).
pub async fn decide(
    store: &Store,
    config: &RateLimitConfig,
    key: KeyHash,
    window: Window,
    found: &KeyState,
) -> Result<(RateLimitDecision, Option<Reservation>, u32), ApiError> {
    if !config.enabled {
        return Ok((
            RateLimitDecision::untouched(config, crate::clock::system_time()),
            None,
            0,
        ));
    }
    let limit = config.limit;
    let refused = |current: u32, previous: u32| {
        let wait = window.wait(limit, current, previous);
        RateLimitDecision {
            allowed: false,
            remaining: 0,
            retry_after: wait.div_ceil(1000).max(1),
            ..decision(config, window, current, previous)
        }
    };
    let (mut current, previous) = (found.current, found.previous);
    if !found.counted {
        if let Some(ceiling) = failures_ceiling(config, window, found) {
            return Ok((ceiling, None, 0));
        }
        // The key may make the request, so what refused it was the window.
        return Ok((refused(current.max(limit), previous), None, 0));
    }
    let mut slots = found.slots.max(1);
    if window.estimate(current, previous) > limit {
        // Of the slots counted, those the weighted estimate lets in stay.
        let before = window.estimate(current - slots, previous);
        let usable = limit.saturating_sub(before).min(slots);
        store
            .api_keys()
            .uncount(&key, window.index, slots - usable)
            .await?;
        current -= slots - usable;
        if usable == 0 {
            return Ok((refused(current, previous), None, 0));
        }
        slots = usable;
    }
    let reservation = Reservation {
        key,
        window: window.index,
    };
    let leased = slots - 1;
    Ok((
        with_lease(decision(config, window, current, previous), leased),
        Some(reservation),
        leased,
    ))
}

/// The decision for a request admitted from the instance's lease (`left`
/// slots still held after its own), from the key's counters as read: its
/// slot is counted already; only a key whose failures reached their
/// ceiling is refused (its slot stays spent).
pub fn leased(
    config: &RateLimitConfig,
    key: KeyHash,
    window: Window,
    found: &KeyState,
    left: u32,
) -> (RateLimitDecision, Option<Reservation>) {
    if let Some(ceiling) = failures_ceiling(config, window, found) {
        return (ceiling, None);
    }
    let decision = decision(config, window, found.current, found.previous);
    let reservation = Reservation {
        key,
        window: window.index,
    };
    (with_lease(decision, left), Some(reservation))
}

/// What the key has to spend: what its counters leave, and the slots this
/// instance holds for it (counted already).
fn with_lease(decision: RateLimitDecision, held: u32) -> RateLimitDecision {
    RateLimitDecision {
        remaining: decision.remaining.saturating_add(held).min(decision.limit),
        ..decision
    }
}

/// A refusal when the key's failed requests reached their ceiling in this
/// window: nothing more until it ends.
fn failures_ceiling(
    config: &RateLimitConfig,
    window: Window,
    found: &KeyState,
) -> Option<RateLimitDecision> {
    if found.failed < config.failure_limit() {
        return None;
    }
    let wait = window.len - window.elapsed;
    Some(RateLimitDecision {
        allowed: false,
        remaining: 0,
        retry_after: wait.div_ceil(1000).max(1),
        failures: true,
        ..decision(config, window, found.current, found.previous)
    })
}

/// The key's budget as it stands, spending nothing: for answers to a valid
/// key that is refused before admission (403s).
pub fn standing(config: &RateLimitConfig, window: Window, found: &KeyState) -> RateLimitDecision {
    if !config.enabled {
        return RateLimitDecision::untouched(config, crate::clock::system_time());
    }
    decision(config, window, found.current, found.previous)
}

/// Gives back the slot of a request that did not succeed, and counts it
/// against the key's ceiling of failed requests.
pub async fn release(store: &Store, reservation: Reservation) -> Result<(), ApiError> {
    store
        .api_keys()
        .failed(&reservation.key, reservation.window)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis)
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn windows_are_aligned_to_the_epoch() {
        let w = Window::at(at(125, 500), MINUTE);
        assert_eq!(w.index, 2);
        assert_eq!(w.elapsed, 5500);
        assert_eq!(w.end(), 180);
        assert_eq!(w.reset(0), 180);
        assert_eq!(
            w.reset(3),
            240,
            "this window's requests weigh until the next one ends"
        );
    }

    #[test]
    fn previous_window_weighs_by_overlap() {
        // At the start of a window the whole previous window still counts.
        assert_eq!(Window::at(at(120, 0), MINUTE).estimate(1, 100), 101);
        // Halfway through, half of it does.
        assert_eq!(Window::at(at(150, 0), MINUTE).estimate(10, 100), 60);
        // Near the end, almost none.
        assert_eq!(Window::at(at(179, 900), MINUTE).estimate(10, 100), 10);
    }

    /// The first moment (ms after `now`) the estimate admits one more
    /// request, found by trying every millisecond.
    fn brute_force_wait(w: Window, limit: u32, current: u32, previous: u32) -> u64 {
        for wait in 0..3 * w.len {
            let t = w.elapsed + wait;
            let fits = if t < w.len {
                current + 1 + w.carried(previous, t) <= limit
            } else if t < 2 * w.len {
                w.carried(current, t - w.len) < limit
            } else {
                1 <= limit
            };
            if fits {
                return wait;
            }
        }
        unreachable!()
    }

    #[test]
    fn wait_is_the_first_moment_a_request_fits() {
        for (now, limit, current, previous) in [
            (at(120, 0), 100, 0, 100),
            (at(130, 0), 100, 40, 100),
            (at(150, 0), 100, 100, 0),
            (at(150, 0), 100, 100, 100),
            (at(179, 999), 100, 100, 37),
            (at(121, 0), 3, 3, 0),
            (at(121, 0), 3, 1, 3),
            (at(159, 0), 1, 1, 1),
        ] {
            let w = Window::at(now, MINUTE);
            assert_eq!(
                w.wait(limit, current, previous),
                brute_force_wait(w, limit, current, previous),
                "limit {limit}, current {current}, previous {previous}, {}ms in",
                w.elapsed
            );
        }
    }

    #[test]
    fn untouched_shows_full_budget() {
        let config = RateLimitConfig {
            enabled: true,
            limit: 100,
            window: MINUTE,
            lease: 1,
        };
        let d = RateLimitDecision::untouched(&config, at(61, 0));
        assert_eq!((d.limit, d.remaining, d.reset), (100, 100, 120));
        let mut headers = HeaderMap::new();
        d.write_headers(&mut headers);
        assert_eq!(headers["x-ratelimit-reset"], "120");
        let spent = RateLimitDecision { remaining: 0, ..d };
        assert_eq!(spent.released().remaining, 1);
        assert_eq!(d.released().remaining, 100);
    }
}
