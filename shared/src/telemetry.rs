//! Structured JSON logs. `RUST_LOG` filters (default `info`); `LOG_FORMAT=text`
//! gives human-readable lines for local use.

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let text = std::env::var("LOG_FORMAT").is_ok_and(|v| v.eq_ignore_ascii_case("text"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    let _ = if text {
        builder.try_init()
    } else {
        // Lambda adds its own timestamps; keep the span fields in every line.
        builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .without_time()
            .try_init()
    };
}
