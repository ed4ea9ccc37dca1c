//! The one clock the service reads: the system's time, plus an offset that
//! tests move forward (a lease running out, a key reused after its
//! retention, an hour's quota freed) without waiting for it.
//!
//! Each request (and each dispatcher invocation) runs inside its state's
//! `Clock` (`Clock::scope`), so code deep in the store or the models reads
//! the time with `clock::now()` without carrying the state along. Outside
//! any scope (a unit test, a tool) `now()` is the system's time.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};

tokio::task_local! {
    static CLOCK: Clock;
}

/// The system's time, moved forward by what tests added (never in
/// production: nothing there calls `advance`).
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// Milliseconds added to the system's time (or to `frozen`).
    offset: Arc<AtomicI64>,
    /// A time that stands still instead of the system's (tests whose
    /// every boundary must fall where they put it: only `advance` moves
    /// it).
    frozen: Option<DateTime<Utc>>,
}

impl Clock {
    /// The time by this clock.
    #[allow(clippy::disallowed_methods)] // The system's time, read here only.
    pub fn now(&self) -> DateTime<Utc> {
        self.frozen.unwrap_or_else(Utc::now)
            + TimeDelta::milliseconds(self.offset.load(Ordering::SeqCst))
    }

    /// A clock that reads `at` until it is moved (tests only: time passes
    /// by `advance` alone, so a boundary is crossed exactly where the test
    /// puts it).
    pub fn frozen_at(at: DateTime<Utc>) -> Clock {
        Clock {
            offset: Arc::default(),
            frozen: Some(at),
        }
    }

    /// Moves this clock forward by `by` (tests: time passing at once).
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.offset.fetch_add(by, Ordering::SeqCst);
    }

    /// Runs `future` (a request, an invocation) by this clock.
    pub async fn scope<F: Future>(&self, future: F) -> F::Output {
        CLOCK.scope(self.clone(), future).await
    }

    /// The clock `future` runs by, kept for a task spawned from it.
    pub fn current() -> Option<Clock> {
        CLOCK.try_with(Clone::clone).ok()
    }
}

/// `future` by the clock of the code that makes it, for a task of its own
/// (a task-local does not cross `tokio::spawn`).
pub fn carried<F: Future>(future: F) -> impl Future<Output = F::Output> {
    let clock = Clock::current();
    async move {
        match clock {
            Some(clock) => clock.scope(future).await,
            None => future.await,
        }
    }
}

/// Now, by the clock of the request being served (the system's time
/// outside one).
#[allow(clippy::disallowed_methods)] // Outside a request: the system's time.
pub fn now() -> DateTime<Utc> {
    CLOCK.try_with(Clock::now).unwrap_or_else(|_| Utc::now())
}

/// Now in Unix milliseconds (0 before 1970).
pub fn unix_ms() -> u64 {
    u64::try_from(now().timestamp_millis()).unwrap_or(0)
}

/// `duration` in whole milliseconds (saturating), as times are kept.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Now as a `SystemTime`, by the same clock.
pub fn system_time() -> std::time::SystemTime {
    std::time::UNIX_EPOCH + Duration::from_millis(unix_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_scope_reads_its_clock_and_tests_move_it() {
        let clock = Clock::default();
        let before = now();
        clock.advance(Duration::from_secs(24 * 3600));
        let moved = clock.scope(async { now() }).await;
        assert!(moved - before >= TimeDelta::hours(24), "{before} {moved}");
        assert!(moved - before < TimeDelta::hours(24) + TimeDelta::minutes(1));
        // Outside the scope: the system's time.
        assert!(now() - before < TimeDelta::minutes(1));
        // A clone is the same clock.
        let other = clock.clone();
        other.advance(Duration::from_secs(60));
        assert!(clock.now() - before >= TimeDelta::hours(24) + TimeDelta::minutes(1));
    }

    #[tokio::test]
    async fn a_frozen_clock_moves_only_when_moved() {
        let at = DateTime::parse_from_rfc3339("2030-01-01T00:30:00Z")
            .unwrap()
            .to_utc();
        let clock = Clock::frozen_at(at);
        assert_eq!(clock.scope(async { now() }).await, at);
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(clock.now(), at);
        clock.clone().advance(Duration::from_secs(31));
        assert_eq!(clock.now(), at + TimeDelta::seconds(31));
    }
}
