//! A span for each outbound HTTP call (a webhook delivery, a geocoding
//! provider's, the issue tracker's), made only for the trace (`traces`,
//! at `TRACE` level): its method and host, never the rest of its URL
//! (a path or query may carry a key), and the status it got.

use tracing::Span;

/// The span of a `method` call to `url`.
pub fn outbound(method: &http::Method, url: &str) -> Span {
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    tracing::trace_span!(
        "http",
        otel.name = %format_args!("{method} {host}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        server.address = %host,
        http.response.status_code = tracing::field::Empty,
    )
}

/// What the call got: a status (5xx an error), or none at all (an error).
pub fn answered(span: &Span, status: Option<u16>) {
    match status {
        Some(status) => {
            span.record("http.response.status_code", status);
            if status >= 500 {
                span.record("otel.status_code", "ERROR");
            }
        }
        None => {
            span.record("otel.status_code", "ERROR");
        }
    }
}
