//! Per-request accounting of DynamoDB round trips: an SDK interceptor adds one
//! to the counter of the request being served (a tokio task-local set by the
//! request middleware). Outside a request (CLI, setup) nothing is counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

tokio::task_local! {
    static CALLS: Arc<AtomicU32>;
}

/// Counter of one request's DynamoDB round trips (retries included).
#[derive(Clone, Debug, Default)]
pub struct CallCounter(Arc<AtomicU32>);

impl CallCounter {
    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    /// Runs `future` with this counter as the current request's counter.
    pub async fn scope<F: Future>(&self, future: F) -> F::Output {
        CALLS.scope(self.0.clone(), future).await
    }
}

/// Number of DynamoDB calls a request made; put in response extensions so
/// in-process tests can read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DynamoCalls(pub u32);

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
        let _ = CALLS.try_with(|calls| calls.fetch_add(1, Ordering::Relaxed));
        Ok(())
    }
}
