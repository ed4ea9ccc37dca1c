//! Structured logs, following the platform's own switches first: Lambda
//! sets `AWS_LAMBDA_LOG_LEVEL` and `AWS_LAMBDA_LOG_FORMAT` from the
//! function's `LoggingConfig` (the template's `LogLevel` parameter, or the
//! console), so an operator changes the level there. Outside Lambda,
//! `RUST_LOG` filters (default `info`) and `LOG_FORMAT=text` gives
//! human-readable lines for local use.

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// What the logs are: a filter and a format.
#[derive(Debug, PartialEq, Eq)]
pub struct LogSettings {
    /// An `EnvFilter` directive.
    pub filter: String,
    pub json: bool,
}

impl LogSettings {
    /// The settings `var` (an environment) asks for.
    pub fn from(var: impl Fn(&str) -> Option<String>) -> Self {
        let lambda_level = var("AWS_LAMBDA_LOG_LEVEL").and_then(|level| {
            Some(match level.to_ascii_uppercase().as_str() {
                "TRACE" => "trace",
                "DEBUG" => "debug",
                "INFO" => "info",
                "WARN" => "warn",
                "ERROR" | "FATAL" => "error",
                _ => return None,
            })
        });
        let filter = match lambda_level {
            Some(level) => level.to_owned(),
            None => var("RUST_LOG")
                .filter(|f| !f.trim().is_empty())
                .unwrap_or_else(|| "info".into()),
        };
        let json = match var("AWS_LAMBDA_LOG_FORMAT") {
            Some(format) => !format.eq_ignore_ascii_case("text"),
            None => !var("LOG_FORMAT").is_some_and(|v| v.eq_ignore_ascii_case("text")),
        };
        LogSettings { filter, json }
    }
}

pub mod aws_spans;
pub mod http_spans;
pub mod traces;

/// The collector traces go to (`OTEL_EXPORTER_OTLP_ENDPOINT`), when one
/// is set, and the name they are sent under: the function's.
pub fn trace_settings(var: impl Fn(&str) -> Option<String>) -> Option<(String, String)> {
    let endpoint = var("OTEL_EXPORTER_OTLP_ENDPOINT").filter(|e| !e.trim().is_empty())?;
    let service = var("OTEL_SERVICE_NAME")
        .or_else(|| var("AWS_LAMBDA_FUNCTION_NAME"))
        .unwrap_or_else(|| "integration-api".into());
    Some((endpoint, service))
}

pub fn init() {
    let var = |name: &str| std::env::var(name).ok();
    let settings = LogSettings::from(var);
    let filter = EnvFilter::try_new(&settings.filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = if settings.json {
        // Lambda adds its own timestamps; keep the span fields in every line.
        tracing_subscriber::fmt::layer()
            .with_target(false)
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .without_time()
            .boxed()
    } else {
        tracing_subscriber::fmt::layer().with_target(false).boxed()
    };
    let mut failed = None;
    let traces = trace_settings(var).and_then(|(endpoint, service)| {
        match traces::Traces::new(&endpoint, &service) {
            Ok(traces) => traces::install(traces),
            Err(error) => {
                failed = Some(error);
                None
            }
        }
    });
    let _ = tracing_subscriber::registry()
        .with(logs.with_filter(filter))
        .with(traces.map(traces::Traces::layer))
        .try_init();
    if let Some(error) = failed {
        tracing::warn!(%error, "traces are off");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&str, &str)]) -> LogSettings {
        LogSettings::from(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn lambdas_controls_come_first() {
        let s = settings(&[
            ("AWS_LAMBDA_LOG_LEVEL", "DEBUG"),
            ("AWS_LAMBDA_LOG_FORMAT", "Text"),
            ("RUST_LOG", "warn"),
            ("LOG_FORMAT", "json"),
        ]);
        assert_eq!((s.filter.as_str(), s.json), ("debug", false));
        assert_eq!(
            settings(&[
                ("AWS_LAMBDA_LOG_LEVEL", "FATAL"),
                ("AWS_LAMBDA_LOG_FORMAT", "JSON")
            ]),
            LogSettings {
                filter: "error".into(),
                json: true
            }
        );
    }

    #[test]
    fn local_runs_use_rust_log_and_log_format() {
        let s = settings(&[("RUST_LOG", "shared=trace"), ("LOG_FORMAT", "text")]);
        assert_eq!((s.filter.as_str(), s.json), ("shared=trace", false));
        assert_eq!(
            settings(&[]),
            LogSettings {
                filter: "info".into(),
                json: true
            }
        );
        // An unknown Lambda level leaves the local settings in charge.
        let s = settings(&[("AWS_LAMBDA_LOG_LEVEL", "LOUD"), ("RUST_LOG", "warn")]);
        assert_eq!(s.filter, "warn");
    }
}
