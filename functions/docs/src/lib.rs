//! Unauthenticated routes: health, the OpenAPI description and the HTML reference.

use axum::Json;
use axum::Router;
use axum::routing::get;
use serde_json::{Value, json};
use shared::AppState;

pub fn routes() -> Router<AppState> {
    Router::new().route("/api/health", get(health))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/health — no auth; auth headers are ignored.
async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}
