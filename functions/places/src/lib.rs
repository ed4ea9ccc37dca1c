//! Nearby places: receiving points, worksites and factories around a
//! point, nearest first, from the geo index. Contract: api-v1.md, "Nearby
//! places"; result rows: docs/decisions/nearby-places.md, "Nearby places".

use axum::Router;
use axum::routing::get;
use shared::ApiResult;
use shared::auth::ReadData;
use shared::http::Ctx;
use shared::http::Json;
use shared::http::envelope::List;
use shared::http::query::QueryPairs;
use shared::model::place::{NearbyQuery, Place};
use shared::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/places/nearby", get(nearby))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/v1/places/nearby — read:data — `lat`, `lng` required;
/// `radius_km` 1..100 (40), `types` (receiving_point), `limit` 1..50 (20);
/// nearest first; 422 `validation_error` naming the parameter.
async fn nearby(ctx: Ctx<ReadData>, QueryPairs(pairs): QueryPairs) -> ApiResult<Json<List<Place>>> {
    let query = NearbyQuery::from_pairs(&pairs)?;
    Ok(Json(List(
        ctx.store.places().nearby(ctx.org_id, &query).await?,
    )))
}
