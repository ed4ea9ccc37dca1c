//! Traces: a request, each of its AWS calls and each outbound HTTP call
//! as OpenTelemetry spans under the X-Ray trace Lambda started, exported
//! as OTLP (JSON over HTTP) to the collector extension beside the
//! function, which forwards them to X-Ray (decisions/observability.md, "Traces").
//!
//! - Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` names the collector (the
//!   template sets it with the collector's layer).
//! - Only a trace X-Ray sampled is kept (its header's `Sampled=1`, at the
//!   rate of the account's sampling rules); nothing starts a trace of its
//!   own, so a request without a sampled X-Ray parent costs nothing here.
//! - The spans exported are those that declare `otel.kind`: the ones made
//!   for the trace (`request`, `aws`, `http`), never every `tracing` span.
//! - Ended spans wait in a buffer that `flush` sends before the answer
//!   leaves: Lambda freezes a container once it has answered, so nothing
//!   may be left to a background thread.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    Sampler, SdkTracerProvider, Span, SpanData, SpanExporter as _, SpanProcessor,
};
use tracing::Subscriber;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::registry::LookupSpan;

/// Longest a flush may hold an answer: a collector that does not answer
/// costs a sampled request this much, once.
pub const EXPORT_TIMEOUT: Duration = Duration::from_millis(500);

/// The exporter and the spans that ended since the last flush.
#[derive(Debug)]
pub struct Traces {
    exporter: SpanExporter,
    pending: Pending,
    provider: SdkTracerProvider,
    /// Held from a flush's take to its export's end: a flush that finds
    /// its spans taken by another (requests of one process share the
    /// buffer: `make run`, the tests, a dispatcher's batch) returns only
    /// once they are sent.
    exporting: tokio::sync::Mutex<()>,
}

/// The process's traces, when `init` found a collector.
static INSTALLED: OnceLock<Traces> = OnceLock::new();

/// Ended spans, until a flush takes them.
#[derive(Clone, Debug, Default)]
struct Pending(Arc<Mutex<Vec<SpanData>>>);

impl Pending {
    fn take(&self) -> Vec<SpanData> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl SpanProcessor for Pending {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

impl Traces {
    /// Traces sent to the collector at `endpoint` (its base URL, as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` gives it), named for `service`.
    pub fn new(endpoint: &str, service: &str) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| format!("trace exporter's HTTP client: {e}"))?;
        let mut exporter = SpanExporter::builder()
            .with_http()
            .with_http_client(Collector(client))
            .with_protocol(Protocol::HttpJson)
            .with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')))
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| format!("trace exporter: {e}"))?;
        let resource = Resource::builder_empty()
            .with_service_name(service.to_owned())
            .with_attributes([
                KeyValue::new("cloud.provider", "aws"),
                KeyValue::new("cloud.platform", "aws_lambda"),
            ])
            .build();
        exporter.set_resource(&resource);
        let pending = Pending::default();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(pending.clone())
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::AlwaysOff)))
            .with_id_generator(opentelemetry_aws::trace::XrayIdGenerator::default())
            .with_resource(resource)
            .build();
        Ok(Traces {
            exporter,
            pending,
            provider,
            exporting: tokio::sync::Mutex::new(()),
        })
    }

    /// The layer that turns the spans made for the trace (those with
    /// `otel.kind`) into OpenTelemetry spans.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("integration-api"))
            .with_location(false)
            .with_tracked_inactivity(false)
            .with_filter(filter_fn(|meta| {
                meta.is_span() && meta.fields().field("otel.kind").is_some()
            }))
    }

    /// Sends the spans that ended; an exporter that fails is logged, never
    /// the request's failure.
    pub async fn flush(&self) {
        let _exporting = self.exporting.lock().await;
        let batch = self.pending.take();
        if batch.is_empty() {
            return;
        }
        let spans = batch.len();
        // The exporter's own timeout is its HTTP client's to keep: bound
        // it here too.
        match tokio::time::timeout(EXPORT_TIMEOUT, self.exporter.export(batch)).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, spans, "trace spans not exported"),
            Err(_) => tracing::warn!(
                spans,
                "trace spans not exported: the collector did not answer in time"
            ),
        }
    }
}

/// Keeps `traces` as the process's (the first one kept stays).
pub fn install(traces: Traces) -> Option<&'static Traces> {
    let _ = INSTALLED.set(traces);
    INSTALLED.get()
}

/// Sends the process's ended spans, when it has traces.
pub async fn flush() {
    if let Some(traces) = INSTALLED.get() {
        traces.flush().await;
    }
}

/// Puts `span` under the X-Ray trace `header` names
/// (`Root=1-…;Parent=…;Sampled=1`, from Lambda's context or API Gateway's
/// `x-amzn-trace-id`). A header that does not parse leaves it a root,
/// which is not sampled.
pub fn adopt(span: &tracing::Span, header: &str) {
    if let Some(parent) = opentelemetry_aws::trace::xray_propagator::span_context_from_str(header) {
        let _ = span.set_parent(Context::new().with_remote_span_context(parent));
    }
}

/// The `Root` of an X-Ray trace header (`Root=1-5759e988-bd862e3fe1be46a994272793;Parent=...;Sampled=1`).
pub fn root(header: &str) -> Option<String> {
    let root = header
        .split(';')
        .find_map(|part| part.trim().strip_prefix("Root="))?;
    let well_formed = root.len() == 35
        && root.starts_with("1-")
        && root.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    well_formed.then(|| root.to_owned())
}

/// The collector's HTTP client: reqwest as the rest of the crate has it
/// (the exporter's own would bring a second version).
#[derive(Debug)]
struct Collector(reqwest::Client);

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Collector {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let response = self.0.execute(request).await?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await?;
        let mut answer = http::Response::new(body);
        *answer.status_mut() = status;
        *answer.headers_mut() = headers;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::root;

    #[test]
    fn a_trace_header_gives_its_root_and_nothing_else_is_taken() {
        assert_eq!(
            root("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
                .as_deref(),
            Some("1-5759e988-bd862e3fe1be46a994272793")
        );
        assert_eq!(
            root(
                "Self=1-67891234-12456789abcdef012345678;Root=1-5759e988-bd862e3fe1be46a994272793"
            )
            .as_deref(),
            Some("1-5759e988-bd862e3fe1be46a994272793")
        );
        assert_eq!(root("Root=1-5759e988-bd862e3f\"x"), None);
        assert_eq!(root("Parent=53995c3f42cd8ad8"), None);
    }

    mod pending {
        use std::time::{Duration, Instant};

        use tracing_subscriber::layer::SubscriberExt;

        use super::super::{EXPORT_TIMEOUT, Traces, adopt};

        const SAMPLED: &str =
            "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";

        /// Spans made under `header` on this thread, with `traces`' layer.
        fn spans(traces: &Traces, header: &str) {
            let subscriber = tracing_subscriber::registry().with(traces.layer());
            let _guard = tracing::subscriber::set_default(subscriber);
            let request = tracing::info_span!("request", otel.kind = "server");
            adopt(&request, header);
            let _in = request.enter();
            let _call = crate::telemetry::aws_spans::call_span("DynamoDB", "GetItem");
            // Not made for the trace: no `otel.kind`.
            let _other = tracing::info_span!("other");
        }

        fn pending(traces: &Traces) -> Vec<String> {
            let spans = traces.pending.0.lock().unwrap();
            spans.iter().map(|s| s.name.to_string()).collect()
        }

        #[test]
        fn only_the_spans_made_for_a_sampled_trace_wait_for_the_flush() {
            let traces = Traces::new("http://127.0.0.1:9", "test").unwrap();
            spans(&traces, &SAMPLED.replace("Sampled=1", "Sampled=0"));
            spans(&traces, "Root=1-nonsense");
            assert_eq!(pending(&traces), Vec::<String>::new());
            spans(&traces, SAMPLED);
            assert_eq!(pending(&traces), ["DynamoDB.GetItem", "request"]);
        }

        #[tokio::test]
        async fn a_collector_that_does_not_answer_holds_the_flush_no_longer_than_its_timeout() {
            // It takes the connection and never answers.
            let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", silent.local_addr().unwrap());
            let traces = Traces::new(&base, "test").unwrap();
            spans(&traces, SAMPLED);
            let started = Instant::now();
            traces.flush().await;
            assert!(started.elapsed() < EXPORT_TIMEOUT + Duration::from_secs(2));
            assert_eq!(pending(&traces), Vec::<String>::new(), "given up, not kept");
        }

        #[tokio::test]
        async fn a_flush_returns_only_once_the_spans_another_flush_took_are_sent() {
            let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", silent.local_addr().unwrap());
            let traces = std::sync::Arc::new(Traces::new(&base, "test").unwrap());
            spans(&traces, SAMPLED);
            let first = crate::gate::spawn({
                let traces = traces.clone();
                async move { traces.flush().await }
            });
            // The first flush took the spans and is sending them.
            let _held = silent.accept().await.unwrap();
            assert_eq!(pending(&traces), Vec::<String>::new());
            // Nothing is left for the second, but its request's spans may be
            // among those in flight: it waits for them.
            traces.flush().await;
            assert!(first.is_finished(), "returned while spans were in flight");
        }
    }
}
