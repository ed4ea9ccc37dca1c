//! Members: the organization's people. List, create (a person with an
//! active membership), read, partial update, leave (DELETE), role set and
//! reset. Contract: api-v1.md, "Member", "Membership" and "Members".

use axum::Router;
use axum::response::Response;
use axum::routing::{get, put};
use shared::ApiResult;
use shared::auth::password;
use shared::auth::{ReadData, WriteData};
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::{Created, Data, Page};
use shared::http::pages_by_size::PageAt;
use shared::http::path::{MemberId, PathId};
use shared::http::query::QueryParams;
use shared::model::member::{
    CreateMember, ListMembers, Member, MemberChanges, PatchMember, PutRole, Role,
};
use shared::model::quota::PASSWORD_HASHING;
use shared::state::AppState;
use shared::store::records::members::{Membership, StoredLogin};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/members", get(list).post(create))
        .route(
            "/api/v1/members/{memberId}",
            get(read).patch(update).delete(leave),
        )
        .route(
            "/api/v1/members/{memberId}/role",
            put(set_role).delete(reset_role),
        )
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/v1/members — read:data — active members by name; `include_inactive=true` adds
/// the others; pages by size (`cursor`).
async fn list(
    ctx: Ctx<ReadData>,
    QueryParams(query): QueryParams<ListMembers>,
    QueryParams(at): QueryParams<PageAt>,
) -> ApiResult<Json<Page<Member>>> {
    let members = ctx
        .store
        .members()
        .list(ctx.org_id, query.include_inactive)
        .await?;
    let rows = members.iter().map(Membership::view).collect();
    let list = format!("members?include_inactive={}", query.include_inactive);
    ctx.page_by_size(list, at, rows, |_, member| {
        let Member {
            last_name,
            first_name,
            id,
            ..
        } = member;
        (last_name.clone(), first_name.clone(), *id)
    })
    .await
}

/// POST /api/v1/members — write:data — 201; 409 `phone_conflict`,
/// `email_conflict`; 429 `password_rate_limited` (100 with a password an
/// hour per key).
async fn create(
    ctx: Ctx<WriteData>,
    JsonBody(body): JsonBody<CreateMember>,
) -> ApiResult<Response> {
    let new = body.validate()?;
    let login = match &new.login {
        None => None,
        Some(login) => {
            // Each hash costs CPU and memory, created or not: counted first.
            ctx.spend(&PASSWORD_HASHING).await?;
            let plain = login.password.clone();
            let password_hash = tokio::task::spawn_blocking(move || password::hash(&plain))
                .await
                .map_err(shared::ApiError::internal)??;
            Some(StoredLogin {
                email: login.email.clone(),
                password_hash,
            })
        }
    };
    let members = ctx.store.members();
    let created = async |_, member: Membership| {
        Ok(Created {
            path: format!("/api/v1/members/{}", member.profile_id),
            data: member.view(),
        })
    };
    ctx.commit(members.add(ctx.org_id, &new, login), created)
        .await
}

/// GET /api/v1/members/{memberId} — read:data — inactive included; 404 `member_not_found`.
async fn read(
    ctx: Ctx<ReadData>,
    PathId(id, _): PathId<MemberId>,
) -> ApiResult<Json<Data<Member>>> {
    Ok(Json(Data(
        ctx.store.members().require(ctx.org_id, id).await?.view(),
    )))
}

/// PATCH /api/v1/members/{memberId} — write:data — names, phone, role, active;
/// 403 `org_admin_managed`; 409 `phone_conflict`.
async fn update(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<MemberId>,
    JsonBody(body): JsonBody<PatchMember>,
) -> ApiResult<Json<Data<Member>>> {
    let changes = body.validate()?;
    change(&ctx, id, &changes).await
}

/// DELETE /api/v1/members/{memberId} — write:data — leaves; 409 `already_inactive`.
async fn leave(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<MemberId>,
) -> ApiResult<Json<Data<Member>>> {
    Ok(Json(Data(
        ctx.store.members().leave(ctx.org_id, id).await?.view(),
    )))
}

/// PUT /api/v1/members/{memberId}/role — write:data — one role (never `org_admin`).
async fn set_role(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<MemberId>,
    JsonBody(body): JsonBody<PutRole>,
) -> ApiResult<Json<Data<Member>>> {
    let changes = MemberChanges {
        role: Some(body.role.into()),
        ..MemberChanges::default()
    };
    change(&ctx, id, &changes).await
}

/// DELETE /api/v1/members/{memberId}/role — write:data — back to `member`; stays active.
async fn reset_role(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<MemberId>,
) -> ApiResult<Json<Data<Member>>> {
    let changes = MemberChanges {
        role: Some(Role::Member),
        ..MemberChanges::default()
    };
    change(&ctx, id, &changes).await
}

async fn change<S>(
    ctx: &Ctx<S>,
    id: uuid::Uuid,
    changes: &MemberChanges,
) -> ApiResult<Json<Data<Member>>> {
    let member = ctx.store.members().update(ctx.org_id, id, changes).await?;
    Ok(Json(Data(member.view())))
}
