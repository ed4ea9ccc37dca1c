//! Surplus loads: list (keyset pages), create, read (with a signed waybill
//! link), partial update (the status machine and the route lock), log, and
//! the waybill: uploaded through the API (multipart) or straight to S3
//! through a presigned form and then confirmed. Contract: api-v1.md,
//! "Surplus", "States and transitions", "Surpluses", "Limits".

mod waybill;

use axum::Router;
use axum::response::Response;
use axum::routing::{get, post};
use shared::ApiResult;
use shared::auth::{ReadData, WriteData};
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::{Created, Data, Page};
use shared::http::pages_by_size::PageAt;
use shared::http::path::{PathId, SurplusId};
use shared::http::query::QueryParams;
use shared::model::surplus::{
    CreateSurplus, ListSurpluses, LogEntry, PatchSurplus, Surplus, SurplusRecord,
};
use shared::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/surpluses", get(list).post(create))
        .route("/api/v1/surpluses/{surplusId}", get(read).patch(update))
        .route("/api/v1/surpluses/{surplusId}/log", get(log))
        .route(
            "/api/v1/surpluses/{surplusId}/waybill",
            post(waybill::upload),
        )
        .route(
            "/api/v1/surpluses/{surplusId}/waybill/upload",
            post(waybill::upload_form),
        )
        .route(
            "/api/v1/surpluses/{surplusId}/waybill/confirm",
            post(waybill::confirm),
        )
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// The view of a load, its waybill link signed.
pub(crate) async fn view(state: &AppState, load: &SurplusRecord) -> ApiResult<Surplus> {
    let waybill = match &load.waybill {
        Some(w) => Some(state.links.sign(&w.storage_path).await?),
        None => None,
    };
    Ok(load.view(waybill))
}

/// GET /api/v1/surpluses — read:data — newest first, keyset pages; `status`
/// `open`|`delivered`|`expired`|`all`, `site_id`, `limit` 1..100, `cursor`.
async fn list(
    ctx: Ctx<ReadData>,
    QueryParams(query): QueryParams<ListSurpluses>,
) -> ApiResult<Json<Page<Surplus>>> {
    let limit = query.limit()? as usize;
    let mut listing = ctx.cursors.listing(ctx.org_id, query.filters()).await?;
    let start = listing.start(query.cursor.as_deref()).await?;
    let page = ctx
        .store
        .surpluses()
        .list(
            ctx.org_id,
            query.status.group(),
            query.site_id.map(uuid::Uuid::from),
            start,
            limit,
        )
        .await?;
    let mut rows = Vec::with_capacity(page.rows.len());
    for load in &page.rows {
        rows.push(view(&ctx, load).await?);
    }
    Ok(Json(Page {
        rows,
        next_cursor: listing.next(page.next),
    }))
}

/// POST /api/v1/surpluses — write:data — 201; 422 `site_not_found`,
/// `site_archived`, `receiving_point_not_found`, `receiving_point_archived`, `truck_not_found`.
async fn create(
    ctx: Ctx<WriteData>,
    JsonBody(body): JsonBody<CreateSurplus>,
) -> ApiResult<Response> {
    let mut load = body.validate(ctx.org_id, shared::model::now())?;
    let surpluses = ctx.store.surpluses();
    let created = async |state, load: SurplusRecord| {
        Ok(Created {
            path: format!("/api/v1/surpluses/{}", load.id),
            data: view(&state, &load).await?,
        })
    };
    ctx.commit(surpluses.create(&mut load), created).await
}

/// GET /api/v1/surpluses/{surplusId} — read:data — with a signed waybill link; 404 `surplus_not_found`.
async fn read(
    ctx: Ctx<ReadData>,
    PathId(id, _): PathId<SurplusId>,
) -> ApiResult<Json<Data<Surplus>>> {
    let load = ctx.store.surpluses().require(ctx.org_id, id).await?;
    Ok(Json(Data(view(&ctx, &load).await?)))
}

/// PATCH /api/v1/surpluses/{surplusId} — write:data — 409
/// `invalid_status_transition`, `waybill_required`; 422 `route_locked`.
async fn update(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SurplusId>,
    JsonBody(body): JsonBody<PatchSurplus>,
) -> ApiResult<Json<Data<Surplus>>> {
    let changes = body.validate()?;
    let (load, announced) = ctx
        .store
        .surpluses()
        .update(ctx.org_id, id, &changes)
        .await?;
    if let Some(outbox) = announced {
        ctx.queue.announce(ctx.org_id, outbox.id).await;
    }
    Ok(Json(Data(view(&ctx, &load).await?)))
}

/// GET /api/v1/surpluses/{surplusId}/log — read:data — oldest first; pages by size
/// (`cursor`: a log only grows, so a place is an index).
async fn log(
    ctx: Ctx<ReadData>,
    PathId(id, _): PathId<SurplusId>,
    QueryParams(at): QueryParams<PageAt>,
) -> ApiResult<Json<Page<LogEntry>>> {
    let entries = ctx.store.surpluses().log(ctx.org_id, id).await?;
    let list = format!("surpluses/{id}/log");
    ctx.page_by_size(list, at, entries, |index, _| index).await
}
