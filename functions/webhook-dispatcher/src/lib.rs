//! The webhook dispatcher. From the webhook queue (an SQS event source
//! reporting per-message failures) it fans each announced outbox record
//! out to the organization's webhooks and makes each delivery: payload,
//! signatures, one POST, the attempt recorded; a failure waits for the
//! next attempt by hiding its message (no sleeping), and a delivery whose
//! attempts ran out goes to the dead-letter queue. On a schedule it sweeps
//! outbox records the fast path did not queue, and puts in place the files
//! whose records committed but whose requests died before the copy
//! (`files::promote`). Contract: api-v1.md, "Events"; design:
//! docs/decisions/webhooks-delivery.md, "Webhooks (delivery)" and "Surplus loads".

mod attempt_metrics;
pub mod client;
mod headers;
mod invocation;
pub mod payload;
pub mod peer;
pub mod policy;
mod receiver_turn;
mod share;
pub mod signature;
mod tickets;

pub use invocation::Invocation;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use futures::StreamExt;
use shared::ApiResult;
use shared::metrics::Report;
use shared::model::delivery::{DeliveryAttempt, DeliveryStatus};
use shared::model::webhook::{WEBHOOK_PING, WebhookRecord};
use shared::queue::QueueMessage;
use shared::state::AppState;
use shared::store::engine::calls::CallCounter;
use shared::store::records::deliveries::Claim;
use tracing::Instrument;
use uuid::Uuid;

use crate::client::{Reach, Sender};
use crate::policy::Policy;

/// Messages of one batch handled at once.
const CONCURRENCY: usize = 10;

/// The caller its AWS calls are recorded under (its binary's name, as in
/// the template: `aws_calls::record`).
const CALLER: &str = "webhook-dispatcher";

pub struct Dispatcher {
    state: AppState,
    policy: Policy,
    sender: Sender,
}

/// The message goes back to the queue (its visibility already set): for
/// a retry's wait or an attempt in flight elsewhere (`Again::LATER`), or
/// because an error kept it from being handled (why: its line's `Cause`).
#[derive(Debug)]
struct Again(Option<&'static str>);

impl Again {
    const LATER: Again = Again(None);
}

impl Dispatcher {
    pub fn new(state: AppState, policy: Policy) -> Self {
        let reach = Reach {
            allow_loopback: state.config.webhooks.allow_loopback,
        };
        let sender = Sender::new(&policy, reach);
        Dispatcher {
            state,
            policy,
            sender,
        }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// A Lambda invocation: an SQS batch, or (anything else) the schedule's
    /// sweep.
    pub async fn invoke(
        &self,
        event: serde_json::Value,
        invocation: Invocation,
    ) -> Result<serde_json::Value, shared::state::BoxError> {
        // One span of the trace for the invocation, under Lambda's.
        let span = tracing::info_span!(
            "invocation",
            trace_id = invocation.trace_id().as_deref(),
            invocation_id = invocation.request_id.as_deref(),
            otel.name = if event.get("Records").is_some() {
                "webhook queue batch"
            } else {
                "sweep"
            },
            otel.kind = "consumer",
        );
        if let Some(header) = &invocation.trace_header {
            shared::telemetry::traces::adopt(&span, header);
        }
        // Every reading of the time by the state's clock (`shared::clock`).
        let clock = self.state.clock.clone();
        let result = invocation
            .clone()
            .scope(clock.scope(self.invoked(event, &invocation)))
            .instrument(span.clone())
            .await;
        drop(span);
        shared::telemetry::traces::flush().await;
        result
    }

    async fn invoked(
        &self,
        event: serde_json::Value,
        invocation: &Invocation,
    ) -> Result<serde_json::Value, shared::state::BoxError> {
        if event.get("Records").is_some() {
            let batch: SqsEvent = serde_json::from_value(event)?;
            Ok(serde_json::to_value(self.handled(batch, invocation).await)?)
        } else {
            let (announced, files) = self.scheduled().await?;
            if files.failed > 0 {
                // An invocation error: the dispatcher's errors alarm.
                return Err(format!(
                    "{} staged files could not be put in place (tried again next sweep)",
                    files.failed
                )
                .into());
            }
            Ok(serde_json::json!({
                "announced": announced,
                "files_promoted": files.promoted,
                "files_dropped": files.dropped,
                "files_refused": files.refused,
                "files_failed": files.failed,
            }))
        }
    }

    /// The schedule's work: the outbox records the fast path missed
    /// (`sweep`), the staged files left by requests that died after their
    /// commit, and the support issues the tracker holds twice (`tickets`).
    /// All run; the first error of the first two is reported.
    pub async fn scheduled(&self) -> ApiResult<(usize, shared::files::promote::Swept)> {
        let clock = self.state.clock.clone();
        let calls = CallCounter::for_caller(CALLER);
        Box::pin(clock.scope(calls.scope(self.swept()))).await
    }

    async fn swept(&self) -> ApiResult<(usize, shared::files::promote::Swept)> {
        let settle = chrono::TimeDelta::from_std(self.policy.sweep_settle)
            .unwrap_or(chrono::TimeDelta::minutes(2));
        let state = &self.state;
        let files = shared::files::promote::sweep(
            &state.files,
            &state.store,
            self.policy.sweep_hours,
            settle,
        );
        // Boxed: the sweeps' futures side by side are deep.
        let (announced, files, ()) = tokio::join!(
            Box::pin(self.sweep()),
            Box::pin(files),
            Box::pin(self.tickets())
        );
        let files = files?;
        if files != shared::files::promote::Swept::default() {
            tracing::warn!(?files, "swept staged files their requests left");
        }
        Ok((announced?, files))
    }

    /// One SQS batch: the ids of the messages to return to the queue.
    pub async fn handle(&self, batch: SqsEvent) -> SqsBatchResponse {
        let clock = self.state.clock.clone();
        clock
            .scope(self.handled(batch, &Invocation::default()))
            .await
    }

    async fn handled(&self, batch: SqsEvent, invocation: &Invocation) -> SqsBatchResponse {
        // The messages of one delivery go one after the other, in the
        // order they came (a second manual retry would otherwise meet the
        // first one's lease and wait it out); the others at once, each
        // in its organization's share of the dispatcher (`share`).
        let places = &share::Batch::new(self.policy.batch_lease);
        let failed: Vec<String> = futures::stream::iter(by_delivery(batch.records))
            .map(|messages| async move {
                let mut failed = Vec::new();
                for message in messages {
                    failed.extend(self.one(&message, invocation, places).await);
                }
                failed
            })
            .buffer_unordered(CONCURRENCY)
            .flat_map(futures::stream::iter)
            .collect()
            .await;
        let mut response = SqsBatchResponse::default();
        response.batch_item_failures = failed
            .into_iter()
            .map(|id| {
                let mut failure = BatchItemFailure::default();
                failure.item_identifier = id;
                failure
            })
            .collect();
        response
    }

    /// One message, logged with what it cost: its id when it goes back to
    /// the queue.
    async fn one(
        &self,
        message: &SqsMessage,
        invocation: &Invocation,
        places: &share::Batch,
    ) -> Option<String> {
        let id = message.message_id.clone().unwrap_or_default();
        let calls = CallCounter::for_caller(CALLER);
        // Boxed: a delivery's future is large (the payload's reads).
        let started = std::time::Instant::now();
        let outcome = Box::pin(calls.scope(self.message(message, places))).await;
        let units = calls.units();
        shared::metrics::delivery::Handled {
            message_id: id.clone(),
            body: message.body.clone().unwrap_or_default(),
            failed: outcome.as_ref().err().and_then(|Again(failed)| *failed),
            returned: outcome.is_err(),
            latency_ms: started.elapsed().as_secs_f64() * 1000.0,
            ddb_ms: calls.waited().as_secs_f64() * 1000.0,
            ddb_calls: calls.get().into(),
            round_trips: calls.round_trips().into(),
            read_units: units.read,
            write_units: units.write,
            aws_calls: calls.aws_calls_text(),
            trace_id: invocation.trace_id(),
            invocation_id: invocation.request_id.clone(),
        }
        .log(&self.state.config.metrics);
        outcome.err().map(|_| id)
    }

    async fn message(&self, message: &SqsMessage, places: &share::Batch) -> Result<(), Again> {
        let body = message.body.as_deref().unwrap_or_default();
        let Ok(parsed) = serde_json::from_str::<QueueMessage>(body) else {
            tracing::error!(message_id = ?message.message_id, "not a webhook queue message: moved to the dead-letter queue");
            return self.state.queue.dead_letter(body).await.map_err(|e| {
                tracing::error!(error = %e, "dead-letter queue unavailable");
                Again(Some("dead_letter_failed"))
            });
        };
        match parsed {
            QueueMessage::Announce { outbox_id } => match self.announce(outbox_id).await {
                Ok(queued) => {
                    tracing::info!(%outbox_id, queued, "announced");
                    Ok(())
                }
                Err(error) => {
                    tracing::error!(%outbox_id, %error, "announcement failed; SQS will return it");
                    Err(Again(Some("announcement_failed")))
                }
            },
            QueueMessage::Deliver {
                delivery_id,
                manual,
                request,
            } => {
                let owner = (!manual).then(|| message.message_id.clone().unwrap_or_default());
                let receipt = message.receipt_handle.as_deref().unwrap_or_default();
                self.deliver(delivery_id, owner.as_deref(), request, receipt, body, places)
                    .await
                    .unwrap_or_else(|error| {
                        tracing::error!(%delivery_id, %error, "delivery not attempted; SQS will return it");
                        Err(Again(Some("not_attempted")))
                    })
            }
        }
    }

    /// Fans outbox record `outbox_id` out: a delivery per webhook of its
    /// organization and event, each queued unless already attempted, then
    /// the record leaves the sweeper's index. Returns the deliveries queued.
    pub async fn announce(&self, outbox_id: Uuid) -> ApiResult<usize> {
        let store = &self.state.store;
        let Some(outbox) = store.outbox().get(outbox_id).await? else {
            return Ok(0);
        };
        // A ping's one webhook (if it still exists), else every webhook of
        // the organization registered for the event.
        let hooks: Vec<WebhookRecord> = match outbox.webhook_id {
            Some(one) => store
                .webhooks()
                .get(outbox.org_id, one)
                .await?
                .into_iter()
                .collect(),
            None => store
                .webhooks()
                .list(outbox.org_id)
                .await?
                .into_iter()
                .filter(|hook| hook.event == outbox.event)
                .collect(),
        };
        // One delivery per webhook (at most `MAX_WEBHOOKS`), made at once.
        let outbox = &outbox;
        let made = hooks.iter().map(|hook| async move {
            let delivery = outbox.delivery_to(hook.id);
            let fresh = store.deliveries().create(&delivery).await?
                || store
                    .deliveries()
                    .get(delivery.id)
                    .await?
                    .is_some_and(|d| d.attempts == 0 && d.status == DeliveryStatus::Pending);
            ApiResult::Ok(fresh.then_some(delivery.id))
        });
        let queued: Vec<(Uuid, QueueMessage)> = futures::future::try_join_all(made)
            .await?
            .into_iter()
            .flatten()
            .map(|delivery_id| {
                let message = QueueMessage::Deliver {
                    delivery_id,
                    manual: false,
                    request: None,
                };
                (outbox.org_id, message)
            })
            .collect();
        self.state.queue.send_all(&queued).await?;
        store.outbox().mark_dispatched(outbox.id).await?;
        Ok(queued.len())
    }

    /// Makes one attempt of delivery `id` (a scheduled one when `owner`,
    /// the queue message's id, is given; else an integrator's retry,
    /// `request`, made once), or puts it off when its organization's share
    /// of the dispatcher is full (`share`).
    async fn deliver(
        &self,
        id: Uuid,
        owner: Option<&str>,
        request: Option<Uuid>,
        receipt: &str,
        body: &str,
        places: &share::Batch,
    ) -> ApiResult<Result<(), Again>> {
        let store = &self.state.store;
        match store
            .deliveries()
            .claim(id, owner, request, self.policy.lease)
            .await?
        {
            // A recovery's attempt of a delivery that succeeded since it
            // was queued (its scheduled retry got through first) is not
            // made: the receiver has it.
            Claim::Claimed(delivery, _)
                if request.is_some()
                    && delivery.recovery == request
                    && delivery.status == DeliveryStatus::Succeeded =>
            {
                tracing::info!(delivery_id = %id, "delivery succeeded before its recovery's attempt: message dropped");
                Ok(Ok(()))
            }
            Claim::Claimed(delivery, until) => {
                let claimed = (*delivery, until);
                let made = self
                    .attempt(claimed, owner, request, receipt, body, places)
                    .await;
                // Its place in the share, if it took one, is given back
                // however the attempt ended.
                places.done(self, id).await;
                made
            }
            Claim::Busy => {
                // Another attempt is in flight: come back after its lease.
                self.state.queue.hide(receipt, self.policy.lease).await?;
                Ok(Err(Again::LATER))
            }
            Claim::Done => {
                tracing::info!(delivery_id = %id, "delivery made, failed or owned by another message: message dropped");
                Ok(Ok(()))
            }
        }
    }

    /// The attempt of a delivery claimed until a time (as `deliver`'s),
    /// put off when its request finds its organization's share full.
    async fn attempt(
        &self,
        (delivery, until): (shared::model::delivery::DeliveryRecord, i64),
        owner: Option<&str>,
        request: Option<Uuid>,
        receipt: &str,
        body: &str,
        places: &share::Batch,
    ) -> ApiResult<Result<(), Again>> {
        let store = &self.state.store;
        let id = delivery.id;
        // The webhook and the payload's records, read at once (a ping's
        // payload needs the webhook alone).
        let config = &self.state.config;
        let webhooks = store.webhooks();
        let pinged = delivery.event == WEBHOOK_PING;
        let (hook, envelope) =
            futures::try_join!(webhooks.get(delivery.org_id, delivery.webhook_id), async {
                if pinged {
                    return Ok(None);
                }
                payload::build(
                    store,
                    &self.state.links,
                    config.webhooks.admin_url_template.as_deref(),
                    &delivery,
                )
                .await
                .map(Some)
            },)?;
        let Some(hook) = hook else {
            tracing::info!(delivery_id = %id, "webhook deleted: nothing to deliver");
            return Ok(Ok(()));
        };
        // The body, and when what it announces was committed (its lags).
        let (payload, committed) = match envelope {
            None => (
                serde_json::to_vec(&payload::ping(&delivery, &hook)),
                Some(delivery.created_at),
            ),
            Some(Some(envelope)) => (serde_json::to_vec(&envelope), envelope.data.delivered_at),
            Some(None) => {
                tracing::info!(delivery_id = %id, "load archived: nothing to deliver");
                return Ok(Ok(()));
            }
        };
        let payload = payload.map_err(shared::ApiError::internal)?;
        let Some(turn) = self.turn(&delivery, &hook, places).await? else {
            self.put_off(&delivery, until, owner.is_some(), request, places)
                .await?;
            return Ok(Ok(()));
        };
        let attempted_at = shared::model::now();
        let outcome = match turn.held {
            None => {
                let secrets = self.state.webhook_secrets(&hook).await?;
                let headers = self.headers(
                    &hook,
                    &delivery.event,
                    &secrets,
                    id,
                    attempted_at.unix(),
                    &payload,
                );
                self.sender.post(&hook.url, headers, payload).await
            }
            Some(_) => receiver_turn::no_request(),
        };

        let attempt = DeliveryAttempt {
            delivery_id: id,
            surplus_id: delivery.surplus_id,
            event: delivery.event.clone(),
            attempt: delivery.attempts + 1,
            manual: owner.is_none(),
            attempted_at,
            succeeded: outcome.succeeded(),
            status_code: outcome.status,
            error: outcome.error,
            duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
            held: turn.held,
        };
        let wait = self.policy.wait_after(attempt.attempt).map(|scheduled| {
            let now = shared::clock::now().timestamp_millis();
            turn.wait(scheduled, now, id, &self.policy.receivers)
        });
        let mut after = delivery.clone();
        after.attempts = attempt.attempt;
        after.last_attempt_at = Some(attempted_at);
        after.status = match (&outcome, owner, wait) {
            (o, _, _) if o.succeeded() => DeliveryStatus::Succeeded,
            (_, Some(_), None) => DeliveryStatus::Failed,
            _ => delivery.status,
        };
        let made_for = request.filter(|_| owner.is_none());
        // The attempt a recovery queued is made: the delivery may be
        // recovered again once the cool-down has passed.
        if made_for.is_some() && after.recovery == made_for {
            after.recovery = None;
            after.recovery_until = None;
            after.recovered_at =
                Some(i64::try_from(attempted_at.unix_millis()).unwrap_or(i64::MAX));
        }
        store
            .deliveries()
            .record(&after, &attempt, made_for)
            .await?;
        let change = self.answered(&delivery, &turn, &outcome).await;
        let dead_lettered = !attempt.succeeded && owner.is_some() && wait.is_none();
        attempt_metrics::report(&attempt, &outcome, &hook, committed, dead_lettered, change)
            .log(&self.state.config.metrics);

        if attempt.succeeded || owner.is_none() {
            return Ok(Ok(()));
        }
        match wait {
            Some(wait) => {
                self.state.queue.hide(receipt, wait).await?;
                Ok(Err(Again::LATER))
            }
            None => {
                self.state.queue.dead_letter(body).await?;
                tracing::warn!(delivery_id = %id, attempts = attempt.attempt, "attempts ran out: delivery failed, moved to the dead-letter queue");
                Ok(Ok(()))
            }
        }
    }

    /// Re-announces outbox records the fast path did not queue (older than
    /// the policy's settle time, within its look-back). Returns how many.
    pub async fn sweep(&self) -> ApiResult<usize> {
        let settle = chrono::TimeDelta::from_std(self.policy.sweep_settle)
            .unwrap_or(chrono::TimeDelta::minutes(2));
        let unsent = self
            .state
            .store
            .outbox()
            .undispatched(self.policy.sweep_hours, settle)
            .await?;
        let messages: Vec<(Uuid, QueueMessage)> = unsent
            .iter()
            .map(|record| {
                let announce = QueueMessage::Announce {
                    outbox_id: record.id,
                };
                (record.org_id, announce)
            })
            .collect();
        self.state.queue.send_all(&messages).await?;
        if !messages.is_empty() {
            tracing::warn!(
                count = messages.len(),
                "swept outbox records the fast path missed"
            );
        }
        Ok(messages.len())
    }
}

/// `messages` grouped by the delivery they make (in the order they came),
/// each other message alone.
fn by_delivery(messages: Vec<SqsMessage>) -> Vec<Vec<SqsMessage>> {
    let mut groups: Vec<Vec<SqsMessage>> = Vec::new();
    let mut of_delivery: std::collections::HashMap<Uuid, usize> = std::collections::HashMap::new();
    for message in messages {
        let body = message.body.as_deref().unwrap_or_default();
        match serde_json::from_str::<QueueMessage>(body) {
            Ok(QueueMessage::Deliver { delivery_id, .. }) => match of_delivery.get(&delivery_id) {
                Some(&group) => groups[group].push(message),
                None => {
                    of_delivery.insert(delivery_id, groups.len());
                    groups.push(vec![message]);
                }
            },
            _ => groups.push(vec![message]),
        }
    }
    groups
}
