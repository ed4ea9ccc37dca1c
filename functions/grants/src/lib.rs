//! Organization access grants: partners (hauliers) this organization lets
//! read its sites. Contract: api-v1.md, "Organization access grants".
//! Revocation: DELETE /api/v1/org-access-grants/{granteeOrgId} (one grant
//! per grantee), 204.

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{delete, get};
use shared::ApiResult;
use shared::auth::{ReadData, WriteData};
use shared::error::codes;
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::{Data, Page};
use shared::http::pages_by_size::PageAt;
use shared::http::path::{GranteeOrgId, PathId};
use shared::http::query::QueryParams;
use shared::model::grant::{CreateGrant, Grant};
use shared::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/org-access-grants", get(list).post(upsert))
        .route("/api/v1/org-access-grants/{granteeOrgId}", delete(revoke))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/v1/org-access-grants — read:data — grants this organization issued, oldest
/// first; pages by size (`cursor`).
async fn list(
    ctx: Ctx<ReadData>,
    QueryParams(at): QueryParams<PageAt>,
) -> ApiResult<Json<Page<Grant>>> {
    let grants = ctx.store.grants().issued(ctx.org_id).await?;
    let list = "org-access-grants".to_owned();
    ctx.page_by_size(list, at, grants, |_, grant| (grant.created_at, grant.id))
        .await
}

/// POST /api/v1/org-access-grants — write:data — idempotent upsert per
/// grantee: 201 when created, 200 when it existed (scope updated).
async fn upsert(
    ctx: Ctx<WriteData>,
    JsonBody(body): JsonBody<CreateGrant>,
) -> ApiResult<axum::response::Response> {
    let grantee = body.grantee_org_id.0;
    if grantee == ctx.org_id {
        return Err(codes::GRANT_TO_SELF.with("an organization cannot grant access to itself"));
    }
    let scope = body.scope.unwrap_or_default();
    let grants = ctx.store.grants();
    let upserted = grants.upsert(ctx.org_id, grantee, scope);
    ctx.commit(upserted, async |_, (grant, created): (Grant, bool)| {
        let status = if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        Ok((status, Json(Data(grant))))
    })
    .await
}

/// DELETE /api/v1/org-access-grants/{granteeOrgId} — write:data — 204; 404 `grant_not_found`.
async fn revoke(
    ctx: Ctx<WriteData>,
    PathId(grantee, _): PathId<GranteeOrgId>,
) -> ApiResult<StatusCode> {
    ctx.store.grants().revoke(ctx.org_id, grantee).await?;
    Ok(StatusCode::NO_CONTENT)
}
