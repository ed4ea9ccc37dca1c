//! What a support request reports when the tracker holds more than one
//! issue for it (`"message":"ticket duplicates"`): found, closed as
//! duplicates of the one kept, and left open. Its log line and its metric
//! line at once; the alarm watches `TicketDuplicatesUnclosed`.

use uuid::Uuid;

use super::{Dimension, Document, Metric, Report};

/// The support function, as its metrics name it.
pub const SUPPORT: &str = "support";

/// One reconciliation of a request's issues.
#[derive(Debug)]
pub struct Duplicates {
    /// The request (its `Idempotency-Key`'s) the issues name.
    pub request: Uuid,
    /// The issue kept: the first opened (a retry's), or the one the
    /// request's answer named (a sweep's).
    pub first: u64,
    pub found: usize,
    pub closed: usize,
    pub unclosed: usize,
    /// What found them: `retry` or `sweep`.
    pub by: &'static str,
}

impl Report for Duplicates {
    fn document(&self) -> Document {
        let count = |n: usize| n as f64;
        let mut doc = Document::new();
        doc.property("message", "ticket duplicates")
            .dimension(Dimension::Service, SUPPORT)
            .property("request", self.request.to_string())
            .property("first", self.first)
            .property("by", self.by)
            .record(
                &[&[Dimension::Service]],
                &[
                    (Metric::TicketDuplicatesFound, count(self.found)),
                    (Metric::TicketDuplicatesClosed, count(self.closed)),
                    (Metric::TicketDuplicatesUnclosed, count(self.unclosed)),
                ],
            );
        doc
    }
}
