//! Metrics in CloudWatch's embedded metric format (EMF): each request,
//! each webhook attempt and each queue message writes one JSON line to
//! standard output, its log line and its metric line at once (`request`,
//! `delivery`), and
//! CloudWatch Logs turns them into metrics. No
//! `PutMetricData` call and no DynamoDB call: a line costs the
//! serialisation and the write (`make bench`).
//!
//! Dimensions stay bounded: the function (`Service`, from the routing
//! table), the route's template (`Route`), the status class, the
//! contract's error code, a failed attempt's cause. Who sent a request
//! (organization, key) rides in the same line as a plain property, for
//! Contributor Insights and log queries, never as a dimension.
//!
//! Every name a line may use is in `names` (the template's dashboard and
//! alarms may use them; `infra/checks/check_template.py` reads them).

pub mod delivery;
pub mod emf;
pub mod names;
pub mod output;
pub mod request;
pub mod services;
pub mod support;

pub use crate::config::MetricsConfig;
pub use emf::{Document, cold_start};
pub use names::{Dimension, Metric, Unit};
pub use output::redirect;

/// What writes a metric line: a served request, a webhook attempt.
pub trait Report {
    /// The line's document.
    fn document(&self) -> Document;

    /// Writes the line (nothing is built when metrics are off).
    fn emit(&self, config: &MetricsConfig) {
        if config.enabled {
            self.document().emit(config);
        }
    }

    /// Writes the line that is a log line as well: with its metrics when
    /// they are on, else as a plain log line when the log shows `INFO`.
    fn log(&self, config: &MetricsConfig) {
        if config.enabled {
            self.document().emit(config);
        } else if tracing::enabled!(tracing::Level::INFO) {
            output::write_log(self.document().plain_line());
        }
    }
}
