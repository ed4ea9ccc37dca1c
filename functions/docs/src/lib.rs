//! Unauthenticated routes: health, the OpenAPI description and the HTML
//! reference. Behind API Gateway this function also takes the `$default`
//! route, so unknown paths answer the contract's JSON 404.

mod html;

use std::sync::LazyLock;

use axum::Json;
use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::{Value, json};
use shared::AppState;

/// The OpenAPI 3 description, kept beside this crate.
pub const OPENAPI_YAML: &str = include_str!("../openapi.yaml");

/// The description as JSON, parsed once (a unit test proves it parses).
pub static OPENAPI: LazyLock<Value> =
    LazyLock::new(|| serde_yaml_ng::from_str(OPENAPI_YAML).expect("openapi.yaml is valid YAML"));

static DOCS_HTML: LazyLock<String> = LazyLock::new(|| html::render(&OPENAPI));

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/health", get(health))
        .route("/openapi.yaml", get(openapi))
        .route("/docs", get(docs))
}

pub fn router(state: AppState) -> Router {
    shared::http::app(routes(), state)
}

/// GET /api/health — no auth; auth headers are ignored.
async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// GET /openapi.yaml — the machine-readable description.
async fn openapi() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/yaml; charset=utf-8")],
        OPENAPI_YAML,
    )
}

/// GET /docs — the HTML reference, self-contained (no network needed).
async fn docs() -> Html<&'static str> {
    Html(DOCS_HTML.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_parses_and_states_version_1_0_0() {
        assert_eq!(OPENAPI["info"]["version"], "1.0.0");
        assert!(OPENAPI["openapi"].as_str().unwrap().starts_with("3."));
    }

    #[test]
    fn html_lists_every_operation() {
        let page = html::render(&OPENAPI);
        for (path, item) in OPENAPI["paths"].as_object().unwrap() {
            for method in item
                .as_object()
                .unwrap()
                .keys()
                .filter(|m| html::METHODS.contains(&m.as_str()))
            {
                let id = html::anchor(method, path);
                assert!(
                    page.contains(&format!("id=\"{id}\"")),
                    "{method} {path} missing"
                );
            }
        }
        assert!(
            !page.contains("<script") && !page.contains("<link"),
            "the page loads nothing from the network"
        );
        assert!(
            page.contains("<code>rate_limited</code>"),
            "error codes are listed"
        );
        // The events the service sends are on the page too.
        let events = OPENAPI["webhooks"].as_object().unwrap();
        assert!(!events.is_empty());
        for name in events.keys() {
            let id = html::anchor("post", name);
            assert!(
                page.contains(&format!("id=\"{id}\"")),
                "event {name} missing"
            );
        }
    }
}
