//! Worksites: list, create, read (with people and metadata), partial
//! update, archive, restore, people. Contract: api-v1.md, "Sites" and
//! "Archivable records". A partner granted access reads sites by id.

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
use shared::http::path::{PathId, SiteId};
use shared::http::query::QueryParams;
use shared::model::archive::ListQuery;
use shared::model::site::{CreateSite, PatchSite, Site, SitePerson, SiteRecord};
use shared::state::AppState;
use shared::store::engine::calls::CallCounter;
use shared::store::records::members::Membership;
use shared::store::records::org_records::{Record, archiving, restoring};
use std::cmp::Reverse;
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

/// A site of the key's organization, or of an organization that granted
/// it access, with the members who work there. An own site and its members
/// are read at once.
async fn visible<S>(ctx: &Ctx<S>, id: Uuid) -> ApiResult<(SiteRecord, Vec<SitePerson>)> {
    let sites = ctx.store.sites();
    let (site, members) = CallCounter::together(async {
        tokio::join!(sites.get(ctx.org_id, id), working_at(ctx, ctx.org_id, id))
    })
    .await;
    if let Some(site) = site? {
        return Ok((site, members?));
    }
    let (site, _scope) = ctx
        .store
        .grants()
        .granted_record::<SiteRecord>(ctx.org_id, id)
        .await?
        .ok_or_else(SiteRecord::not_found)?;
    let members = working_at(ctx, site.org_id, id).await?;
    Ok((site, members))
}

/// The active members of organization `org` who work at site `site`.
async fn working_at<S>(ctx: &Ctx<S>, org: Uuid, site: Uuid) -> ApiResult<Vec<SitePerson>> {
    let members = ctx.store.members().at_site(org, site).await?;
    Ok(members.iter().map(Membership::site_person).collect())
}

/// A write's answer: the site's single view (its people read beside the
/// write's read of the site, before anything is written).
fn written((site, members): (SiteRecord, Vec<SitePerson>)) -> Json<Data<Site>> {
    Json(Data(site.detail(members)))
}

/// GET /api/v1/sites — read:data — newest first; `status=active` (default) or `all`;
/// pages by size (`cursor`).
async fn list(
    ctx: Ctx<ReadData>,
    QueryParams(query): QueryParams<ListQuery>,
    QueryParams(at): QueryParams<PageAt>,
) -> ApiResult<Json<Page<Site>>> {
    let sites = ctx.store.sites().list(ctx.org_id, query.status).await?;
    let rows = sites.iter().map(SiteRecord::row).collect();
    ctx.page_by_size(query.of("sites"), at, rows, |_, site| Reverse(site.id))
        .await
}

/// POST /api/v1/sites — write:data — 201 with the site.
async fn create(ctx: Ctx<WriteData>, JsonBody(body): JsonBody<CreateSite>) -> ApiResult<Response> {
    let site = body.validate(ctx.org_id, shared::model::now())?;
    ctx.commit(ctx.store.sites().create(&site), created).await
}

/// A new site's answer: 201 with its single view (nobody works there yet).
async fn created(_: AppState, site: SiteRecord) -> ApiResult<Created<Site>> {
    Ok(Created {
        path: format!("/api/v1/sites/{}", site.id),
        data: site.detail(Vec::new()),
    })
}

/// GET /api/v1/sites/{siteId} — read:data — archived included, with its people (`members`) and metadata.
async fn read(ctx: Ctx<ReadData>, PathId(id, _): PathId<SiteId>) -> ApiResult<Json<Data<Site>>> {
    let (site, members) = visible(&ctx, id).await?;
    Ok(Json(Data(site.detail(members))))
}

/// PATCH /api/v1/sites/{siteId} — write:data — partial; 409 `record_archived` when archived.
async fn update(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SiteId>,
    JsonBody(body): JsonBody<PatchSite>,
) -> ApiResult<Json<Data<Site>>> {
    let changes = body.validate(ctx.org_id)?;
    let people = working_at(&ctx, ctx.org_id, id);
    let modified = ctx
        .store
        .sites()
        .modify_beside(ctx.org_id, id, people, |site| {
            changes.apply(site, shared::model::now())
        })
        .await?;
    Ok(written(modified))
}

/// DELETE /api/v1/sites/{siteId} — write:data — archives; 409 `already_archived`.
async fn archive_site(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<SiteId>,
) -> ApiResult<Json<Data<Site>>> {
    let people = working_at(&ctx, ctx.org_id, id);
    let sites = ctx.store.sites();
    Ok(written(
        sites
            .modify_beside(ctx.org_id, id, people, archiving)
            .await?,
    ))
}

/// POST /api/v1/sites/{siteId}/restore — write:data — 409 `not_archived`.
async fn restore(ctx: Ctx<WriteData>, PathId(id, _): PathId<SiteId>) -> ApiResult<Response> {
    let people = working_at(&ctx, ctx.org_id, id);
    let sites = ctx.store.sites();
    let restored = sites.modify_beside(ctx.org_id, id, people, restoring);
    ctx.commit(restored, async |_, site| Ok(written(site)))
        .await
}

/// GET /api/v1/sites/{siteId}/members — read:data — the site's people (contact person, then
/// the members who work there by name), no e-mail; pages by size (`cursor`).
async fn members(
    ctx: Ctx<ReadData>,
    PathId(id, _): PathId<SiteId>,
    QueryParams(at): QueryParams<PageAt>,
) -> ApiResult<Json<Page<SitePerson>>> {
    let (site, members) = visible(&ctx, id).await?;
    let list = format!("sites/{id}/members");
    ctx.page_by_size(list, at, site.people(members), |_, person| {
        let SitePerson {
            member_id,
            first_name,
            last_name,
            ..
        } = person;
        (
            member_id.is_some(),
            last_name.clone(),
            first_name.clone(),
            *member_id,
        )
    })
    .await
}
