//! The names a metric line may use: its metrics (with their units) and
//! its dimensions. Every name here is one the template's dashboard and
//! alarms may use (`infra/checks/check_template.py` reads them from this
//! folder).

/// A metric: its name in CloudWatch and its unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// A request served (1 per request line).
    Requests,
    /// From the request's arrival to its answer.
    Latency,
    /// DynamoDB read capacity units the request consumed.
    ReadUnits,
    /// DynamoDB write capacity units the request consumed.
    WriteUnits,
    /// Sequential round trips to DynamoDB.
    RoundTrips,
    /// An error answer, by its contract code.
    Errors,
    /// 1 when the request was refused with 429 (rate limit, quota).
    Throttled,
    /// 1 when the answer was an `Idempotency-Key` replay.
    Replayed,
    /// 1 when the answer was 409 `idempotency_key_in_flight`.
    KeyInFlight,
    /// 1 on the first line of a process (a Lambda cold start).
    ColdStart,
    /// A webhook attempt made (1 per attempt line).
    DeliveryAttempts,
    /// 1 when the attempt was answered 2xx.
    DeliverySucceeded,
    /// 1 when it was not (by cause too).
    DeliveryFailed,
    /// A delivery whose attempts ran out, moved to the dead-letter queue.
    DeadLettered,
    /// From the commit of the status change to the first attempt.
    LagToFirstAttempt,
    /// From the commit of the status change to the attempt that succeeded.
    LagToSuccess,
    /// A queue message the dispatcher handled (1 per message line).
    QueueMessages,
    /// 1 when an error gave the message back to the queue unhandled (a
    /// delivery not attempted, an announcement not made; by cause too):
    /// not a retry's scheduled wait.
    MessagesFailed,
    /// An attempt held without a request: its receiver is slowed or
    /// parked (`model::receiver`), and another attempt has the turn.
    AttemptsHeld,
    /// An attempt put off without a request or a count: its organization's
    /// share of the dispatcher's batches was full (`Policy::org_batches`).
    AttemptsPutOff,
    /// 1 when a failure slowed its receiver (its fifth in a row).
    ReceiverSlowed,
    /// 1 when a receiver was first found parked in its streak of failures.
    ReceiverParked,
    /// Issues of the tracker found for one support request beyond its
    /// first (a tracker that misreported, or a call that landed late).
    TicketDuplicatesFound,
    /// Of those, closed as duplicates of the first.
    TicketDuplicatesClosed,
    /// Of those, left open: the tracker refused to close them.
    TicketDuplicatesUnclosed,
}

/// CloudWatch's units, as EMF spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
}

impl Metric {
    pub const ALL: [Metric; 25] = [
        Metric::Requests,
        Metric::Latency,
        Metric::ReadUnits,
        Metric::WriteUnits,
        Metric::RoundTrips,
        Metric::Errors,
        Metric::Throttled,
        Metric::Replayed,
        Metric::KeyInFlight,
        Metric::ColdStart,
        Metric::DeliveryAttempts,
        Metric::DeliverySucceeded,
        Metric::DeliveryFailed,
        Metric::DeadLettered,
        Metric::LagToFirstAttempt,
        Metric::LagToSuccess,
        Metric::QueueMessages,
        Metric::MessagesFailed,
        Metric::AttemptsHeld,
        Metric::AttemptsPutOff,
        Metric::ReceiverSlowed,
        Metric::ReceiverParked,
        Metric::TicketDuplicatesFound,
        Metric::TicketDuplicatesClosed,
        Metric::TicketDuplicatesUnclosed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Requests => "Requests",
            Metric::Latency => "Latency",
            Metric::ReadUnits => "ReadUnits",
            Metric::WriteUnits => "WriteUnits",
            Metric::RoundTrips => "RoundTrips",
            Metric::Errors => "Errors",
            Metric::Throttled => "Throttled",
            Metric::Replayed => "Replayed",
            Metric::KeyInFlight => "KeyInFlight",
            Metric::ColdStart => "ColdStart",
            Metric::DeliveryAttempts => "DeliveryAttempts",
            Metric::DeliverySucceeded => "DeliverySucceeded",
            Metric::DeliveryFailed => "DeliveryFailed",
            Metric::DeadLettered => "DeadLettered",
            Metric::LagToFirstAttempt => "LagToFirstAttempt",
            Metric::LagToSuccess => "LagToSuccess",
            Metric::QueueMessages => "QueueMessages",
            Metric::MessagesFailed => "MessagesFailed",
            Metric::AttemptsHeld => "AttemptsHeld",
            Metric::AttemptsPutOff => "AttemptsPutOff",
            Metric::ReceiverSlowed => "ReceiverSlowed",
            Metric::ReceiverParked => "ReceiverParked",
            Metric::TicketDuplicatesFound => "TicketDuplicatesFound",
            Metric::TicketDuplicatesClosed => "TicketDuplicatesClosed",
            Metric::TicketDuplicatesUnclosed => "TicketDuplicatesUnclosed",
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            Metric::Latency | Metric::LagToFirstAttempt | Metric::LagToSuccess => {
                Unit::Milliseconds
            }
            _ => Unit::Count,
        }
    }
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
        }
    }
}

/// A dimension: a key whose values are few.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dimension {
    /// The function (`sites`, `webhook-dispatcher`).
    Service,
    /// Method and route template (`GET /api/v1/sites/{siteId}`).
    Route,
    /// `2xx`, `3xx`, `4xx` or `5xx`.
    StatusClass,
    /// The contract's error code.
    Code,
    /// Why an attempt failed (`timeout`, `http_5xx`, ...), or why a
    /// queue message went back unhandled (`not_attempted`, ...).
    Cause,
}

impl Dimension {
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Service => "Service",
            Dimension::Route => "Route",
            Dimension::StatusClass => "StatusClass",
            Dimension::Code => "Code",
            Dimension::Cause => "Cause",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_listed_once_with_its_own_name() {
        let mut names: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Metric::ALL.len());
        assert_eq!(Metric::Latency.unit().name(), "Milliseconds");
        assert_eq!(Metric::Requests.unit().name(), "Count");
    }
}
