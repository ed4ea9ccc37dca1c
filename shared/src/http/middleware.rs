//! The layer around every route: request id, DynamoDB call accounting,
//! `X-RateLimit-*` headers on `/api/v1/*`, `Idempotency-Key` (reading the
//! request, keeping the answer), panics as 500, a 500 before Lambda's
//! deadline rather than none at all, one log line
//! (with `ddb_ms`, the time spent waiting on DynamoDB, and `round_trips`,
//! the sequential round trips to it).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::HeaderValue;
use tracing::Instrument;

use super::scope::RequestScope;
use super::{idempotency, multipart};
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
    let time_left = time_left(&request);

    let served = serve(&state, &scope, &span, versioned, request, next);
    let mut response = match time_left {
        None => served.await,
        Some(left) => match tokio::time::timeout(left, served).await {
            Ok(response) => response,
            Err(_) => out_of_time(&state, &scope, &span, versioned),
        },
    };
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

/// The request through its route, with what `/api/v1/*` adds after it.
async fn serve(
    state: &AppState,
    scope: &RequestScope,
    span: &tracing::Span,
    versioned: bool,
    request: Request,
    next: Next,
) -> Response {
    let largest_body = state
        .config
        .max_body_bytes
        .max(multipart::MAX_REQUEST_BYTES);
    let mut response = match idempotency::read(request, scope, largest_body).await {
        Ok(request) => {
            scope
                .calls
                .scope(next.run(request))
                .instrument(span.clone())
                .await
        }
        Err(refused) => refused.into_response(),
    };

    if versioned {
        let mut decision = scope.rate().unwrap_or_else(|| {
            RateLimitDecision::untouched(&state.config.rate_limit, SystemTime::now())
        });
        // Only successes spend budget: an admitted request that did not
        // succeed gives its slot back. At the same time, the answer of a
        // request with an `Idempotency-Key` is kept (or the key freed).
        let status = response.status();
        let reservation = scope.take_reservation().filter(|_| !status.is_success());
        let give_back = async {
            match reservation {
                Some(reservation) => Some(ratelimit::release(&state.store, reservation).await),
                None => None,
            }
        };
        let (given_back, settled) = scope
            .calls
            .scope(async {
                tokio::join!(
                    give_back,
                    idempotency::settle(&state.store, &state.sealer, scope, response)
                )
            })
            .instrument(span.clone())
            .await;
        response = settled;
        match given_back {
            Some(Ok(())) => decision = decision.released(),
            Some(Err(error)) => {
                span.in_scope(|| tracing::warn!(%error, "could not give back a rate-limit slot"))
            }
            None => {}
        }
        decision.write_headers(response.headers_mut());
    }
    response
}

/// How long the request may take: until Lambda's deadline, less the time
/// the answer needs to get out. None outside Lambda (dev server, tests:
/// nothing cuts a request off there), and None for a deadline already
/// past on arrival, which no Lambda gives: `cargo lambda watch` sends
/// 600000 (ten minutes after 1970).
fn time_left(request: &Request) -> Option<Duration> {
    use lambda_http::RequestExt;
    let deadline = Duration::from_millis(request.lambda_context_ref()?.deadline);
    let now = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let left = deadline.checked_sub(now).filter(|left| !left.is_zero())?;
    Some(left.saturating_sub(ANSWER_RESERVE))
}

/// Time kept back from Lambda's deadline to send the answer.
const ANSWER_RESERVE: Duration = Duration::from_millis(250);

/// The answer of a request that ran out of time: 500 `internal_error`, as
/// for any failure of the store, before Lambda cuts the invocation off and
/// API Gateway answers without the contract's body. Nothing is given back
/// or settled (that would take more time): a budget slot stays spent, and
/// an `Idempotency-Key` claim lapses after its lease, as when a function
/// dies, since the change may or may not have been made.
fn out_of_time(
    state: &AppState,
    scope: &RequestScope,
    span: &tracing::Span,
    versioned: bool,
) -> Response {
    let mut response = span.in_scope(|| {
        ApiError::internal("the request ran out of time before the invocation's deadline")
            .into_response()
    });
    if versioned {
        scope
            .rate()
            .unwrap_or_else(|| {
                RateLimitDecision::untouched(&state.config.rate_limit, SystemTime::now())
            })
            .write_headers(response.headers_mut());
    }
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
