//! What may be done with an organization's webhooks, whoever asks: the
//! organization through the API (`functions/webhooks`) or an operator
//! through the CLI (`admin webhooks ...`: "a superadmin can manage the same
//! rows"). One implementation, so both manage the same rows the same way.

use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::model::delivery::{Delivery, PingRequested, RecoveryQueued, RecoverySkipped};
use crate::model::webhook::{NewWebhook, WebhookRecord, new_secret};
use crate::queue::QueueMessage;
use crate::state::AppState;
use crate::store::engine::calls::CallCounter;
use crate::store::exactly_once::outbox::OutboxRecord;
use crate::store::exactly_once::{outcome, tx};
use crate::store::records::deliveries::RecoveryMark;

impl AppState {
    /// Registers `new` for organization `org`: the record (its secret
    /// sealed) and the secret, to be shown this once. 409
    /// `webhook_already_exists`, `webhook_limit_reached`.
    pub async fn register_webhook(
        &self,
        org: Uuid,
        new: NewWebhook,
    ) -> ApiResult<(WebhookRecord, String)> {
        let id = Uuid::now_v7();
        let secret = new_secret();
        let record = WebhookRecord {
            id,
            org_id: org,
            event: new.event.to_owned(),
            url: new.url,
            verification_mode: new.verification_mode,
            sealed_secret: self.sealer.seal(id.as_bytes(), &secret).await?,
            previous_sealed_secret: None,
            previous_secret_until: None,
            created_at: crate::model::now(),
        };
        self.store.webhooks().create(&record).await?;
        Ok((record, secret))
    }

    /// Rolls the secret of webhook `id` of `org`: a new one signs from now
    /// on (returned this once), and the one before signs beside it for
    /// `overlap` (404 `webhook_not_found`; a roll racing another is tried
    /// again on what that one left).
    pub async fn roll_webhook_secret(
        &self,
        org: Uuid,
        id: Uuid,
        overlap: std::time::Duration,
    ) -> ApiResult<(WebhookRecord, String)> {
        let until = crate::clock::now()
            + chrono::TimeDelta::from_std(overlap).map_err(ApiError::internal)?;
        tx::retry_races(|| async {
            let current = self.store.webhooks().require(org, id).await?;
            let secret = new_secret();
            let rolled = WebhookRecord {
                sealed_secret: self.sealer.seal(id.as_bytes(), &secret).await?,
                previous_sealed_secret: Some(current.sealed_secret.clone()),
                previous_secret_until: Some(until.into()),
                ..current.clone()
            };
            self.store
                .webhooks()
                .roll(&rolled, &current.sealed_secret)
                .await?;
            Ok((rolled, secret))
        })
        .await
    }

    /// The secrets that sign a delivery of webhook `record` now: its own,
    /// then the one before a roll while its overlap lasts.
    pub async fn webhook_secrets(&self, record: &WebhookRecord) -> ApiResult<Vec<String>> {
        let mut secrets = vec![self.open_webhook_secret(record).await?];
        if let (Some(sealed), Some(until)) =
            (&record.previous_sealed_secret, record.previous_secret_until)
            && crate::clock::now() < until.as_datetime()
        {
            secrets.push(self.sealer.open(record.id.as_bytes(), sealed).await?);
        }
        Ok(secrets)
    }

    /// The secret of webhook `record`, opened from its sealed copy.
    pub async fn open_webhook_secret(&self, record: &WebhookRecord) -> ApiResult<String> {
        self.sealer
            .open(record.id.as_bytes(), &record.sealed_secret)
            .await
    }

    /// Queues one more attempt of delivery `delivery` of webhook `webhook`
    /// of `org`, with the same delivery id: 404 `webhook_not_found` (first,
    /// also for another organization's webhook), `delivery_not_found`.
    pub async fn retry_delivery(
        &self,
        org: Uuid,
        webhook: Uuid,
        delivery: Uuid,
    ) -> ApiResult<Delivery> {
        let (webhooks, deliveries) = (self.store.webhooks(), self.store.deliveries());
        // One round trip; the webhook's answer decides first.
        let (found, record) = CallCounter::together(async {
            tokio::join!(
                webhooks.require(org, webhook),
                deliveries.require(webhook, delivery),
            )
        })
        .await;
        found?;
        // A ping is pinged again, not retried: the answer shows a load's
        // delivery.
        let record = record?;
        if record.surplus_id.is_none() {
            return Err(crate::store::records::deliveries::delivery_not_found());
        }
        // The same request for every retry of this one with its
        // Idempotency-Key: its attempt is made once however often it is
        // queued.
        let message = QueueMessage::Deliver {
            delivery_id: delivery,
            manual: true,
            request: Some(outcome::request_id().unwrap_or_else(Uuid::now_v7)),
        };
        self.queue.send(org, &message).await?;
        Ok(record.view())
    }

    /// Stores `ping` (`OutboxRecord::ping`: a ping of one webhook of its
    /// organization) and answers what the ping route shows: the delivery
    /// it makes, queued once the record is announced (`WebhookQueue::
    /// announce` after the commit, else the sweeper). 404
    /// `webhook_not_found` when the webhook is gone.
    pub async fn ping_webhook(&self, ping: &OutboxRecord) -> ApiResult<PingRequested> {
        let webhook = ping
            .webhook_id
            .ok_or_else(|| ApiError::internal("a ping names no webhook"))?;
        let requested = PingRequested {
            delivery_id: crate::model::delivery::delivery_id(ping.id, webhook),
            webhook_id: webhook,
            event: ping.event.clone(),
            requested_at: ping.created_at,
        };
        self.store.webhooks().ping(ping, &requested).await?;
        Ok(requested)
    }

    /// Queues one more attempt, with its delivery id, of every delivery of
    /// webhook `webhook` of `org` whose last attempt failed (or whose
    /// attempts ran out) and that the log shows attempts of since `since`:
    /// at most `RECOVER_BATCH` a request, oldest first, the answer saying
    /// where the next request resumes. A delivery another recovery queued
    /// and whose attempt is not made yet is not queued again (its mark,
    /// `Deliveries::mark_recovery`, for `RECOVERY_HOLD`); a retry of this
    /// request (its `Idempotency-Key`) re-sends its own. Nothing is queued
    /// to a receiver that is slowed or parked (`model::receiver`): each of
    /// those attempts but its turn's would be held, so the request only
    /// says so (`skipped.receiver_slowed`). 404 `webhook_not_found` first.
    pub async fn recover_deliveries(
        &self,
        org: Uuid,
        webhook: Uuid,
        since: crate::model::Timestamp,
    ) -> ApiResult<RecoveryQueued> {
        use futures::StreamExt;
        let hook = self.store.webhooks().require(org, webhook).await?;
        let deliveries = self.store.deliveries();
        let (found, next_since) = deliveries
            .attempted_since(webhook, since, RECOVER_BATCH)
            .await?;
        if !found.is_empty() && self.receiver_failing(org, &hook.url).await? {
            return Ok(RecoveryQueued {
                webhook_id: webhook,
                since,
                queued: 0,
                next_since,
                skipped: RecoverySkipped {
                    receiver_slowed: u32::try_from(found.len()).unwrap_or(u32::MAX),
                    ..RecoverySkipped::default()
                },
            });
        }
        // Nothing is marked for a message that could not be sent: an
        // operator's CLI without the queue's URL fails before it holds a
        // delivery back.
        if !found.is_empty() {
            self.queue.url()?;
        }
        let request = outcome::request_id().unwrap_or_else(Uuid::now_v7);
        let now = crate::clock::now().timestamp_millis();
        let millis = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        // Marked first for the request's own time only: a request that
        // dies before its messages go holds nothing back for longer.
        let until = now + millis(RECOVERY_GRACE);
        let cooled = now - i64::try_from(RECOVERY_COOLDOWN.as_millis()).unwrap_or(i64::MAX);
        let marked: Vec<ApiResult<(Uuid, RecoveryMark)>> = futures::stream::iter(found)
            .map(|id| {
                let deliveries = &deliveries;
                async move {
                    let mark = deliveries
                        .mark_recovery(id, webhook, request, now, until, cooled)
                        .await?;
                    Ok((id, mark))
                }
            })
            .buffered(16)
            .collect()
            .await;
        let marked = marked.into_iter().collect::<ApiResult<Vec<_>>>()?;
        let mut skipped = RecoverySkipped::default();
        for (_, mark) in &marked {
            match mark {
                RecoveryMark::Mine => {}
                RecoveryMark::BeingRecovered => skipped.being_recovered += 1,
                RecoveryMark::CoolingDown => skipped.cooling_down += 1,
                RecoveryMark::NotFailed => skipped.not_failed += 1,
            }
        }
        let messages: Vec<(Uuid, QueueMessage)> = marked
            .into_iter()
            .filter(|(_, mark)| *mark == RecoveryMark::Mine)
            .map(|(delivery_id, _)| {
                let message = QueueMessage::Deliver {
                    delivery_id,
                    manual: true,
                    request: Some(request),
                };
                (org, message)
            })
            .collect();
        self.queue.send_all(&messages).await?;
        // Sent: each mark holds until its attempt is made (or the hold
        // lapses), so another recovery queues nothing twice meanwhile.
        let held = crate::clock::now().timestamp_millis() + millis(RECOVERY_HOLD);
        let sent: Vec<Uuid> = messages
            .iter()
            .filter_map(|(_, message)| match message {
                QueueMessage::Deliver { delivery_id, .. } => Some(*delivery_id),
                QueueMessage::Announce { .. } => None,
            })
            .collect();
        let extended: Vec<ApiResult<bool>> = futures::stream::iter(sent)
            .map(|id| {
                let deliveries = &deliveries;
                async move { deliveries.hold_recovery(id, request, held).await }
            })
            .buffered(16)
            .collect()
            .await;
        extended.into_iter().collect::<ApiResult<Vec<_>>>()?;
        Ok(RecoveryQueued {
            webhook_id: webhook,
            since,
            queued: u32::try_from(messages.len()).unwrap_or(u32::MAX),
            next_since,
            skipped,
        })
    }

    /// Whether `org`'s receiver at `url` is slowed or parked now.
    async fn receiver_failing(&self, org: Uuid, url: &str) -> ApiResult<bool> {
        use crate::model::receiver::{Limits, State};
        let receiver = crate::model::webhook::receiver(org, url);
        let health = self.store.receivers().get(org, receiver).await?;
        let now = crate::clock::now().timestamp_millis();
        Ok(health.state(now, &Limits::default()) != State::Healthy)
    }
}

/// Deliveries one recovery request queues at most.
pub const RECOVER_BATCH: usize = 100;

/// How long after a recovery's attempt of a delivery no recovery queues
/// it again, whatever the keys (docs/webhooks.md, beside the retry
/// schedule): a receiver gets at most one recovered attempt of a delivery
/// an hour, however often recovery is asked for.
pub const RECOVERY_COOLDOWN: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// How long a recovery's mark holds before its messages are sent: longer
/// than a request runs (the functions' timeouts are at most 20 s), so a
/// request killed or failed before it queued anything holds its
/// deliveries back no longer than this.
pub const RECOVERY_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a recovery's mark keeps others from queueing the delivery
/// again while its attempt is not made, once its message is sent.
pub const RECOVERY_HOLD: std::time::Duration = std::time::Duration::from_secs(15 * 60);
