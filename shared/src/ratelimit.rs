//! Per-key sliding-window rate limit (the sliding-window-counter method):
//! the estimate is this fixed window's count plus the previous window's
//! count weighted by how much of it still overlaps the last 60 seconds.
//!
//! The store refuses to count past the limit in one conditional write, so N
//! parallel requests never admit more than the limit; a request refused by
//! the weighted estimate is taken back, so a 429 never consumes budget.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderValue};
use uuid::Uuid;

use crate::config::RateLimitConfig;
use crate::error::ApiResult;
use crate::store::Store;
use crate::store::rate_limits::Counted;

/// What the `X-RateLimit-*` headers say about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimitDecision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Unix seconds when the current window ends.
    pub reset: u64,
}

impl RateLimitDecision {
    /// Headers for a response that used no budget (no accepted key, or the
    /// limit is switched off): the full budget and the window's end.
    pub fn untouched(config: &RateLimitConfig, now: SystemTime) -> Self {
        let window = Window::at(now, config.window);
        Self {
            allowed: true,
            limit: config.limit,
            remaining: config.limit,
            reset: window.end(),
        }
    }

    /// Seconds until the window resets (at least 1), for `Retry-After`.
    pub fn retry_after(&self, now: SystemTime) -> u64 {
        self.reset.saturating_sub(unix(now)).max(1)
    }

    pub fn write_headers(&self, headers: &mut HeaderMap) {
        headers.insert("x-ratelimit-limit", HeaderValue::from(self.limit));
        headers.insert("x-ratelimit-remaining", HeaderValue::from(self.remaining));
        headers.insert("x-ratelimit-reset", HeaderValue::from(self.reset));
    }
}

#[derive(Clone, Copy, Debug)]
struct Window {
    index: u64,
    len: Duration,
    /// Time into the window.
    elapsed: Duration,
}

impl Window {
    fn at(now: SystemTime, len: Duration) -> Self {
        let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        let len_ms = len.as_millis().max(1);
        let index = (since_epoch.as_millis() / len_ms) as u64;
        let elapsed = Duration::from_millis((since_epoch.as_millis() % len_ms) as u64);
        Self {
            index,
            len,
            elapsed,
        }
    }

    fn end(&self) -> u64 {
        (self.index + 1) * self.len.as_secs().max(1)
    }

    /// This window's count plus the overlapping share of the previous one.
    fn estimate(&self, current: u32, previous: u32) -> u32 {
        let len = self.len.as_millis().max(1);
        let overlap = len.saturating_sub(self.elapsed.as_millis());
        current + (u128::from(previous) * overlap / len) as u32
    }
}

fn unix(now: SystemTime) -> u64 {
    now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs()
}

/// Counts one request of `key_id` and decides whether it is admitted.
pub async fn check(
    store: &Store,
    config: &RateLimitConfig,
    key_id: Uuid,
    now: SystemTime,
) -> ApiResult<RateLimitDecision> {
    if !config.enabled {
        return Ok(RateLimitDecision::untouched(config, now));
    }
    let window = Window::at(now, config.window);
    // Counters live two windows, then TTL may remove them.
    let expires_at = window.end() + 2 * config.window.as_secs();
    let limit = config.limit;
    let refused = RateLimitDecision {
        allowed: false,
        limit,
        remaining: 0,
        reset: window.end(),
    };
    match store
        .rate_limits()
        .count(key_id, window.index, limit, expires_at)
        .await?
    {
        Counted::Full { .. } => Ok(refused),
        Counted::Admitted { current, previous } => {
            let estimate = window.estimate(current, previous);
            if estimate > limit {
                store.rate_limits().uncount(key_id, window.index).await?;
                return Ok(refused);
            }
            Ok(RateLimitDecision {
                allowed: true,
                limit,
                remaining: limit - estimate,
                reset: window.end(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, millis: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis)
    }

    #[test]
    fn windows_are_aligned_to_the_epoch() {
        let w = Window::at(at(125, 500), Duration::from_secs(60));
        assert_eq!(w.index, 2);
        assert_eq!(w.elapsed, Duration::from_millis(5500));
        assert_eq!(w.end(), 180);
    }

    #[test]
    fn previous_window_weighs_by_overlap() {
        let len = Duration::from_secs(60);
        // At the start of a window the whole previous window still counts.
        assert_eq!(Window::at(at(120, 0), len).estimate(1, 100), 101);
        // Halfway through, half of it does.
        assert_eq!(Window::at(at(150, 0), len).estimate(10, 100), 60);
        // Near the end, almost none.
        assert_eq!(Window::at(at(179, 900), len).estimate(10, 100), 10);
    }

    #[test]
    fn untouched_shows_full_budget() {
        let config = RateLimitConfig {
            enabled: true,
            limit: 100,
            window: Duration::from_secs(60),
        };
        let d = RateLimitDecision::untouched(&config, at(61, 0));
        assert_eq!((d.limit, d.remaining, d.reset), (100, 100, 120));
        assert_eq!(d.retry_after(at(61, 0)), 59);
        assert_eq!(d.retry_after(at(200, 0)), 1);
        let mut headers = HeaderMap::new();
        d.write_headers(&mut headers);
        assert_eq!(headers["x-ratelimit-reset"], "120");
    }
}
