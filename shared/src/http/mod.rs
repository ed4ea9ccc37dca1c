//! HTTP plumbing shared by every function: extractors, envelopes and the
//! layer around each router.

pub mod body;
pub mod ctx;
pub mod envelope;
pub mod idempotency;
pub mod json;
pub mod lifecycle;
pub mod middleware;
pub mod multipart;
pub mod pages_by_size;
pub mod path;
pub mod payload;
pub mod query;

use axum::Router;
use tower_http::catch_panic::CatchPanicLayer;

pub use ctx::Ctx;
pub use json::Json;

use crate::state::AppState;

/// Serves `routes` with the shared layer: the same service runs on Lambda,
/// in the dev server (all groups merged) and in tests.
pub fn app(routes: Router<AppState>, state: AppState) -> Router {
    routes
        .fallback(middleware::not_found)
        .method_not_allowed_fallback(middleware::method_not_allowed)
        .layer(CatchPanicLayer::custom(middleware::panic_response))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::around,
        ))
        .with_state(state)
}
