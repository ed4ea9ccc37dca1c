//! A request's calls to AWS beyond DynamoDB (S3, SQS, Secrets Manager):
//! an interceptor on each of those clients counts every attempt, as AWS
//! bills it, by service and operation, in the counter of the request
//! being served (a task-local, scoped with the request's DynamoDB counter
//! by `store::calls::CallCounter::scope`); the request's log line says
//! them (`aws_calls`), and `make cost` prices them. Outside a request
//! (CLI, setup) nothing is counted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

tokio::task_local! {
    static AWS_CALLS: AwsCallCounter;
}

/// Attempts of calls to AWS beyond DynamoDB, by `service:Operation`.
#[derive(Clone, Debug, Default)]
pub struct AwsCallCounter(Arc<Mutex<BTreeMap<String, u32>>>);

impl AwsCallCounter {
    /// Runs `future` with this counter as the current request's.
    pub async fn scope<F: Future>(&self, future: F) -> F::Output {
        AWS_CALLS.scope(self.clone(), future).await
    }

    /// The attempts counted so far.
    pub fn counted(&self) -> BTreeMap<String, u32> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The same, as a log line's field (`S3:CopyObject=1 SQS:SendMessage=1`);
    /// None when there were none.
    pub fn text(&self) -> Option<String> {
        let calls = self.counted();
        (!calls.is_empty()).then(|| {
            calls
                .iter()
                .map(|(call, n)| format!("{call}={n}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
    }

    fn count(&self, call: String) {
        let mut calls = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *calls.entry(call).or_default() += 1;
    }
}

/// Counts each attempt of a call, as `service:Operation`.
#[derive(Debug)]
pub struct CountAwsCalls;

impl Intercept for CountAwsCalls {
    fn name(&self) -> &'static str {
        "CountAwsCalls"
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let _ = AWS_CALLS.try_with(|counter| {
            let call = cfg.load::<Metadata>().map_or_else(
                || "?".to_owned(),
                |m| format!("{}:{}", m.service(), m.name()),
            );
            counter.count(call);
        });
        Ok(())
    }
}
