//! Factories: list, create, archive, restore. Contract: api-v1.md,
//! "Factories" and "Archivable records". Read, archive and restore follow
//! the sites' paths: GET and DELETE /api/v1/factories/{factoryId},
//! POST /api/v1/factories/{factoryId}/restore.

use axum::Router;
use axum::response::Response;
use axum::routing::{get, post};
use shared::ApiResult;
use shared::auth::{ReadData, WriteData};
use std::cmp::Reverse;

use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::{Created, Data, Page};
use shared::http::pages_by_size::PageAt;
use shared::http::path::{FactoryId, PathId};
use shared::http::query::QueryParams;
use shared::model::archive::ListQuery;
use shared::model::factory::{CreateFactory, Factory, FactoryRecord};
use shared::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/factories", get(list).post(create))
        .route("/api/v1/factories/{factoryId}", get(read).delete(archive))
        .route("/api/v1/factories/{factoryId}/restore", post(restore))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/v1/factories — read:data — this organization's, newest first; `status=active`
/// (default) or `all`; pages by size (`cursor`).
async fn list(
    ctx: Ctx<ReadData>,
    QueryParams(query): QueryParams<ListQuery>,
    QueryParams(at): QueryParams<PageAt>,
) -> ApiResult<Json<Page<Factory>>> {
    let factories = ctx.store.factories().list(ctx.org_id, query.status).await?;
    let rows = factories.iter().map(FactoryRecord::view).collect();
    ctx.page_by_size(query.of("factories"), at, rows, |_, factory| {
        Reverse(factory.id)
    })
    .await
}

/// POST /api/v1/factories — write:data — 201 with the factory.
async fn create(
    ctx: Ctx<WriteData>,
    JsonBody(body): JsonBody<CreateFactory>,
) -> ApiResult<Response> {
    let factory = body.validate(ctx.org_id, shared::model::now())?;
    let created = async |_, factory: FactoryRecord| {
        Ok(Created {
            path: format!("/api/v1/factories/{}", factory.id),
            data: factory.view(),
        })
    };
    ctx.commit(ctx.store.factories().create(&factory), created)
        .await
}

/// GET /api/v1/factories/{factoryId} — read:data — archived included.
async fn read(
    ctx: Ctx<ReadData>,
    PathId(id, _): PathId<FactoryId>,
) -> ApiResult<Json<Data<Factory>>> {
    Ok(Json(Data(
        ctx.store.factories().require(ctx.org_id, id).await?.view(),
    )))
}

/// DELETE /api/v1/factories/{factoryId} — write:data — archives; 409 `already_archived`.
async fn archive(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<FactoryId>,
) -> ApiResult<Json<Data<Factory>>> {
    Ok(Json(Data(
        ctx.store.factories().archive(ctx.org_id, id).await?.view(),
    )))
}

/// POST /api/v1/factories/{factoryId}/restore — write:data — 409 `not_archived`.
async fn restore(ctx: Ctx<WriteData>, PathId(id, _): PathId<FactoryId>) -> ApiResult<Response> {
    let factories = ctx.store.factories();
    let restored = factories.restore(ctx.org_id, id);
    ctx.commit(restored, async |_, factory: FactoryRecord| {
        Ok(Json(Data(factory.view())))
    })
    .await
}
