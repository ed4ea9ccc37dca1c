//! The layer around every route: request id, DynamoDB call accounting,
//! `X-RateLimit-*` headers on `/api/v1/*`, panics as 500, one log line
//! (with `ddb_ms`, the time spent waiting on DynamoDB, and `round_trips`,
//! the sequential round trips to it).

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::HeaderValue;
use tracing::Instrument;

use super::scope::RequestScope;
use crate::error::ApiError;
use crate::ratelimit::{self, RateLimitDecision};
use crate::state::AppState;
use crate::store::calls::DynamoCalls;

pub const REQUEST_ID: &str = "x-request-id";

pub async fn around(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = request_id(&request);
    let versioned = request.uri().path().starts_with("/api/v1/");
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("(none)", MatchedPath::as_str)
        .to_owned();
    let span = tracing::info_span!("request", %request_id, method = %request.method(), %route);
    let scope = Arc::new(RequestScope::default());
    request.extensions_mut().insert(scope.clone());

    let mut response = scope
        .calls
        .scope(next.run(request))
        .instrument(span.clone())
        .await;

    if versioned {
        let mut decision = scope.rate().unwrap_or_else(|| {
            RateLimitDecision::untouched(&state.config.rate_limit, SystemTime::now())
        });
        // Only successes spend budget: an admitted request that did not
        // succeed gives its slot back.
        if let Some(reservation) = scope.take_reservation()
            && !response.status().is_success()
        {
            match scope
                .calls
                .scope(ratelimit::release(&state.store, reservation))
                .instrument(span.clone())
                .await
            {
                Ok(()) => decision = decision.released(),
                Err(error) => span
                    .in_scope(|| tracing::warn!(%error, "could not give back a rate-limit slot")),
            }
        }
        decision.write_headers(response.headers_mut());
    }
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let cost = DynamoCalls {
        calls: scope.calls.get(),
        round_trips: scope.calls.round_trips(),
    };
    response.extensions_mut().insert(cost);
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            latency_ms = started.elapsed().as_secs_f64() * 1000.0,
            ddb_ms = scope.calls.waited().as_secs_f64() * 1000.0,
            ddb_calls = cost.calls,
            round_trips = cost.round_trips,
            org_id = scope.org().map(|o| o.to_string()),
            "request served"
        );
    });
    response
}

/// API Gateway's request id when behind it; else a well-formed incoming
/// `x-request-id`; else a new one.
fn request_id(request: &Request) -> String {
    use lambda_http::RequestExt;
    use lambda_http::request::RequestContext;
    if let Some(RequestContext::ApiGatewayV2(context)) = request.request_context_ref()
        && let Some(id) = &context.request_id
    {
        return id.clone();
    }
    request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 128
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned)
}

/// A panic in a handler: logged, answered as 500 `internal_error`.
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let detail = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("panic");
    ApiError::internal(format!("handler panicked: {detail}")).into_response()
}

pub async fn not_found() -> ApiError {
    ApiError::RouteNotFound
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
