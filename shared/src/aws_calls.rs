//! A request's calls to AWS beyond DynamoDB (S3, SQS, Secrets Manager):
//! an interceptor on each of those clients counts every attempt, as AWS
//! bills it, by service and operation, in the counter of the request
//! being served (`store::calls`); the request's log line says them
//! (`aws_calls`), and `make cost` prices them. Outside a request (CLI,
//! setup) nothing is counted.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

use crate::store::calls::CallCounter;

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
        if let Some(counter) = CallCounter::current() {
            let call = cfg.load::<Metadata>().map_or_else(
                || "?".to_owned(),
                |m| format!("{}:{}", m.service(), m.name()),
            );
            counter.count_aws_call(call);
        }
        Ok(())
    }
}
