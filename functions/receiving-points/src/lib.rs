//! Receiving points: list, create under an active site, read (with opening
//! hours and signed photo links), partial update, archive, restore.
//! Contract: api-v1.md, "Receiving points" and "Archivable records".

use axum::Router;
use axum::response::Response;
use axum::routing::{get, post};
use shared::auth::{ReadData, WriteData};
use std::cmp::Reverse;

use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::{Created, Data, Page};
use shared::http::idempotency::SealAtRest;
use shared::http::pages_by_size::PageAt;
use shared::http::path::{PathId, ReceivingPointId};
use shared::http::query::QueryParams;
use shared::model::archive::ListQuery;
use shared::model::receiving_point::{
    CreateReceivingPoint, PatchReceivingPoint, ReceivingPoint, ReceivingPointRecord,
};
use shared::model::site::SiteRecord;
use shared::state::AppState;
use shared::{ApiError, ApiResult};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/receiving-points", get(list).post(create))
        .route(
            "/api/v1/receiving-points/{rpId}",
            get(read).patch(update).delete(archive),
        )
        .route("/api/v1/receiving-points/{rpId}/restore", post(restore))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// The single view, photos signed.
async fn detail(state: &AppState, point: &ReceivingPointRecord) -> ApiResult<ReceivingPoint> {
    Ok(point.detail(state.links.sign_all(&point.photos).await?))
}

/// GET /api/v1/receiving-points — read:data — newest first; `status=active` (default) or
/// `all`; pages by size (`cursor`).
async fn list(
    ctx: Ctx<ReadData>,
    QueryParams(query): QueryParams<ListQuery>,
    QueryParams(at): QueryParams<PageAt>,
) -> ApiResult<Json<Page<ReceivingPoint>>> {
    let points = ctx
        .store
        .receiving_points()
        .list(ctx.org_id, query.status)
        .await?;
    let rows = points.iter().map(ReceivingPointRecord::row).collect();
    let list = query.of("receiving-points");
    ctx.page_by_size(list, at, rows, |_, point| Reverse(point.id))
        .await
}

/// POST /api/v1/receiving-points — write:data — 201; 422 `site_not_found` / `site_archived`.
async fn create(
    ctx: Ctx<WriteData>,
    JsonBody(body): JsonBody<CreateReceivingPoint>,
) -> ApiResult<Response> {
    let point = body.validate(ctx.org_id, shared::model::now())?;
    let site = ctx
        .store
        .sites()
        .get(ctx.org_id, point.site_id)
        .await?
        .ok_or_else(ApiError::site_not_found)?;
    if site.archived_at.is_some() {
        return Err(ApiError::site_archived());
    }
    let points = ctx.store.receiving_points();
    let stored = points.create_under::<SiteRecord>(&point, site.id, ApiError::site_archived);
    let created = async |state, point: ReceivingPointRecord| {
        Ok(Created {
            path: format!("/api/v1/receiving-points/{}", point.id),
            data: detail(&state, &point).await?,
        })
    };
    ctx.commit(stored, created).await
}

/// GET /api/v1/receiving-points/{rpId} — read:data — with `open_hours` and signed `photos`.
async fn read(
    ctx: Ctx<ReadData>,
    PathId(id, _): PathId<ReceivingPointId>,
) -> ApiResult<Json<Data<ReceivingPoint>>> {
    let point = ctx.store.receiving_points().require(ctx.org_id, id).await?;
    Ok(Json(Data(detail(&ctx, &point).await?)))
}

/// PATCH /api/v1/receiving-points/{rpId} — write:data — partial; `site_id`
/// cannot change; 409 `record_archived` when archived.
async fn update(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<ReceivingPointId>,
    JsonBody(body): JsonBody<PatchReceivingPoint>,
) -> ApiResult<Json<Data<ReceivingPoint>>> {
    let changes = body.validate()?;
    let point = ctx
        .store
        .receiving_points()
        .modify(ctx.org_id, id, |p| changes.apply(p, shared::model::now()))
        .await?;
    Ok(Json(Data(detail(&ctx, &point).await?)))
}

/// DELETE /api/v1/receiving-points/{rpId} — write:data — archives; 409 `already_archived`.
async fn archive(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<ReceivingPointId>,
) -> ApiResult<Json<Data<ReceivingPoint>>> {
    let point = ctx.store.receiving_points().archive(ctx.org_id, id).await?;
    Ok(Json(Data(detail(&ctx, &point).await?)))
}

/// POST /api/v1/receiving-points/{rpId}/restore — write:data — 409 `not_archived`.
async fn restore(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<ReceivingPointId>,
) -> ApiResult<Response> {
    let points = ctx.store.receiving_points();
    let restored = points.restore(ctx.org_id, id);
    ctx.commit(restored, async |state, point: ReceivingPointRecord| {
        // Its photos' links are signed for 24 hours: kept sealed.
        Ok(SealAtRest(Json(Data(detail(&state, &point).await?))))
    })
    .await
}
