//! The local stand-in for the SQS event source mapping: takes the messages
//! visible on the local webhook queue (moto), hands them to the dispatcher
//! as one batch, and deletes those it did not return (a returned message
//! keeps the visibility the dispatcher gave it). Short polls once a second:
//! a long poll would outlast the SDK's 3 s attempt (`shared::aws`). Also
//! runs the sweeper.

use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use shared::ApiResult;
use shared::queue::WebhookQueue;
use webhook_dispatcher::Dispatcher;

/// Hands one batch of visible messages to `dispatcher`. Returns how many
/// messages it took.
pub async fn poll_once(dispatcher: &Dispatcher, queue: &WebhookQueue) -> ApiResult<usize> {
    let received = queue.receive(10).await?;
    if received.is_empty() {
        return Ok(0);
    }
    let mut batch = SqsEvent::default();
    batch.records = received
        .iter()
        .map(|message| {
            let mut record = SqsMessage::default();
            record.message_id = message.message_id.clone();
            record.receipt_handle = message.receipt_handle.clone();
            record.body = message.body.clone();
            record
        })
        .collect();
    let response = dispatcher.handle(batch).await;
    for message in &received {
        let returned = response
            .batch_item_failures
            .iter()
            .any(|failure| Some(&failure.item_identifier) == message.message_id.as_ref());
        if !returned {
            queue
                .delete(message.receipt_handle.as_deref().unwrap_or_default())
                .await?;
        }
    }
    Ok(received.len())
}

/// Polls every second and sweeps every minute, until the process ends.
pub async fn run(dispatcher: Dispatcher, queue: WebhookQueue) {
    let mut sweep = tokio::time::interval(Duration::from_secs(60));
    let mut poll = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = sweep.tick() => {
                if let Err(error) = dispatcher.sweep().await {
                    tracing::warn!(%error, "sweep failed");
                }
            }
            _ = poll.tick() => {
                if let Err(error) = poll_once(&dispatcher, &queue).await {
                    tracing::warn!(%error, "webhook queue poll failed");
                }
            }
        }
    }
}
