//! Outbound webhooks of the organization: register (the secret is shown
//! once), list (never a secret), delete. Contract: api-v1.md, "Webhooks",
//! "Events".

use axum::Json;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{delete, get};
use shared::auth::{ReadData, WriteData};
use shared::http::Ctx;
use shared::http::body::JsonBody;
use shared::http::envelope::{Data, List};
use shared::http::path::{PathId, WebhookId};
use shared::model::webhook::{CreateWebhook, CreatedWebhook, Webhook, WebhookRecord, new_secret};
use shared::{ApiResult, AppState};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/webhooks", get(list).post(create))
        .route("/api/v1/webhooks/{webhookId}", delete(remove))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/v1/webhooks — read:data — oldest first, without secrets.
async fn list(ctx: Ctx<ReadData>) -> ApiResult<Json<List<Webhook>>> {
    let hooks = ctx.store.webhooks().list(ctx.org_id).await?;
    Ok(Json(List(hooks.iter().map(WebhookRecord::view).collect())))
}

/// POST /api/v1/webhooks — write:data — 201 with the secret, once; 409
/// `webhook_already_exists`; 422 `event_deprecated`, `validation_error`.
async fn create(
    ctx: Ctx<WriteData>,
    JsonBody(body): JsonBody<CreateWebhook>,
) -> ApiResult<impl IntoResponse> {
    let new = body.validate()?;
    let id = uuid::Uuid::now_v7();
    let secret = new_secret();
    let record = WebhookRecord {
        id,
        org_id: ctx.org_id,
        event: new.event.to_owned(),
        url: new.url,
        verification_mode: new.verification_mode,
        sealed_secret: ctx.sealer.seal(id.as_bytes(), &secret).await?,
        created_at: shared::model::now(),
    };
    ctx.store.webhooks().create(&record).await?;
    let location = format!("/api/v1/webhooks/{id}");
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(Data(CreatedWebhook {
            webhook: record.view(),
            secret,
        })),
    ))
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
