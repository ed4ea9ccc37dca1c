//! One EMF document: the metadata (`_aws`: timestamp, and per directive
//! the namespace, the dimension sets and the metrics with their units),
//! then the members it names (dimension values, metric values) and plain
//! properties, as one JSON line. The rules it keeps (CloudWatch's
//! "Specification: Embedded metric format"): every dimension and metric
//! a directive names is a member (dimension values strings, metric values
//! numbers), at most 30 dimensions a set and 100 metrics a directive; a
//! member is set once.

use serde::Serialize;
use serde::ser::SerializeSeq;
use serde_json::Value;

use crate::config::MetricsConfig;
use crate::metrics::names::{Dimension, Metric};
use crate::metrics::output;

/// An EMF document being filled.
#[derive(Debug)]
pub struct Document {
    timestamp_ms: u64,
    directives: Vec<Directive>,
    /// The root's members in the order set (a name set again replaces
    /// its value): a line has a couple of dozen, fewer than a map needs.
    members: Vec<(&'static str, Value)>,
}

/// Metrics recorded under dimension sets.
#[derive(Debug)]
struct Directive {
    dimension_sets: &'static [&'static [Dimension]],
    metrics: Vec<Metric>,
}

impl Document {
    /// An empty document, stamped now (by the request's clock).
    pub fn new() -> Self {
        Document {
            timestamp_ms: crate::clock::unix_ms(),
            directives: Vec::new(),
            members: Vec::with_capacity(24),
        }
    }

    fn set(&mut self, name: &'static str, value: Value) {
        match self.members.iter_mut().find(|(n, _)| *n == name) {
            Some((_, old)) => *old = value,
            None => self.members.push((name, value)),
        }
    }

    /// Sets dimension `dimension` to `value` (for the directives that
    /// name it).
    pub fn dimension(&mut self, dimension: Dimension, value: &str) -> &mut Self {
        self.set(dimension.name(), Value::from(value));
        self
    }

    /// A property that is no metric and no dimension (searchable in the
    /// logs: a request id, an organization).
    pub fn property(&mut self, name: &'static str, value: impl Into<Value>) -> &mut Self {
        self.set(name, value.into());
        self
    }

    /// Records `metrics` (each with its value) under each of
    /// `dimension_sets`. A metric is recorded in one directive only.
    pub fn record(
        &mut self,
        dimension_sets: &'static [&'static [Dimension]],
        metrics: &[(Metric, f64)],
    ) -> &mut Self {
        for (metric, value) in metrics {
            self.set(metric.name(), number(*value));
        }
        self.directives.push(Directive {
            dimension_sets,
            metrics: metrics.iter().map(|(metric, _)| *metric).collect(),
        });
        self
    }

    /// The document as one line, in `namespace`.
    pub fn line(&self, namespace: &str) -> String {
        let line = Line {
            aws: Aws {
                timestamp: self.timestamp_ms,
                directives: self
                    .directives
                    .iter()
                    .map(|directive| Directed {
                        namespace,
                        dimensions: Names(directive.dimension_sets),
                        metrics: directive
                            .metrics
                            .iter()
                            .map(|metric| Definition {
                                name: metric.name(),
                                unit: metric.unit().name(),
                            })
                            .collect(),
                    })
                    .collect(),
            },
            members: &self.members,
        };
        serde_json::to_string(&line).unwrap_or_default()
    }

    /// The document's members alone, as one line: a log line without
    /// metrics.
    pub fn plain_line(&self) -> String {
        serde_json::to_string(&Members(&self.members)).unwrap_or_default()
    }

    /// Writes the document (when metrics are on). The process's first
    /// line says it is a cold start, by the function it names.
    pub fn emit(mut self, config: &MetricsConfig) {
        if !config.enabled || self.directives.is_empty() {
            return;
        }
        let named = self
            .members
            .iter()
            .any(|(n, _)| *n == Dimension::Service.name());
        if named && cold_start() {
            self.record(&[&[Dimension::Service]], &[(Metric::ColdStart, 1.0)]);
        }
        output::write(self.line(&config.namespace));
    }
}

impl Default for Document {
    fn default() -> Self {
        Self::new()
    }
}

/// The document: `_aws`, then its members.
struct Line<'a> {
    aws: Aws<'a>,
    members: &'a [(&'static str, Value)],
}

impl Serialize for Line<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.members.len() + 1))?;
        map.serialize_entry("_aws", &self.aws)?;
        for (name, value) in self.members {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// A document's members without its `_aws`.
struct Members<'a>(&'a [(&'static str, Value)]);

impl Serialize for Members<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(name, value)| (name, value)))
    }
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Aws<'a> {
    timestamp: u64,
    #[serde(rename = "CloudWatchMetrics")]
    directives: Vec<Directed<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Directed<'a> {
    namespace: &'a str,
    dimensions: Names,
    metrics: Vec<Definition>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Definition {
    name: &'static str,
    unit: &'static str,
}

/// Dimension sets, as arrays of their keys' names.
struct Names(&'static [&'static [Dimension]]);

impl Serialize for Names {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut sets = serializer.serialize_seq(Some(self.0.len()))?;
        for set in self.0 {
            sets.serialize_element(&Keys(set))?;
        }
        sets.end()
    }
}

/// One dimension set's keys.
struct Keys(&'static [Dimension]);

impl Serialize for Keys {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|d| d.name()))
    }
}

/// A metric value: a whole number as an integer, else a float (JSON has
/// no NaN or infinity: those are 0).
fn number(value: f64) -> Value {
    if !value.is_finite() {
        return Value::from(0);
    }
    #[allow(clippy::cast_possible_truncation)] // Checked whole and in range.
    if value.fract() == 0.0 && value.abs() < 9e15 {
        return Value::from(value as i64);
    }
    Value::from(value)
}

/// True the first time it is asked in this process (a Lambda
/// environment's first invocation: its cold start), false after.
pub fn cold_start() -> bool {
    use std::sync::atomic::{AtomicBool, Ordering};
    static STARTED: AtomicBool = AtomicBool::new(false);
    !STARTED.swap(true, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_names_its_members_under_its_namespace() {
        let mut doc = Document::new();
        doc.dimension(Dimension::Service, "sites")
            .property("request_id", "r-1")
            .record(
                &[&[Dimension::Service]],
                &[(Metric::Requests, 1.0), (Metric::Latency, 2.5)],
            );
        let line: Value = serde_json::from_str(&doc.line("Api/test")).unwrap();
        assert_eq!(line["Service"], "sites");
        assert_eq!(line["request_id"], "r-1");
        assert_eq!(line["Requests"], 1);
        assert_eq!(line["Latency"], 2.5);
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "Api/test");
        assert_eq!(directive["Dimensions"], serde_json::json!([["Service"]]));
        assert_eq!(
            directive["Metrics"],
            serde_json::json!([
                {"Name": "Requests", "Unit": "Count"},
                {"Name": "Latency", "Unit": "Milliseconds"}
            ])
        );
        assert!(line["_aws"]["Timestamp"].as_u64().unwrap() > 1_600_000_000_000);
    }

    #[test]
    fn a_plain_line_is_the_members_without_metadata() {
        let mut doc = Document::new();
        doc.property("message", "request served")
            .dimension(Dimension::Service, "sites")
            .record(&[&[Dimension::Service]], &[(Metric::Latency, 2.5)]);
        let plain: Value = serde_json::from_str(&doc.plain_line()).unwrap();
        assert_eq!(
            plain,
            serde_json::json!({"message": "request served", "Service": "sites", "Latency": 2.5})
        );
        assert!(doc.line("Api/test").contains("\"_aws\""));
    }

    #[test]
    fn values_that_json_cannot_hold_are_zero() {
        assert_eq!(number(f64::NAN), Value::from(0));
        assert_eq!(number(f64::INFINITY), Value::from(0));
        assert_eq!(number(3.0), Value::from(3));
        assert_eq!(number(0.25), Value::from(0.25));
    }
}
