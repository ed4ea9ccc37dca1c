//! Organizations: the key's organization, its direct children, sub-organization
//! creation and self-update. Contract: api-v1.md, "Organizations".

use axum::Router;
use axum::response::Response;
use axum::routing::get;
use shared::auth::{ReadOrgs, ReadOwnOrg, WriteOrgsSelf};
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::{Created, Data, List};
use shared::http::path::{OrgId, PathId};
use shared::model::org::{CreateOrg, Organization, PatchOrg};
use shared::state::AppState;
use shared::{ApiError, ApiResult};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/orgs", get(list).post(create))
        .route("/api/v1/orgs/{orgId}", get(read).patch(update))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/v1/orgs — read:orgs — the key's organization as a one-row list;
/// 404 `org_not_found` when it is missing or soft-deleted.
async fn list(ctx: Ctx<ReadOwnOrg>) -> ApiResult<Json<List<Organization>>> {
    let org = ctx
        .store
        .orgs()
        .get(ctx.org_id)
        .await?
        .ok_or_else(ApiError::org_not_found)?;
    Ok(Json(List(vec![org.org])))
}

/// GET /api/v1/orgs/{orgId} — read:orgs — the key's organization or a direct child.
async fn read(
    ctx: Ctx<ReadOrgs>,
    PathId(id, _): PathId<OrgId>,
) -> ApiResult<Json<Data<Organization>>> {
    let org = ctx
        .store
        .orgs()
        .get(id)
        .await?
        .ok_or_else(ApiError::org_not_found)?
        .org;
    if org.id != ctx.org_id && org.parent_id != Some(ctx.org_id) {
        return Err(ApiError::org_not_found());
    }
    Ok(Json(Data(org)))
}

/// POST /api/v1/orgs — write:orgs:self — a sub-organization of the key's
/// organization; 201 with the new organization; 409 `org_name_conflict`,
/// `child_limit_reached`, `too_many_org_admins`.
async fn create(
    ctx: Ctx<WriteOrgsSelf>,
    JsonBody(body): JsonBody<CreateOrg>,
) -> ApiResult<Response> {
    if body.parent_id.is_some_and(|parent| parent.0 != ctx.org_id) {
        return Err(ApiError::OrgIdMismatch(
            "parent_id must be the key's organization",
        ));
    }
    let new = body.validate()?;
    let orgs = ctx.store.orgs();
    let created = async |_, org: Organization| {
        Ok(Created {
            path: format!("/api/v1/orgs/{}", org.id),
            data: org,
        })
    };
    ctx.commit(orgs.create_child(ctx.org_id, &new), created)
        .await
}

/// PATCH /api/v1/orgs/{orgId} — write:orgs:self — updates the key's own organization.
async fn update(
    ctx: Ctx<WriteOrgsSelf>,
    PathId(id, _): PathId<OrgId>,
    JsonBody(body): JsonBody<PatchOrg>,
) -> ApiResult<Json<Data<Organization>>> {
    if id != ctx.org_id {
        return Err(ApiError::OrgIdMismatch(
            "the path's organization is not the key's organization",
        ));
    }
    let changes = body.validate()?;
    let org = ctx.store.orgs().update(id, &changes).await?;
    Ok(Json(Data(org)))
}
