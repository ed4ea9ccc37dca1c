//! What the dispatcher reports: one line per webhook attempt
//! (`"message":"webhook attempt"`), one per attempt put off
//! (`"message":"webhook attempt put off"`) and one per queue message
//! (`"message":"queue message handled"`), each its log line and its metric
//! line.

use uuid::Uuid;

use super::{Dimension, Document, Metric, Report};

/// The dispatcher, as its metrics name it.
pub const DISPATCHER: &str = "webhook-dispatcher";

/// One attempt of a delivery.
#[derive(Debug)]
pub struct Attempted {
    pub delivery_id: Uuid,
    pub webhook_id: Uuid,
    pub org_id: Uuid,
    /// Why it failed (`timeout`, `connection_failed`, `http_5xx`, ...),
    /// None when it succeeded.
    pub failure: Option<&'static str>,
    /// The delivery's attempts so far, this one included.
    pub attempt: u32,
    /// Made for an integrator's retry (not the queue's schedule).
    pub manual: bool,
    /// The receiver's answer, if it answered.
    pub status: Option<u16>,
    /// What kept the attempt from an answer (`timeout`, ...).
    pub error: Option<&'static str>,
    /// How long the attempt took.
    pub duration_ms: u64,
    /// Its attempts ran out with this one: to the dead-letter queue.
    pub dead_lettered: bool,
    /// From the commit of the status change to this attempt's start, and
    /// to its end.
    pub lag_to_start_ms: Option<f64>,
    pub lag_to_end_ms: Option<f64>,
    /// No request was made: its receiver is slowed or parked and another
    /// attempt has the turn (`receiver_slowed`, `receiver_parked`).
    pub held: Option<&'static str>,
    /// What the attempt did to its receiver's health.
    pub receiver: ReceiverChange,
    /// The X-Ray trace's root and the Lambda invocation's request id.
    pub trace_id: Option<String>,
    pub invocation_id: Option<String>,
}

/// What one attempt did to its receiver's health (`model::receiver`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverChange {
    /// Its failure slowed the receiver (the fifth in a row).
    pub slowed: bool,
    /// It found the receiver parked, the first time in its streak.
    pub parked: bool,
}

impl Report for Attempted {
    /// The attempt's metric line.
    fn document(&self) -> Document {
        use Dimension::{Cause, Service};
        let flag = |on: bool| if on { 1.0 } else { 0.0 };
        let mut doc = Document::new();
        doc.property("message", "webhook attempt")
            .dimension(Service, DISPATCHER)
            .property("delivery_id", self.delivery_id.to_string())
            .property("webhook_id", self.webhook_id.to_string())
            .property("org_id", self.org_id.to_string())
            .property("attempt", self.attempt)
            .property("manual", self.manual)
            .property("succeeded", self.failure.is_none())
            .property("duration_ms", self.duration_ms);
        if let Some(status) = self.status {
            doc.property("status", status);
        }
        if let Some(error) = self.error {
            doc.property("error", error);
        }
        if let Some(trace) = &self.trace_id {
            doc.property("trace_id", trace.as_str());
        }
        if let Some(invocation) = &self.invocation_id {
            doc.property("invocation_id", invocation.as_str());
        }
        let receiver = [
            (Metric::ReceiverSlowed, self.receiver.slowed),
            (Metric::ReceiverParked, self.receiver.parked),
        ]
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(metric, _)| (metric, 1.0));
        if let Some(held) = self.held {
            doc.property("held", held);
            // No request: no attempt, failure or lag, only the hold (and
            // the schedule's end, when it was the last).
            let held = [
                (Metric::AttemptsHeld, 1.0),
                (Metric::DeadLettered, flag(self.dead_lettered)),
            ];
            doc.record(
                &[&[Service]],
                &held.into_iter().chain(receiver).collect::<Vec<_>>(),
            );
            return doc;
        }
        let counts = [
            (Metric::DeliveryAttempts, 1.0),
            (Metric::DeliverySucceeded, flag(self.failure.is_none())),
            (Metric::DeadLettered, flag(self.dead_lettered)),
        ];
        doc.record(
            &[&[Service]],
            &counts.into_iter().chain(receiver).collect::<Vec<_>>(),
        );
        // A failure by its cause, on the failed attempts' lines only (the
        // dashboard sums it by cause; `DeliverySucceeded` is the 0 or 1).
        if let Some(cause) = self.failure {
            doc.dimension(Cause, cause).record(
                &[&[Service], &[Service, Cause]],
                &[(Metric::DeliveryFailed, 1.0)],
            );
        }
        let mut lags = Vec::new();
        if let (1, Some(lag)) = (self.attempt, self.lag_to_start_ms) {
            lags.push((Metric::LagToFirstAttempt, lag));
        }
        if let (None, Some(lag)) = (self.failure, self.lag_to_end_ms) {
            lags.push((Metric::LagToSuccess, lag));
        }
        if !lags.is_empty() {
            doc.record(&[&[Service]], &lags);
        }
        doc
    }
}

/// An attempt put off without a request, its message sent again for
/// later: its organization's share of the dispatcher was full.
#[derive(Debug)]
pub struct PutOff {
    pub delivery_id: Uuid,
    pub org_id: Uuid,
    /// Made for an integrator's retry or a recovery.
    pub manual: bool,
    /// How long until its message comes back.
    pub wait_ms: u64,
}

impl Report for PutOff {
    fn document(&self) -> Document {
        let mut doc = Document::new();
        doc.property("message", "webhook attempt put off")
            .dimension(Dimension::Service, DISPATCHER)
            .property("delivery_id", self.delivery_id.to_string())
            .property("org_id", self.org_id.to_string())
            .property("manual", self.manual)
            .property("wait_ms", self.wait_ms)
            .record(&[&[Dimension::Service]], &[(Metric::AttemptsPutOff, 1.0)]);
        doc
    }
}

/// One queue message the dispatcher handled (an announcement or a
/// delivery's), and what it cost.
#[derive(Debug)]
pub struct Handled {
    pub message_id: String,
    /// The message's body (ids only: `QueueMessage`).
    pub body: String,
    /// Why an error gave it back to the queue unhandled (`not_attempted`,
    /// `announcement_failed`, `dead_letter_failed`); None when it was
    /// handled (a retry's scheduled wait included).
    pub failed: Option<&'static str>,
    /// It goes back to the queue (a retry's wait, an attempt in flight
    /// elsewhere, or `failed`).
    pub returned: bool,
    pub latency_ms: f64,
    pub ddb_ms: f64,
    pub ddb_calls: u64,
    pub round_trips: u64,
    pub read_units: f64,
    pub write_units: f64,
    pub aws_calls: Option<String>,
    /// The X-Ray trace's root and the Lambda invocation's request id.
    pub trace_id: Option<String>,
    pub invocation_id: Option<String>,
}

impl Report for Handled {
    fn document(&self) -> Document {
        use Dimension::{Cause, Service};
        let mut doc = Document::new();
        doc.property("message", "queue message handled")
            .dimension(Service, DISPATCHER)
            .property("message_id", self.message_id.as_str())
            .property("body", self.body.as_str())
            .property("returned", self.returned)
            .property("latency_ms", self.latency_ms)
            .property("ddb_ms", self.ddb_ms)
            .property("ddb_calls", self.ddb_calls)
            .property("round_trips", self.round_trips)
            .property("read_units", self.read_units)
            .property("write_units", self.write_units);
        if let Some(calls) = &self.aws_calls {
            doc.property("aws_calls", calls.as_str());
        }
        if let Some(trace) = &self.trace_id {
            doc.property("trace_id", trace.as_str());
        }
        if let Some(invocation) = &self.invocation_id {
            doc.property("invocation_id", invocation.as_str());
        }
        doc.record(&[&[Service]], &[(Metric::QueueMessages, 1.0)]);
        // On the lines it counts only, as a request's `Errors` (its alarm
        // sums it and takes no line as none).
        if let Some(cause) = self.failed {
            doc.dimension(Cause, cause).record(
                &[&[Service], &[Service, Cause]],
                &[(Metric::MessagesFailed, 1.0)],
            );
        }
        doc
    }
}
