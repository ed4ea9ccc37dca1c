//! Outbound webhooks of the organization: register (the secret is shown
//! once), list (never a secret), delete; and, beyond the contract, each
//! webhook's recent delivery attempts, a retry of one delivery, a roll of
//! its secret (the one before signing beside it for a while), and a ping
//! (a signed `webhook.ping` to it alone) with its own log.
//! Contract: api-v1.md, "Webhooks", "Events"; docs/webhooks.md.

use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use shared::ApiResult;
use shared::auth::{ReadData, WriteData};
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::{Created, Data, List, Page};
use shared::http::idempotency::SealAtRest;
use shared::http::path::{DeliveryId, PathId, WebhookId};
use shared::http::query::QueryParams;
use shared::model::delivery::{
    Delivery, DeliveryAttempt, ListDeliveries, PingRequested, Recover, RecoveryQueued,
};
use shared::model::quota::{WEBHOOK_PINGS, WEBHOOK_RECOVERIES};
use shared::model::webhook;
use shared::model::webhook::{
    CreateWebhook, CreatedWebhook, ListedWebhook, RollSecret, RolledWebhook, Webhook, WebhookRecord,
};
use shared::state::AppState;
use shared::store::engine::calls::CallCounter;
use shared::store::exactly_once::outbox::OutboxRecord;
use shared::store::records::deliveries::AttemptLog;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/webhooks", get(list).post(create))
        .route("/api/v1/webhooks/{webhookId}", delete(remove))
        .route(
            "/api/v1/webhooks/{webhookId}/roll-secret",
            post(roll_secret),
        )
        .route("/api/v1/webhooks/{webhookId}/deliveries", get(deliveries))
        .route(
            "/api/v1/webhooks/{webhookId}/deliveries/{deliveryId}/retry",
            post(retry),
        )
        .route("/api/v1/webhooks/{webhookId}/ping", post(ping))
        .route("/api/v1/webhooks/{webhookId}/recover", post(recover))
        .route("/api/v1/webhooks/{webhookId}/pings", get(pings))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/v1/webhooks — read:data — oldest first, without secrets, each with its
/// receiver's health (`healthy`, `slowed`, `parked`).
async fn list(ctx: Ctx<ReadData>) -> ApiResult<Json<List<ListedWebhook>>> {
    let (webhooks, receivers) = (ctx.store.webhooks(), ctx.store.receivers());
    let (hooks, failing) = CallCounter::together(async {
        tokio::join!(webhooks.list(ctx.org_id), receivers.failing(ctx.org_id))
    })
    .await;
    let failing = failing?;
    let now = shared::clock::now().timestamp_millis();
    let rows = hooks?
        .iter()
        .map(|hook| {
            let receiver = webhook::receiver(ctx.org_id, &hook.url);
            let health = failing.get(&receiver).cloned().unwrap_or_default();
            ListedWebhook {
                webhook: hook.view(),
                receiver: health.view(now),
            }
        })
        .collect();
    Ok(Json(List(rows)))
}

/// POST /api/v1/webhooks — write:data — 201 with the secret, once; 409
/// `webhook_already_exists`; 422 `event_deprecated`, `validation_error`.
async fn create(
    ctx: Ctx<WriteData>,
    JsonBody(body): JsonBody<CreateWebhook>,
) -> ApiResult<Response> {
    let new = body.validate(ctx.config.webhooks.allow_loopback)?;
    let registered = async {
        let (record, _) = ctx.register_webhook(ctx.org_id, new).await?;
        Ok(record)
    };
    ctx.commit(registered, created).await
}

/// A new webhook's answer: 201 with its secret, opened from the record
/// (the answer is kept for a retry only sealed).
async fn created(
    state: AppState,
    record: WebhookRecord,
) -> ApiResult<SealAtRest<Created<CreatedWebhook>>> {
    let secret = state.open_webhook_secret(&record).await?;
    Ok(SealAtRest(Created {
        path: format!("/api/v1/webhooks/{}", record.id),
        data: CreatedWebhook {
            webhook: record.view(),
            secret,
        },
    }))
}

/// POST /api/v1/webhooks/{webhookId}/roll-secret — write:data — 200 with
/// the new secret, once; the secret before signs beside it for
/// `overlap_hours` (24; 0 to 168); 404 `webhook_not_found`; 422
/// `validation_error`.
async fn roll_secret(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<WebhookId>,
    JsonBody(body): JsonBody<RollSecret>,
) -> ApiResult<Response> {
    let overlap = body.overlap()?;
    let rolled = async {
        let (record, _) = ctx.roll_webhook_secret(ctx.org_id, id, overlap).await?;
        Ok(record)
    };
    ctx.commit(rolled, rolled_answer).await
}

/// A roll's answer: 200 with the new secret, opened from the record (the
/// answer is kept for a retry only sealed).
async fn rolled_answer(
    state: AppState,
    record: WebhookRecord,
) -> ApiResult<SealAtRest<Json<Data<RolledWebhook>>>> {
    let secret = state.open_webhook_secret(&record).await?;
    let until = record
        .previous_secret_until
        .ok_or_else(|| shared::ApiError::internal("a rolled webhook without an overlap"))?;
    Ok(SealAtRest(Json(Data(RolledWebhook {
        webhook: record.view(),
        secret,
        previous_secret_expires_at: until,
    }))))
}

/// DELETE /api/v1/webhooks/{webhookId} — write:data — 200 with the removed
/// webhook; 404 `webhook_not_found`.
async fn remove(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<WebhookId>,
) -> ApiResult<Json<Data<Webhook>>> {
    let removed = ctx.store.webhooks().delete(ctx.org_id, id).await?;
    Ok(Json(Data(removed.view())))
}

/// GET /api/v1/webhooks/{webhookId}/deliveries — read:data — attempts,
/// newest first, keyset pages; 404 `webhook_not_found`; 422
/// `invalid_cursor`, `validation_error`.
async fn deliveries(
    ctx: Ctx<ReadData>,
    PathId(id, _): PathId<WebhookId>,
    QueryParams(query): QueryParams<ListDeliveries>,
) -> ApiResult<Json<Page<DeliveryAttempt>>> {
    attempts(&ctx, id, AttemptLog::Deliveries, &query).await
}

/// GET /api/v1/webhooks/{webhookId}/pings — read:data — the pings'
/// attempts, newest first, keyset pages; as the deliveries list.
async fn pings(
    ctx: Ctx<ReadData>,
    PathId(id, _): PathId<WebhookId>,
    QueryParams(query): QueryParams<ListDeliveries>,
) -> ApiResult<Json<Page<DeliveryAttempt>>> {
    attempts(&ctx, id, AttemptLog::Pings, &query).await
}

/// A page of one of webhook `id`'s attempt logs: one round trip, the
/// attempts shown only if the webhook is the organization's.
async fn attempts(
    ctx: &Ctx<ReadData>,
    id: uuid::Uuid,
    log: AttemptLog,
    query: &ListDeliveries,
) -> ApiResult<Json<Page<DeliveryAttempt>>> {
    let limit = query.limit()? as usize;
    let scope = match log {
        AttemptLog::Deliveries => format!("webhook={id}"),
        AttemptLog::Pings => format!("webhook={id}&log=pings"),
    };
    let mut listing = ctx.cursors.listing(ctx.org_id, scope).await?;
    let start = listing.start(query.cursor.as_deref()).await?;
    let (webhooks, deliveries) = (ctx.store.webhooks(), ctx.store.deliveries());
    let (webhook, attempts) = CallCounter::together(async {
        tokio::join!(
            webhooks.require(ctx.org_id, id),
            deliveries.attempts(id, log, start, limit),
        )
    })
    .await;
    webhook?;
    let (rows, next) = attempts?;
    Ok(Json(Page {
        rows,
        next_cursor: listing.next(next),
    }))
}

/// POST /api/v1/webhooks/{webhookId}/deliveries/{deliveryId}/retry —
/// write:data — 202: the delivery is queued for one more attempt with the
/// same delivery id; 404 `webhook_not_found`, `delivery_not_found`.
async fn retry(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<WebhookId>,
    PathId(delivery_id, _): PathId<DeliveryId>,
) -> ApiResult<impl IntoResponse> {
    let delivery = ctx.retry_delivery(ctx.org_id, id, delivery_id).await?;
    Ok((StatusCode::ACCEPTED, Json(Data::<Delivery>(delivery))))
}

/// POST /api/v1/webhooks/{webhookId}/ping — write:data — 202: a signed
/// `webhook.ping` is queued for this webhook alone, through the same path
/// as a load's delivery (its attempts in the pings log); 404
/// `webhook_not_found`; 429 `rate_limited` past `WEBHOOK_PINGS` (10 an hour
/// a receiver: the URL less its query, whatever webhook names it), with
/// `Retry-After`.
async fn ping(ctx: Ctx<WriteData>, PathId(id, _): PathId<WebhookId>) -> ApiResult<Response> {
    let hook = ctx.store.webhooks().require(ctx.org_id, id).await?;
    ctx.spend_for(&WEBHOOK_PINGS, webhook::receiver(ctx.org_id, &hook.url))
        .await?;
    let ping = OutboxRecord::ping(ctx.org_id, hook.id, shared::model::now());
    let answer = ctx.commit(ctx.ping_webhook(&ping), accepted).await?;
    ctx.queue.announce(ctx.org_id, ping.id).await;
    Ok(answer)
}

/// A ping's answer: 202 with the delivery it makes.
async fn accepted(
    _: AppState,
    requested: PingRequested,
) -> ApiResult<(StatusCode, Json<Data<PingRequested>>)> {
    Ok((StatusCode::ACCEPTED, Json(Data(requested))))
}

/// POST /api/v1/webhooks/{webhookId}/recover — write:data — 202: one more
/// attempt of each delivery whose last attempt failed (or ran out), of
/// those the log shows attempts of since `since` (within 30 days), at most
/// 100 a request (`next_since` resumes); one already queued by another
/// recovery, or whose recovered attempt was made within the hour
/// (`RECOVERY_COOLDOWN`), is not queued again; 404 `webhook_not_found`;
/// 422 `validation_error`; 429 `rate_limited` past `WEBHOOK_RECOVERIES`
/// (10 an hour a receiver), with `Retry-After`.
async fn recover(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<WebhookId>,
    JsonBody(body): JsonBody<Recover>,
) -> ApiResult<(StatusCode, Json<Data<RecoveryQueued>>)> {
    let since = body.since(shared::model::now())?;
    let hook = ctx.store.webhooks().require(ctx.org_id, id).await?;
    ctx.spend_for(
        &WEBHOOK_RECOVERIES,
        webhook::receiver(ctx.org_id, &hook.url),
    )
    .await?;
    let queued = ctx.recover_deliveries(ctx.org_id, id, since).await?;
    Ok((StatusCode::ACCEPTED, Json(Data(queued))))
}
