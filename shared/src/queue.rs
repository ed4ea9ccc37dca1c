//! The webhook queue: what is sent on it (an announcement of an outbox
//! record, or one delivery to make) and the few SQS calls the API, the
//! dispatcher and the local poller make on it.
//!
//! Every message is sent with its organization as `MessageGroupId`: on a
//! standard queue that makes it an SQS fair queue, which serves other
//! organizations' messages first while one organization has a backlog (a
//! burst of deliveries to slow receivers), so one tenant's webhooks do not
//! hold everyone's delivery slots. It imposes no order.

use std::time::Duration;

use aws_sdk_sqs::error::DisplayErrorContext;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::store::exactly_once::outcome;

/// A message body on the webhook queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QueueMessage {
    /// Outbox record `outbox_id` is committed: fan it out to the webhooks.
    Announce { outbox_id: Uuid },
    /// Make delivery `delivery_id` (an integrator's retry when `manual`:
    /// one attempt, whatever the delivery's state, once per `request`).
    Deliver {
        delivery_id: Uuid,
        #[serde(default)]
        manual: bool,
        /// The retry request (shared by its retries with one
        /// `Idempotency-Key`): its attempt is made once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request: Option<Uuid>,
    },
}

impl QueueMessage {
    pub fn body(&self) -> String {
        serde_json::to_string(self).expect("a queue message serializes")
    }
}

/// Messages per SendMessageBatch call (the SQS limit).
const SEND_BATCH: usize = 10;

#[derive(Clone, Debug)]
pub struct WebhookQueue {
    sqs: aws_sdk_sqs::Client,
    url: Option<String>,
    dead_letters: Option<String>,
}

fn sqs_error<E: std::error::Error + Send + Sync + 'static>(error: E) -> ApiError {
    ApiError::internal(DisplayErrorContext(error).to_string())
}

/// The time a send is given before the request's hold on its
/// `Idempotency-Key` must still run.
const SEND_CALL: std::time::Duration = std::time::Duration::from_secs(5);

impl WebhookQueue {
    /// The fast path of a committed outbox record (`outbox_id`, of `org`)
    /// to the dispatcher. A failed send changes nothing for the client: the
    /// change is committed, and the dispatcher's sweeper announces the
    /// record within minutes.
    pub async fn announce(&self, org: Uuid, outbox_id: Uuid) {
        let message = QueueMessage::Announce { outbox_id };
        if let Err(error) = self.send(org, &message).await {
            tracing::warn!(%outbox_id, %error, "webhook queue unavailable; the sweeper will announce the delivery");
        }
    }

    pub fn new(
        sdk: &aws_config::SdkConfig,
        url: Option<String>,
        dead_letters: Option<String>,
    ) -> Self {
        Self {
            sqs: aws_sdk_sqs::Client::from_conf(
                aws_sdk_sqs::config::Builder::from(sdk)
                    .interceptor(crate::aws_calls::CountAwsCalls)
                    .interceptor(crate::telemetry::aws_spans::SpanAwsCalls)
                    .build(),
            ),
            url,
            dead_letters,
        }
    }

    /// The queue's URL; an error when `WEBHOOK_QUEUE_URL` is not set
    /// (before anything is marked for a message that could not go).
    pub fn url(&self) -> ApiResult<&str> {
        self.url
            .as_deref()
            .ok_or_else(|| ApiError::internal("WEBHOOK_QUEUE_URL is not set"))
    }

    /// Sends `message` of organization `org`, once the request's admission
    /// let it in and while its `Idempotency-Key` claim is its own
    /// (`outcome::effect_may_go`).
    pub async fn send(&self, org: Uuid, message: &QueueMessage) -> ApiResult<()> {
        self.send_after(org, message, Duration::ZERO).await
    }

    /// Sends `message` of organization `org`, visible after `delay` (at
    /// most the SQS limit, 15 minutes): how the dispatcher puts off an
    /// attempt without hiding its message, which would count a receive.
    pub async fn send_after(
        &self,
        org: Uuid,
        message: &QueueMessage,
        delay: Duration,
    ) -> ApiResult<()> {
        outcome::effect_may_go(SEND_CALL).await?;
        let seconds = i32::try_from(delay.as_secs().min(15 * 60)).unwrap_or(0);
        self.sqs
            .send_message()
            .queue_url(self.url()?)
            .message_body(message.body())
            .message_group_id(org.to_string())
            .set_delay_seconds((seconds > 0).then_some(seconds))
            .send()
            .await
            .map_err(sqs_error)?;
        Ok(())
    }

    /// Sends `messages`, each of its organization, ten to a call; an entry
    /// SQS refused is an error.
    pub async fn send_all(&self, messages: &[(Uuid, QueueMessage)]) -> ApiResult<()> {
        if messages.is_empty() {
            return Ok(());
        }
        outcome::effect_may_go(SEND_CALL).await?;
        let url = self.url()?;
        for chunk in messages.chunks(SEND_BATCH) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, (org, message))| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(message.body())
                        .message_group_id(org.to_string())
                        .build()
                        .map_err(ApiError::internal)
                })
                .collect::<ApiResult<Vec<_>>>()?;
            let out = self
                .sqs
                .send_message_batch()
                .queue_url(url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(sqs_error)?;
            if let Some(failed) = out.failed.first() {
                return Err(ApiError::internal(format!(
                    "SQS refused a message: {}",
                    failed.message().unwrap_or(failed.code())
                )));
            }
        }
        Ok(())
    }

    /// Moves a message body to the dead-letter queue.
    pub async fn dead_letter(&self, body: &str) -> ApiResult<()> {
        let url = self
            .dead_letters
            .as_deref()
            .ok_or_else(|| ApiError::internal("WEBHOOK_DLQ_URL is not set"))?;
        self.sqs
            .send_message()
            .queue_url(url)
            .message_body(body)
            .send()
            .await
            .map_err(sqs_error)?;
        Ok(())
    }

    /// Hides a received message for `delay` (at most the SQS limit, 12 h):
    /// how a retry waits without sleeping.
    pub async fn hide(&self, receipt: &str, delay: Duration) -> ApiResult<()> {
        let seconds = delay.as_secs().min(12 * 3600) as i32;
        self.sqs
            .change_message_visibility()
            .queue_url(self.url()?)
            .receipt_handle(receipt)
            .visibility_timeout(seconds)
            .send()
            .await
            .map_err(sqs_error)?;
        Ok(())
    }

    /// Up to `max` messages visible now (no long poll: it would outlast the
    /// SDK's 3 s attempt, `shared::aws`). For the local poller and tests.
    pub async fn receive(&self, max: i32) -> ApiResult<Vec<aws_sdk_sqs::types::Message>> {
        let out = self
            .sqs
            .receive_message()
            .queue_url(self.url()?)
            .max_number_of_messages(max.clamp(1, 10))
            .message_system_attribute_names(
                aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
            )
            .message_system_attribute_names(
                aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId,
            )
            .send()
            .await
            .map_err(sqs_error)?;
        Ok(out.messages.unwrap_or_default())
    }

    pub async fn delete(&self, receipt: &str) -> ApiResult<()> {
        self.sqs
            .delete_message()
            .queue_url(self.url()?)
            .receipt_handle(receipt)
            .send()
            .await
            .map_err(sqs_error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQS takes a message of at most 256 KiB, and as much for a whole
    /// batch: messages name what to do (an id), never carry a payload, so
    /// the largest is a few hundred bytes and a batch of ten far under.
    #[test]
    fn the_largest_message_and_batch_are_far_under_what_sqs_takes() {
        const SQS_MESSAGE: usize = 256 * 1024;
        let largest = QueueMessage::Deliver {
            delivery_id: Uuid::max(),
            manual: true,
            request: Some(Uuid::max()),
        };
        let largest = largest.body().len();
        assert!(largest < 200, "{largest} bytes");
        assert!(largest * SEND_BATCH < SQS_MESSAGE / 100);
    }

    #[test]
    fn messages_say_their_kind() {
        let id = Uuid::nil();
        let announce = QueueMessage::Announce { outbox_id: id };
        assert_eq!(
            announce.body(),
            format!(r#"{{"kind":"announce","outbox_id":"{id}"}}"#)
        );
        let deliver: QueueMessage =
            serde_json::from_str(&format!(r#"{{"kind":"deliver","delivery_id":"{id}"}}"#)).unwrap();
        assert_eq!(
            deliver,
            QueueMessage::Deliver {
                delivery_id: id,
                manual: false,
                request: None,
            }
        );
    }
}
