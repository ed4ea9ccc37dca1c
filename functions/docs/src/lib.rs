//! Unauthenticated routes: health, the OpenAPI description and the HTML
//! reference. Behind API Gateway this function also takes the `$default`
//! route, so unknown paths answer the contract's JSON 404.

mod html;

use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use shared::http::Json;
use shared::state::AppState;

/// The OpenAPI 3 description, kept beside this crate.
pub const OPENAPI_YAML: &str = include_str!("../openapi.yaml");

/// The description as JSON, parsed once (a unit test proves it parses).
pub static OPENAPI: LazyLock<Value> =
    LazyLock::new(|| serde_yaml_ng::from_str(OPENAPI_YAML).expect("openapi.yaml is valid YAML"));

/// The body limit the description is written for; a deployment with
/// another `MAX_BODY_BYTES` serves the description rewritten to its own.
const DESCRIBED_BODY_BYTES: usize = 1024 * 1024;

/// What this deployment serves: the description stating its own body
/// limit (as YAML, and as JSON for clients that ask for it), and the HTML
/// page made from it. Built on the first request.
struct Served {
    yaml: Cow<'static, str>,
    json: Vec<u8>,
    html: String,
}

static SERVED: OnceLock<Served> = OnceLock::new();

fn served(state: &AppState) -> &'static Served {
    SERVED.get_or_init(|| {
        let yaml = with_body_limit(state.config.http.max_body_bytes);
        let parsed = match &yaml {
            Cow::Borrowed(_) => Cow::Borrowed(&*OPENAPI),
            Cow::Owned(text) => {
                Cow::Owned(serde_yaml_ng::from_str(text).expect("the rewritten description parses"))
            }
        };
        let json = serde_json::to_vec(&*parsed).expect("JSON of a parsed document");
        let html = html::render(&parsed);
        Served { yaml, json, html }
    })
}

/// The description with `limit` as the largest JSON body, where it names
/// one ("1 MiB" in prose, "1048576 bytes" in the 413 example).
fn with_body_limit(limit: usize) -> Cow<'static, str> {
    if limit == DESCRIBED_BODY_BYTES {
        return Cow::Borrowed(OPENAPI_YAML);
    }
    let prose = if limit.is_multiple_of(DESCRIBED_BODY_BYTES) {
        format!("{} MiB", limit / DESCRIBED_BODY_BYTES)
    } else {
        format!("{limit} bytes")
    };
    Cow::Owned(OPENAPI_YAML.replace("1 MiB", &prose).replace(
        &format!("{DESCRIBED_BODY_BYTES} bytes"),
        &format!("{limit} bytes"),
    ))
}

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

/// GET /openapi.yaml — the machine-readable description: YAML, or JSON
/// when the client accepts JSON and not YAML (what generators that read
/// JSON send).
async fn openapi(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let served = served(&state);
    let accepts = |kind: &str| {
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains(kind))
    };
    if accepts("application/json") && !accepts("yaml") {
        return (
            [(header::CONTENT_TYPE, "application/json")],
            served.json.clone(),
        )
            .into_response();
    }
    (
        [(header::CONTENT_TYPE, "application/yaml; charset=utf-8")],
        served.yaml.as_ref(),
    )
        .into_response()
}

/// GET /docs — the HTML reference, self-contained (no network needed).
async fn docs(State(state): State<AppState>) -> Html<&'static str> {
    Html(served(&state).html.as_str())
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
    fn the_description_states_the_deployments_body_limit() {
        assert!(matches!(with_body_limit(1024 * 1024), Cow::Borrowed(_)));
        let named = |yaml: &str, text: &str| yaml.matches(text).count();
        assert_eq!(
            named(OPENAPI_YAML, "1 MiB"),
            3,
            "the requests' prose, the platform's answers and the 413 response"
        );
        assert_eq!(named(OPENAPI_YAML, "1048576 bytes"), 1, "the 413 example");
        for (limit, prose) in [(4 * 1024 * 1024, "4 MiB"), (200_000, "200000 bytes")] {
            let yaml = with_body_limit(limit);
            assert_eq!(named(&yaml, "1 MiB") + named(&yaml, "1048576 bytes"), 0);
            assert_eq!(named(&yaml, &format!("at most {prose};")), 1, "{prose}");
            assert_eq!(named(&yaml, &format!("larger than\n        {prose}.")), 1);
            assert_eq!(named(&yaml, &format!("larger than {limit} bytes")), 1);
            serde_yaml_ng::from_str::<Value>(&yaml).unwrap();
        }
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
