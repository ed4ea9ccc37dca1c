//! A request's calls to AWS beyond DynamoDB (S3, SQS, Secrets Manager):
//! an interceptor on each of those clients counts every attempt, as AWS
//! bills it, by service and operation, into the sink the store's call
//! counter registers (`store::engine::calls`: the counter of the request being
//! served, when there is one); the request's log line says them
//! (`aws_calls`), and `make cost` prices them. This module sits below the
//! store (Secrets Manager's client uses it), so the store hands it the
//! sink rather than this module reaching up; and no second task-local
//! scope wraps every request (a debug build's stack has little room).

use std::sync::OnceLock;

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

/// Where each counted call goes, as `service:Operation`.
static SINK: OnceLock<fn(String)> = OnceLock::new();

/// Sends every counted call to `sink` (the store does, once).
pub fn count_into(sink: fn(String)) {
    let _ = SINK.set(sink);
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
        if let Some(sink) = SINK.get() {
            let call = cfg.load::<Metadata>().map_or_else(
                || "?".to_owned(),
                |m| format!("{}:{}", m.service(), m.name()),
            );
            sink(call);
        }
        Ok(())
    }
}
