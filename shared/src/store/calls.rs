//! Per-request accounting of DynamoDB round trips: an SDK interceptor tells
//! the counter of the request being served (a tokio task-local set by the
//! request middleware) when each attempt starts and ends. From that the
//! counter knows the calls made, the time during which at least one call
//! was in flight (`waited`, what the request spent waiting on DynamoDB),
//! and the sequential round trips: the number of separate stretches of that
//! time (calls made in parallel share one). Outside a request (CLI, setup)
//! nothing is counted.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

tokio::task_local! {
    static CALLS: CallCounter;
}

#[derive(Debug, Default)]
struct Flight {
    in_flight: u32,
    since: Option<Instant>,
    waited: Duration,
    round_trips: u32,
}

#[derive(Debug, Default)]
struct Calls {
    count: AtomicU32,
    flight: Mutex<Flight>,
}

/// Counter of one request's DynamoDB calls (retries included).
#[derive(Clone, Debug, Default)]
pub struct CallCounter(Arc<Calls>);

impl CallCounter {
    /// Calls made (attempts, retries included).
    pub fn get(&self) -> u32 {
        self.0.count.load(Ordering::Relaxed)
    }

    /// Sequential round trips: stretches of time with a call in flight.
    pub fn round_trips(&self) -> u32 {
        self.flight().round_trips
    }

    /// Time during which at least one call was in flight.
    pub fn waited(&self) -> Duration {
        let flight = self.flight();
        flight.waited + flight.since.map_or(Duration::ZERO, |s| s.elapsed())
    }

    /// Runs `future` with this counter as the current request's counter.
    pub async fn scope<F: Future>(&self, future: F) -> F::Output {
        CALLS.scope(self.clone(), future).await
    }

    fn flight(&self) -> std::sync::MutexGuard<'_, Flight> {
        self.0.flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `calls`, made concurrently by the code, as one stretch of time
    /// in flight: one round trip, however the runtime happens to order
    /// their first polls (in a debug build against a loopback engine the
    /// first can finish before the second starts, which measures the
    /// build, not the code). Their calls are counted as usual.
    pub async fn together<F: Future>(calls: F) -> F::Output {
        let counter = CALLS.try_with(Clone::clone).ok();
        if let Some(counter) = &counter {
            counter.begin_stretch();
        }
        let output = calls.await;
        if let Some(counter) = &counter {
            counter.end_stretch();
        }
        output
    }

    fn begin_stretch(&self) {
        let mut flight = self.flight();
        if flight.in_flight == 0 {
            flight.round_trips += 1;
            flight.since = Some(Instant::now());
        }
        flight.in_flight += 1;
    }

    fn end_stretch(&self) {
        self.ended();
    }

    fn started(&self) {
        self.0.count.fetch_add(1, Ordering::Relaxed);
        let mut flight = self.flight();
        if flight.in_flight == 0 {
            flight.round_trips += 1;
            flight.since = Some(Instant::now());
        }
        flight.in_flight += 1;
    }

    fn ended(&self) {
        let mut flight = self.flight();
        flight.in_flight = flight.in_flight.saturating_sub(1);
        if flight.in_flight == 0
            && let Some(since) = flight.since.take()
        {
            flight.waited += since.elapsed();
        }
    }
}

/// What a request cost in DynamoDB calls, put in response extensions so
/// in-process tests can read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynamoCalls {
    pub calls: u32,
    pub round_trips: u32,
}

#[derive(Debug)]
pub struct CountCalls;

impl Intercept for CountCalls {
    fn name(&self) -> &'static str {
        "CountCalls"
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let _ = CALLS.try_with(CallCounter::started);
        Ok(())
    }

    /// Called once for every attempt `read_before_attempt` saw.
    fn read_after_attempt(
        &self,
        _context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let _ = CALLS.try_with(CallCounter::ended);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_calls_share_a_round_trip() {
        let calls = CallCounter::default();
        calls.started();
        calls.ended();
        // Two at once, overlapping.
        calls.started();
        calls.started();
        calls.ended();
        calls.ended();
        calls.started();
        calls.ended();
        assert_eq!((calls.get(), calls.round_trips()), (4, 3));
        // Calls made together are one stretch, even one after the other.
        calls.begin_stretch();
        calls.started();
        calls.ended();
        calls.started();
        calls.ended();
        calls.end_stretch();
        assert_eq!((calls.get(), calls.round_trips()), (6, 4));
    }
}
