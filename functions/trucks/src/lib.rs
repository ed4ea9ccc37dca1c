//! Trucks: list (in service, with the last known position), create, read,
//! partial update. Contract: api-v1.md, "Truck" and "Trucks". Positions and
//! taking a truck out of service are the operator's (admin CLI).

use axum::Router;
use axum::response::Response;
use axum::routing::get;
use shared::ApiResult;
use shared::auth::{ReadData, WriteData};
use std::cmp::Reverse;

use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::{Created, Data, Page};
use shared::http::pages_by_size::PageAt;
use shared::http::path::{PathId, TruckId};
use shared::http::query::QueryParams;
use shared::model::truck::{CreateTruck, PatchTruck, Truck, TruckRecord};
use shared::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/trucks", get(list).post(create))
        .route("/api/v1/trucks/{truckId}", get(read).patch(update))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/v1/trucks — read:data — trucks in service, newest first; pages by size
/// (`cursor`).
async fn list(
    ctx: Ctx<ReadData>,
    QueryParams(at): QueryParams<PageAt>,
) -> ApiResult<Json<Page<Truck>>> {
    let trucks = ctx.store.trucks().list(ctx.org_id).await?;
    let rows = trucks.iter().map(TruckRecord::view).collect();
    ctx.page_by_size("trucks".to_owned(), at, rows, |_, truck| Reverse(truck.id))
        .await
}

/// POST /api/v1/trucks — write:data — 201; 403 `org_id_mismatch`; 409
/// `license_conflict`; 422 `driver_not_found`, `factory_not_found`, `factory_archived`.
async fn create(ctx: Ctx<WriteData>, JsonBody(body): JsonBody<CreateTruck>) -> ApiResult<Response> {
    let truck = body.validate(ctx.org_id, shared::model::now())?;
    let created = async |_, truck: TruckRecord| {
        Ok(Created {
            path: format!("/api/v1/trucks/{}", truck.id),
            data: truck.view(),
        })
    };
    ctx.commit(ctx.store.trucks().create(&truck), created).await
}

/// GET /api/v1/trucks/{truckId} — read:data — 404 `truck_not_found` unless in service here.
async fn read(ctx: Ctx<ReadData>, PathId(id, _): PathId<TruckId>) -> ApiResult<Json<Data<Truck>>> {
    Ok(Json(Data(
        ctx.store.trucks().require(ctx.org_id, id).await?.view(),
    )))
}

/// PATCH /api/v1/trucks/{truckId} — write:data — partial; 409 `license_conflict`;
/// 422 `driver_not_found`; a new driver leaves any other truck.
async fn update(
    ctx: Ctx<WriteData>,
    PathId(id, _): PathId<TruckId>,
    JsonBody(body): JsonBody<PatchTruck>,
) -> ApiResult<Json<Data<Truck>>> {
    let changes = body.validate()?;
    let truck = ctx.store.trucks().update(ctx.org_id, id, &changes).await?;
    Ok(Json(Data(truck.view())))
}
