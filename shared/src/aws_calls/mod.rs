//! A request's calls to AWS beyond DynamoDB (S3, SQS, Secrets Manager):
//! an interceptor on each of those clients counts every attempt, as AWS
//! bills it, by service and operation, into the sink the store's call
//! counter registers (`store::engine::calls`: the counter of the request being
//! served, when there is one); the request's log line says them
//! (`aws_calls`), and `make cost` prices them. This module sits below the
//! store (Secrets Manager's client uses it), so the store hands it the
//! sink rather than this module reaching up; and no second task-local
//! scope wraps every request (a debug build's stack has little room).
//! The same interceptor records what IAM must allow each call
//! (`record`, for the role check), under the caller the store names
//! (`caller_from`).

pub mod needed;
pub mod record;

use std::sync::OnceLock;

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use needed::Sent;

/// Where each counted call goes, as `service:Operation`.
static SINK: OnceLock<fn(String)> = OnceLock::new();

/// Sends every counted call to `sink` (the store does, once).
pub fn count_into(sink: fn(String)) {
    let _ = SINK.set(sink);
}

/// Who is calling: a request's route, a job's name (the store's call
/// counter knows), for the record.
static CALLER: OnceLock<fn() -> Option<String>> = OnceLock::new();

/// Takes the record's caller from `caller` (the store gives it, once).
pub fn caller_from(caller: fn() -> Option<String>) {
    let _ = CALLER.set(caller);
}

/// The caller the store names, if any.
pub fn caller() -> Option<String> {
    CALLER.get().and_then(|caller| caller())
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
        let (service, operation) = cfg
            .load::<Metadata>()
            .map_or(("?", "?"), |m| (m.service(), m.name()));
        if let Some(sink) = SINK.get() {
            sink(format!("{service}:{operation}"));
        }
        Ok(())
    }

    /// The request as it goes, its endpoint resolved (an S3 request's
    /// bucket is in its URI from here on), for the record.
    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let (service, operation) = cfg
            .load::<Metadata>()
            .map_or(("?", "?"), |m| (m.service(), m.name()));
        if record::enabled() {
            let request = context.request();
            let sent = Sent {
                service,
                operation,
                uri: request.uri(),
                copy_source: request.headers().get("x-amz-copy-source"),
                body: request.body().bytes().unwrap_or_default(),
            };
            let needed = needed::needed(&sent);
            record::record(caller().as_deref(), service, operation, &needed);
        }
        Ok(())
    }
}
