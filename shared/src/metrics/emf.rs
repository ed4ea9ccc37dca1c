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
use serde_json::{Map, Value};

use super::{Dimension, Metric, MetricsConfig, output};

/// An EMF document being filled.
#[derive(Debug)]
pub struct Document {
    timestamp_ms: u64,
    directives: Vec<Directive>,
    members: Map<String, Value>,
}

/// Metrics recorded under dimension sets.
#[derive(Debug)]
struct Directive {
    dimension_sets: Vec<Vec<Dimension>>,
    metrics: Vec<Metric>,
}

impl Document {
    /// An empty document, stamped now (by the request's clock).
    pub fn new() -> Self {
        Document {
            timestamp_ms: crate::clock::unix_ms(),
            directives: Vec::new(),
            members: Map::new(),
        }
    }

    /// Sets dimension `dimension` to `value` (for the directives that
    /// name it).
    pub fn dimension(&mut self, dimension: Dimension, value: &str) -> &mut Self {
        self.members
            .insert(dimension.name().to_owned(), Value::from(value));
        self
    }

    /// A property that is no metric and no dimension (searchable in the
    /// logs: a request id, an organization).
    pub fn property(&mut self, name: &str, value: impl Into<Value>) -> &mut Self {
        self.members.insert(name.to_owned(), value.into());
        self
    }

    /// Records `metrics` (each with its value) under each of
    /// `dimension_sets`. A metric is recorded in one directive only.
    pub fn record(
        &mut self,
        dimension_sets: &[&[Dimension]],
        metrics: &[(Metric, f64)],
    ) -> &mut Self {
        for (metric, value) in metrics {
            self.members
                .insert(metric.name().to_owned(), number(*value));
        }
        self.directives.push(Directive {
            dimension_sets: dimension_sets.iter().map(|set| set.to_vec()).collect(),
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
                        dimensions: Names(&directive.dimension_sets),
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

    /// Writes the document (when metrics are on).
    pub fn emit(&self, config: &MetricsConfig) {
        if config.enabled && !self.directives.is_empty() {
            output::write(self.line(&config.namespace));
        }
    }
}

impl Default for Document {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Serialize)]
struct Line<'a> {
    #[serde(rename = "_aws")]
    aws: Aws<'a>,
    #[serde(flatten)]
    members: &'a Map<String, Value>,
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
    dimensions: Names<'a>,
    metrics: Vec<Definition>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Definition {
    name: &'static str,
    unit: &'static str,
}

/// Dimension sets, as arrays of their keys' names.
struct Names<'a>(&'a [Vec<Dimension>]);

impl Serialize for Names<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut sets = serializer.serialize_seq(Some(self.0.len()))?;
        for set in self.0 {
            let names: Vec<&str> = set.iter().map(|d| d.name()).collect();
            sets.serialize_element(&names)?;
        }
        sets.end()
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
    fn values_that_json_cannot_hold_are_zero() {
        assert_eq!(number(f64::NAN), Value::from(0));
        assert_eq!(number(f64::INFINITY), Value::from(0));
        assert_eq!(number(3.0), Value::from(3));
        assert_eq!(number(0.25), Value::from(0.25));
    }
}
