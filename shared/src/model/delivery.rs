//! Webhook deliveries: one per announced change and webhook (its id is the
//! payload's `id`, the same on every attempt), and the attempts made. A
//! ping (`webhook.ping`) is a delivery of its own to one webhook, about no
//! load.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::time::Timestamp;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Not yet answered with a 2xx; attempts remain.
    Pending,
    Succeeded,
    /// Every scheduled attempt failed (the message went to the DLQ).
    Failed,
}

/// The stored delivery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRecord {
    pub id: Uuid,
    pub webhook_id: Uuid,
    pub org_id: Uuid,
    pub outbox_id: Uuid,
    /// The load it announces; none for a ping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surplus_id: Option<Uuid>,
    pub event: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub created_at: Timestamp,
    pub last_attempt_at: Option<Timestamp>,
    /// The queue message that makes the scheduled attempts (the first to
    /// claim the delivery): a second announcement's message finds it taken
    /// and is dropped, so a delivery has one retry schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The recovery request (`POST .../recover`) that queued an attempt of
    /// this delivery, until that attempt is made or `recovery_until`
    /// (Unix ms) passes: another recovery queues nothing meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_until: Option<i64>,
    /// When a recovery's attempt of this delivery was last made (Unix ms):
    /// no recovery queues it again until `webhooks::RECOVERY_COOLDOWN`
    /// has passed, whatever the keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered_at: Option<i64>,
    /// Retry requests whose attempt was made, as records kept them before
    /// each request had a mark of its own (`store::records::deliveries::record`):
    /// read, never written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manual_requests: Vec<Uuid>,
}

/// The delivery id of outbox record `outbox` for `webhook`: derived, so
/// an announcement made twice names the same delivery (UUID v8 from
/// SHA-256 of both ids).
pub fn delivery_id(outbox: Uuid, webhook: Uuid) -> Uuid {
    let digest = Sha256::new()
        .chain_update(b"delivery\0")
        .chain_update(outbox.as_bytes())
        .chain_update(webhook.as_bytes())
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    Uuid::new_v8(bytes)
}

impl DeliveryRecord {
    pub fn new(outbox: Uuid, webhook: Uuid, org: Uuid, surplus: Option<Uuid>, event: &str) -> Self {
        DeliveryRecord {
            id: delivery_id(outbox, webhook),
            webhook_id: webhook,
            org_id: org,
            outbox_id: outbox,
            surplus_id: surplus,
            event: event.to_owned(),
            status: DeliveryStatus::Pending,
            attempts: 0,
            created_at: super::now(),
            last_attempt_at: None,
            owner: None,
            recovery: None,
            recovery_until: None,
            recovered_at: None,
            manual_requests: Vec::new(),
        }
    }

    pub fn view(&self) -> Delivery {
        Delivery {
            id: self.id,
            webhook_id: self.webhook_id,
            surplus_id: self.surplus_id,
            event: self.event.clone(),
            status: self.status,
            attempts: self.attempts,
            created_at: self.created_at,
            last_attempt_at: self.last_attempt_at,
        }
    }
}

/// A delivery as answers show it (the retry route's: a load's delivery,
/// never a ping's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub id: Uuid,
    pub webhook_id: Uuid,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surplus_id: Option<Uuid>,
    pub event: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub created_at: Timestamp,
    pub last_attempt_at: Option<Timestamp>,
}

/// Why an attempt got no HTTP status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptError {
    /// No answer within the delivery timeout.
    Timeout,
    /// No connection (refused, reset, TLS, DNS).
    ConnectionFailed,
    /// The host resolved to a loopback, private or reserved address.
    AddressRefused,
    /// The payload could not be made (our side), or no request was made
    /// while its receiver is slowed or parked (`held` says which).
    Internal,
}

/// Why an attempt made no request: its receiver keeps failing and another
/// attempt has its turn (`model::receiver`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Held {
    /// Slowed: one attempt a minute.
    ReceiverSlowed,
    /// Parked: one attempt an hour.
    ReceiverParked,
}

impl Held {
    pub fn as_str(self) -> &'static str {
        match self {
            Held::ReceiverSlowed => "receiver_slowed",
            Held::ReceiverParked => "receiver_parked",
        }
    }
}

/// One attempt, as stored and as the deliveries list (a load's) or the
/// pings list (a ping's, without `surplus_id`) shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeliveryAttempt {
    pub delivery_id: Uuid,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surplus_id: Option<Uuid>,
    pub event: String,
    /// 1 for the first attempt of the delivery.
    pub attempt: u32,
    /// Asked for through the retry route.
    pub manual: bool,
    pub attempted_at: Timestamp,
    pub succeeded: bool,
    pub status_code: Option<u16>,
    pub error: Option<AttemptError>,
    pub duration_ms: u64,
    /// Set only on an attempt that made no request because its receiver
    /// is slowed or parked (`error` is then `internal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<Held>,
}

/// A ping asked for: its delivery, queued (`POST .../ping`'s answer).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PingRequested {
    /// The delivery's id: the ping's body `id` and `webhook-id`.
    pub delivery_id: Uuid,
    pub webhook_id: Uuid,
    /// `webhook.ping`.
    pub event: String,
    pub requested_at: Timestamp,
}

/// `POST /api/v1/webhooks/{webhookId}/recover`'s body.
#[derive(Debug, Deserialize)]
pub struct Recover {
    #[serde(default)]
    pub since: crate::model::patch::Patch<String>,
}

/// Days back a recovery may reach: the delivery log's retention.
pub const RECOVER_DAYS: i64 = 30;

impl Recover {
    /// `since` as given (a date-time: 422 `validation_error` otherwise),
    /// read from `RECOVER_DAYS` before `now` at the earliest: the log
    /// keeps no more. A future one finds nothing.
    pub fn since(&self, now: Timestamp) -> Result<Timestamp, crate::error::ApiError> {
        let invalid = |why: &str| crate::error::ApiError::validation("since", why.to_owned());
        let text = match &self.since {
            crate::model::patch::Patch::Value(text) => text,
            _ => return Err(invalid("is required: a date-time (RFC 3339)")),
        };
        let at = chrono::DateTime::parse_from_rfc3339(text)
            .map_err(|_| invalid("must be a date-time (RFC 3339)"))?
            .with_timezone(&chrono::Utc);
        let earliest = now.as_datetime() - chrono::TimeDelta::days(RECOVER_DAYS);
        Ok(at.max(earliest).into())
    }
}

/// What a recovery queued (`POST .../recover`'s answer).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryQueued {
    pub webhook_id: Uuid,
    pub since: Timestamp,
    /// Deliveries given one more attempt by this request.
    pub queued: u32,
    /// Where the next call starts (`since` of the next request), when this
    /// one stopped before the log's end; null when it reached it.
    pub next_since: Option<Timestamp>,
    /// The deliveries this request went through and did not queue, by why.
    pub skipped: RecoverySkipped,
}

/// The deliveries a recovery found and did not queue, by why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoverySkipped {
    /// Another recovery queued them and their attempts are not made yet.
    pub being_recovered: u32,
    /// A recovery's attempt of each was made within the last hour (the
    /// cool-down): recovered again once it has passed.
    pub cooling_down: u32,
    /// Their last attempt succeeded (before the outage or since), or they
    /// are gone.
    pub not_failed: u32,
    /// The webhook's receiver is slowed or parked: nothing is recovered to
    /// it (every attempt but its turn's would be held). Ping it once it is
    /// fixed (a 2xx brings it back), then recover.
    pub receiver_slowed: u32,
}

/// Largest and default page of the deliveries list.
pub const MAX_PAGE: u32 = 100;
pub const DEFAULT_PAGE: u32 = 50;

/// GET /api/v1/webhooks/{webhookId}/deliveries query.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ListDeliveries {
    pub limit: Option<u32>,
    pub cursor: Option<String>,
}

impl ListDeliveries {
    pub fn limit(&self) -> Result<u32, crate::error::ApiError> {
        match self.limit {
            None => Ok(DEFAULT_PAGE),
            Some(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
            Some(_) => Err(crate::error::ApiError::validation(
                "limit",
                format!("must be an integer from 1 to {MAX_PAGE}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_id_is_one_per_outbox_record_and_webhook() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        assert_eq!(delivery_id(a, b), delivery_id(a, b));
        assert_ne!(delivery_id(a, b), delivery_id(b, a));
        assert_eq!(delivery_id(a, b).get_version_num(), 8);
    }
}
