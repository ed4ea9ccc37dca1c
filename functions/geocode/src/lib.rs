//! Geocoding: an address to coordinates through the configured provider
//! (Google's Geocoding API, `google.rs`). Contract: api-v1.md, "Geocode";
//! the answer: docs/decisions/geocoding.md, "Geocoding".

pub mod google;

use axum::Router;
use axum::routing::post;
use shared::ApiResult;
use shared::auth::ReadData;
use shared::error::codes;
use shared::http::Ctx;
use shared::http::Json;
use shared::http::body::JsonBody;
use shared::http::envelope::Data;
use shared::model::geocode::{GeocodeRequest, GeocodeResult};
use shared::model::quota::GEOCODING;
use shared::state::AppState;

pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/geocode", post(geocode))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// POST /api/v1/geocode — read:data — `address`, or `street_address` +
/// `postal_code` + `city`; 404 `geocode_not_found`, 429
/// `geocode_rate_limited` (200 an hour per key), 503
/// `geocode_not_configured`, 502 `geocode_provider_error`, 504
/// `geocode_timeout`.
async fn geocode(
    ctx: Ctx<ReadData>,
    JsonBody(body): JsonBody<GeocodeRequest>,
) -> ApiResult<Json<Data<GeocodeResult>>> {
    let query = body.validate()?;
    if !ctx.geocode_key.is_configured() {
        return Err(
            codes::GEOCODE_NOT_CONFIGURED.with("geocoding is not configured in this deployment")
        );
    }
    // Every provider call costs, found or not: counted before it is made.
    ctx.spend(&GEOCODING).await?;
    Ok(Json(Data(google::geocode(&ctx, &query).await?)))
}
