//! What a served request reports (`http::middleware` fills it in): one
//! line, `"message":"request served"`, that is both the request's log line
//! and its metric line (the metrics its `_aws` names, when metrics are on).

use super::{Dimension, Document, Metric, Report, services};
use crate::error::codes::IDEMPOTENCY_KEY_IN_FLIGHT;

/// A served request, as its metric line sees it.
#[derive(Debug)]
pub struct Served<'a> {
    pub method: &'a str,
    /// The route's template (`/api/v1/sites/{siteId}`), None when no
    /// route matched.
    pub route: Option<&'a str>,
    pub status: u16,
    /// The contract's error code of an error answer.
    pub code: Option<&'a str>,
    pub latency_ms: f64,
    pub read_units: f64,
    pub write_units: f64,
    pub round_trips: u32,
    /// Time spent waiting on DynamoDB (`Latency - ddb_ms`: the service's own).
    pub ddb_ms: f64,
    pub ddb_calls: u32,
    /// Its read began beside its admission (`http::lifecycle`).
    pub warm: bool,
    /// Calls to S3, SQS and Secrets Manager, `service:Operation=count ...`.
    pub aws_calls: Option<String>,
    /// The rate-limit window the request was counted in.
    pub rate_window: Option<u64>,
    /// An `Idempotency-Key` replay.
    pub replayed: bool,
    pub request_id: &'a str,
    /// The X-Ray trace's root, and the Lambda invocation's request id.
    pub trace_id: Option<&'a str>,
    pub invocation_id: Option<&'a str>,
    /// Who: properties of the line, never dimensions.
    pub org_id: Option<String>,
    pub key_id: Option<String>,
}

/// The routes' dimension sets of the per-request metrics.
const BY_ROUTE: &[&[Dimension]] = &[
    &[Dimension::Service],
    &[Dimension::Service, Dimension::Route],
];

impl Report for Served<'_> {
    /// The request's metric line.
    fn document(&self) -> Document {
        use Dimension::{Code, Route, Service, StatusClass};
        let function = self
            .route
            .and_then(services::function_of)
            .unwrap_or("(none)");
        let route = format!("{} {}", self.method, self.route.unwrap_or("(none)"));
        let class = match self.status {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        let mut doc = Document::new();
        doc.property("message", "request served")
            .dimension(Service, function)
            .dimension(Route, &route)
            .dimension(StatusClass, class)
            .property("request_id", self.request_id)
            .property("status", self.status)
            .property("ddb_ms", round_us(self.ddb_ms))
            .property("ddb_calls", self.ddb_calls)
            .property("warm", self.warm);
        if let Some(calls) = &self.aws_calls {
            doc.property("aws_calls", calls.as_str());
        }
        if let Some(trace) = self.trace_id {
            doc.property("trace_id", trace);
        }
        if let Some(invocation) = self.invocation_id {
            doc.property("invocation_id", invocation);
        }
        if let Some(org) = &self.org_id {
            doc.property("org_id", org.as_str());
        }
        if let Some(key) = &self.key_id {
            doc.property("key_id", key.as_str());
        }
        if let Some(window) = self.rate_window {
            doc.property("rate_window", window);
        }
        doc.record(
            &[
                &[Service],
                &[Service, Route],
                &[Service, StatusClass],
                &[Service, Route, StatusClass],
            ],
            &[(Metric::Requests, 1.0)],
        );
        // The latency objective is the answers that did their work (2xx,
        // 3xx, 5xx): a client's mistake or a refusal answers fast, and a
        // flood of 429s would hide the slow share. Its time stays on its
        // line, as a property.
        let latency = round_us(self.latency_ms);
        let mut by_route = vec![
            (Metric::ReadUnits, self.read_units),
            (Metric::WriteUnits, self.write_units),
            (Metric::RoundTrips, f64::from(self.round_trips)),
        ];
        if class == "4xx" {
            doc.property(Metric::Latency.name(), latency);
        } else {
            by_route.insert(0, (Metric::Latency, latency));
        }
        doc.record(BY_ROUTE, &by_route);
        // Like `Errors` and `ColdStart`, each only on the lines it counts:
        // a line says nothing of what did not happen (their Sum is the
        // count, their share that over Requests' Sum).
        let flags: Vec<(Metric, f64)> = [
            (Metric::Throttled, self.status == 429),
            (Metric::Replayed, self.replayed),
            (
                Metric::KeyInFlight,
                self.code == Some(IDEMPOTENCY_KEY_IN_FLIGHT.code),
            ),
        ]
        .into_iter()
        .filter_map(|(metric, happened)| happened.then_some((metric, 1.0)))
        .collect();
        if !flags.is_empty() {
            doc.record(&[&[Service]], &flags);
        }
        if let Some(code) = self.code {
            doc.dimension(Code, code).record(
                &[&[Service, Code], &[Service, Route, Code]],
                &[(Metric::Errors, 1.0)],
            );
        }
        doc
    }
}

/// Milliseconds to the microsecond: what a log reader needs, in fewer
/// bytes than a float's 17 digits.
fn round_us(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}
