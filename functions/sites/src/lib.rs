//! Worksites: list, create, read (with people and metadata), partial
//! update, archive, restore, people. Contract: api-v1.md, "Sites" and
//! "Archivable records". A partner granted access reads sites by id.

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use shared::auth::{ReadData, WriteData};
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::{Data, List};
use shared::http::path::{PathId, SiteId};
use shared::http::query::QueryParams;
use shared::model::archive::ListQuery;
use shared::model::site::{CreateSite, PatchSite, Site, SitePerson, SiteRecord};
use shared::store::records::Record;
use shared::{ApiResult, AppState};
use uuid::Uuid;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/sites", get(list).post(create))
        .route(
            "/api/v1/sites/{siteId}",
            get(read).patch(update).delete(archive_site),
        )
        .route("/api/v1/sites/{siteId}/restore", post(restore))
        .route("/api/v1/sites/{siteId}/members", get(members))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// A site of the key's organization, or of an organization that granted it access.
async fn visible<S>(ctx: &Ctx<S>, id: Uuid) -> ApiResult<SiteRecord> {
    if let Some(site) = ctx.store.sites().get(ctx.org_id, id).await? {
        return Ok(site);
    }
    let granted = ctx
        .store
        .grants()
        .granted_record::<SiteRecord>(ctx.org_id, id)
        .await?;
    granted
        .map(|(site, _scope)| site)
        .ok_or_else(SiteRecord::not_found)
}

/// GET /api/v1/sites — read:data — newest first; `status=active` (default) or `all`.
async fn list(
    ctx: Ctx<ReadData>,
    QueryParams(query): QueryParams<ListQuery>,
) -> ApiResult<Json<List<Site>>> {
    let sites = ctx.store.sites().list(ctx.org_id, query.status).await?;
    Ok(Json(List(sites.iter().map(SiteRecord::row).collect())))
}

/// POST /api/v1/sites — write:data — 201 with the site.
async fn create(
    ctx: Ctx<WriteData>,
    JsonBody(body): JsonBody<CreateSite>,
) -> ApiResult<impl IntoResponse> {
    let site = body.validate(ctx.org_id, shared::model::now())?;
    ctx.store.sites().create(&site).await?;
    let location = format!("/api/v1/sites/{}", site.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(Data(site.detail())),
    ))
}

/// GET /api/v1/sites/{siteId} — read:data — archived included, with members and metadata.
async fn read(ctx: Ctx<ReadData>, PathId(id, _): PathId<SiteId>) -> ApiResult<Json<Data<Site>>> {
    Ok(Json(Data(visible(&ctx, id).await?.detail())))
}

/// PATCH /api/v1/sites/{siteId} — write:data — partial; 409 `record_archived` when archived.
async fn update(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SiteId>,
    JsonBody(body): JsonBody<PatchSite>,
) -> ApiResult<Json<Data<Site>>> {
    let changes = body.validate(ctx.org_id)?;
    let site = ctx
        .store
        .sites()
        .modify(ctx.org_id, id, |site| {
            changes.apply(site, shared::model::now())
        })
        .await?;
    Ok(Json(Data(site.detail())))
}

/// DELETE /api/v1/sites/{siteId} — write:data — archives; 409 `already_archived`.
async fn archive_site(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SiteId>,
) -> ApiResult<Json<Data<Site>>> {
    Ok(Json(Data(
        ctx.store.sites().archive(ctx.org_id, id).await?.detail(),
    )))
}

/// POST /api/v1/sites/{siteId}/restore — write:data — 409 `not_archived`.
async fn restore(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SiteId>,
) -> ApiResult<Json<Data<Site>>> {
    Ok(Json(Data(
        ctx.store.sites().restore(ctx.org_id, id).await?.detail(),
    )))
}

/// GET /api/v1/sites/{siteId}/members — read:data — the site's people, no e-mail.
async fn members(
    ctx: Ctx<ReadData>,
    PathId(id, _): PathId<SiteId>,
) -> ApiResult<Json<List<SitePerson>>> {
    Ok(Json(List(visible(&ctx, id).await?.people())))
}
