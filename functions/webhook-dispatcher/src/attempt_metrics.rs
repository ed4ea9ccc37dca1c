//! An attempt's metrics line (`shared::metrics::delivery`): what it cost,
//! how it failed by the metrics' causes, and its lags from the load's
//! status change.

use shared::model::delivery::{AttemptError, DeliveryAttempt, Held};
use shared::model::webhook::WebhookRecord;

use crate::Invocation;
use crate::client::Outcome;

/// Why an attempt failed, as its metrics name it: the client's error, else
/// the receiver's answer by class (`http_4xx`, ...); None when it
/// succeeded.
pub(crate) fn cause(outcome: &Outcome) -> Option<&'static str> {
    if outcome.succeeded() {
        return None;
    }
    Some(match (outcome.error, outcome.status) {
        (Some(AttemptError::Timeout), _) => "timeout",
        (Some(AttemptError::ConnectionFailed), _) => "connection_failed",
        (Some(AttemptError::AddressRefused), _) => "address_refused",
        (Some(AttemptError::Internal), _) => "internal",
        (None, Some(400..=499)) => "http_4xx",
        (None, Some(500..=599)) => "http_5xx",
        (None, Some(_)) => "http_other",
        (None, None) => "internal",
    })
}

/// The attempt's metrics (`shared::metrics::delivery`): its lags measured
/// from `committed`, when the load's status change was committed.
pub(crate) fn report(
    attempt: &DeliveryAttempt,
    outcome: &Outcome,
    hook: &WebhookRecord,
    committed: Option<shared::model::Timestamp>,
    dead_lettered: bool,
    health: shared::metrics::delivery::ReceiverChange,
) -> shared::metrics::delivery::Attempted {
    let lag = |at: u64| {
        committed.map(|committed| {
            #[allow(clippy::cast_precision_loss)] // Milliseconds: far below 2^52.
            let ms = at.saturating_sub(committed.unix_millis()) as f64;
            ms
        })
    };
    let started = attempt.attempted_at.unix_millis();
    let ended = started.saturating_add(attempt.duration_ms);
    shared::metrics::delivery::Attempted {
        delivery_id: attempt.delivery_id,
        webhook_id: hook.id,
        org_id: hook.org_id,
        failure: cause(outcome),
        attempt: attempt.attempt,
        manual: attempt.manual,
        status: outcome.status,
        error: outcome.error.map(|e| match e {
            AttemptError::Timeout => "timeout",
            AttemptError::ConnectionFailed => "connection_failed",
            AttemptError::AddressRefused => "address_refused",
            AttemptError::Internal => "internal",
        }),
        held: attempt.held.map(Held::as_str),
        receiver: health,
        duration_ms: attempt.duration_ms,
        dead_lettered,
        lag_to_start_ms: lag(started),
        lag_to_end_ms: lag(ended),
        trace_id: Invocation::current().trace_id(),
        invocation_id: Invocation::current().request_id,
    }
}
