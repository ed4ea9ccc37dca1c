//! A span for each call to AWS (DynamoDB, S3, SQS, Secrets Manager),
//! under the span of the request that made it: an interceptor on every
//! client opens it when the operation starts and closes it when the
//! operation ends, retries included, with the attributes X-Ray reads to
//! draw the call as a node of its own (`rpc.system` `aws-api`, the
//! service, the operation) and an error status when the call failed.
//! The span is made only for the trace (`traces`): at `TRACE` level, so
//! that no log line carries it and, with traces off, nothing is made.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};

/// Opens and closes a span around each call.
#[derive(Debug)]
pub struct SpanAwsCalls;

/// The span of the call a config bag is for.
#[derive(Clone, Debug)]
struct CallSpan(tracing::Span);

impl Storable for CallSpan {
    type Storer = StoreReplace<Self>;
}

/// The span of one call to `service`'s `operation`.
pub fn call_span(service: &str, operation: &str) -> tracing::Span {
    let service: String = service.chars().filter(|c| !c.is_whitespace()).collect();
    tracing::trace_span!(
        "aws",
        otel.name = %format_args!("{service}.{operation}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        rpc.system = "aws-api",
        rpc.service = %service,
        rpc.method = operation,
    )
}

impl Intercept for SpanAwsCalls {
    fn name(&self) -> &'static str {
        "SpanAwsCalls"
    }

    // Not `read_before_execution`: a client's interceptors run that before
    // the operation's own configuration (its name) is in the bag.
    fn read_before_serialization(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let span = cfg
            .load::<Metadata>()
            .map_or_else(|| call_span("?", "?"), |m| call_span(m.service(), m.name()));
        if !span.is_disabled() {
            cfg.interceptor_state().store_put(CallSpan(span));
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(span) = cfg.load::<CallSpan>().map(|c| c.0.clone()) {
            if matches!(context.output_or_error(), Some(Err(_)) | None) {
                span.record("otel.status_code", "ERROR");
            }
            // The bag's copy goes: the span closes now, not when the bag does.
            cfg.interceptor_state()
                .store_put(CallSpan(tracing::Span::none()));
        }
        Ok(())
    }
}
