//! The layer around every route: request id, DynamoDB call accounting,
//! the request's lifecycle around its handler (`lifecycle`: arrival
//! before routing, settlement after, with the `X-RateLimit-*` headers on
//! `/api/v1/*`), an answer Lambda could not return as the contract's 500
//! (`payload`), panics as 500, a 500 before Lambda's deadline rather than
//! none at all, and one line that is both the request's log line (with
//! `ddb_ms`, the time spent waiting on DynamoDB) and its metric line
//! (`metrics::request`).

use std::time::{Duration, Instant, SystemTime};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::HeaderValue;
use tracing::Instrument;

use super::body;
use super::idempotency;
use super::idempotency::Uncertain;
use super::lifecycle::{self, Arriving, Returned, Settled};
use super::multipart;
use super::payload;
use crate::error::{ApiError, ErrorCode, InternalCause};
use crate::gate::WriteGate;
use crate::metrics::{self, Report};
use crate::state::AppState;
use crate::store::engine::calls::{AwsCalls, CallCounter, DynamoCalls};
use crate::store::exactly_once::outcome::Outcome;
use crate::telemetry;

pub const REQUEST_ID: &str = "x-request-id";

pub async fn around(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = request_id(&request);
    let Trace {
        header: trace_header,
        root: trace_id,
        invocation: invocation_id,
    } = trace(&request);
    let versioned = request.uri().path().starts_with("/api/v1/");
    let matched = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_owned());
    let route = matched.as_deref().unwrap_or("(none)");
    let method = request.method().clone();
    let span = tracing::info_span!(
        "request",
        %request_id,
        trace_id = trace_id.as_deref(),
        invocation_id = invocation_id.as_deref(),
        %method,
        %route,
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
    );
    if let Some(header) = &trace_header {
        telemetry::traces::adopt(&span, header);
    }
    let calls = CallCounter::for_caller(format!("{method} {route}"));
    let time_left = time_left(&request);
    let (arriving, mut returned) = lifecycle::begin();

    // Every reading of the time, from arrival to settlement, is by the
    // state's clock (tasks the request spawns carry it: `clock::carried`).
    let served = state
        .clock
        .scope(serve(
            &state,
            &calls,
            &span,
            versioned,
            request,
            next,
            arriving,
            &mut returned,
        ))
        .instrument(span.clone());
    let (mut response, settled) = match time_left {
        None => served.await,
        Some(left) => match tokio::time::timeout(left, served).await {
            Ok(served) => served,
            Err(_) => {
                let mut response = out_of_time(&span);
                let settled = returned.unsettled(&state, versioned, &mut response);
                (response, settled)
            }
        },
    };
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let cost = DynamoCalls {
        calls: calls.get(),
        round_trips: calls.round_trips(),
        units: calls.units(),
        warm: settled.warm,
    };
    response.extensions_mut().insert(cost);
    response
        .extensions_mut()
        .insert(AwsCalls(calls.aws_calls()));
    if let Some(InternalCause(cause)) = response.extensions().get::<InternalCause>() {
        let blamed = calls.blame();
        span.in_scope(|| {
            tracing::error!(
                error = %cause,
                store_operation = blamed.as_ref().map(|c| c.operation.as_str()),
                key_shape = blamed.as_ref().map(|c| c.key_shape.as_str()),
                store_call_failed = blamed.as_ref().map(|c| c.failed),
                "internal error"
            );
        });
    }
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let org_id = settled.org.map(|o| o.to_string());
    let key_id = settled.key.map(|key| key.to_string());
    metrics::request::Served {
        method: method.as_str(),
        route: matched.as_deref(),
        status: response.status().as_u16(),
        code: response
            .extensions()
            .get::<ErrorCode>()
            .map(|c| c.0.as_str()),
        latency_ms,
        read_units: cost.units.read,
        write_units: cost.units.write,
        round_trips: cost.round_trips,
        ddb_ms: calls.waited().as_secs_f64() * 1000.0,
        ddb_calls: cost.calls,
        warm: cost.warm,
        aws_calls: calls.aws_calls_text(),
        rate_window: settled.rate_window,
        replayed: response.headers().contains_key(idempotency::REPLAYED),
        request_id: &request_id,
        trace_id: trace_id.as_deref(),
        invocation_id: invocation_id.as_deref(),
        org_id,
        key_id,
    }
    .log(&state.config.metrics);
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    // The request's span ends here, and goes before the answer does.
    drop(span);
    telemetry::traces::flush().await;
    response
}

/// The request through its lifecycle: arrival, its route, settlement.
#[allow(clippy::too_many_arguments)]
async fn serve(
    state: &AppState,
    calls: &CallCounter,
    span: &tracing::Span,
    versioned: bool,
    request: Request,
    next: Next,
    arriving: Arriving,
    returned: &mut Returned,
) -> (Response, Settled) {
    let largest_body = state
        .config
        .http
        .max_body_bytes
        .max(multipart::MAX_REQUEST_BYTES);
    // A warm request may have to run again (`Settled::again`): a copy kept.
    let (response, again) = match again(request, state.config.http.max_body_bytes).await {
        Err(refused) => (refused.into_response(), None),
        Ok((request, again)) => {
            let early = again.is_some();
            let arrived = arriving.arrive(request, largest_body, early, &state.cursors);
            let response = match arrived.await {
                Ok(request) => {
                    // Its writes behind a gate its admission may hold, its
                    // answer committed with them (`store::exactly_once::outcome`).
                    let writes = WriteGate::default();
                    let outcome = Outcome::default();
                    let route = writes.scope(outcome.scope(next.clone().run(request)));
                    let answer = calls.scope(route).instrument(span.clone()).await;
                    let mut response = payload::within_limit(answer).await;
                    if let Some(until) = outcome.uncertain() {
                        response.extensions_mut().insert(Uncertain(until));
                    }
                    response
                }
                Err(refused) => refused.into_response(),
            };
            (response, again)
        }
    };
    let settle = returned.settle(state, versioned, response, span);
    let (response, settled) = calls.scope(settle).instrument(span.clone()).await;
    match again {
        Some(mut request) if settled.again => {
            // Cold this time: its admission first, and no copy kept.
            request.extensions_mut().insert(RunAgain);
            let (arriving, fresh) = lifecycle::begin();
            *returned = fresh;
            Box::pin(serve(
                state, calls, span, versioned, request, next, arriving, returned,
            ))
            .await
        }
        _ => (response, settled),
    }
}

/// The request, and a copy of it to run again if it is one that may start
/// before its admission ends: a read (`GET`, `HEAD`: no body), or a
/// `PATCH` that declares a body of at most `limit` bytes (read here, 413
/// when it brings more). None for any other request, and for one that
/// runs again.
async fn again(request: Request, limit: usize) -> Result<(Request, Option<Request>), ApiError> {
    use http::Method;
    if request.extensions().get::<RunAgain>().is_some() {
        return Ok((request, None));
    }
    match *request.method() {
        Method::GET | Method::HEAD => {
            let copy = copy(&request, axum::body::Body::empty());
            return Ok((request, Some(copy)));
        }
        Method::PATCH => {}
        _ => return Ok((request, None)),
    }
    // A body built in process (tests) declares its length in its size hint.
    let declared = body::declared_length(&request).or_else(|| {
        let hint = axum::body::HttpBody::size_hint(request.body()).exact()?;
        usize::try_from(hint).ok()
    });
    if declared.is_none_or(|length| length > limit) {
        return Ok((request, None));
    }
    let (parts, sent) = request.into_parts();
    let bytes = body::at_most(sent, limit).await?;
    let request = Request::from_parts(parts, axum::body::Body::from(bytes.clone()));
    let copy = copy(&request, axum::body::Body::from(bytes));
    Ok((request, Some(copy)))
}

/// Marks a request that runs again (`Settled::again`): it runs cold.
#[derive(Clone, Copy, Debug)]
struct RunAgain;

/// `request` with `body`.
fn copy(request: &Request, body: axum::body::Body) -> Request {
    let mut copy = Request::new(body);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    copy
}

/// How long the request may take: until Lambda's deadline, less the time
/// the answer needs to get out. None outside Lambda (dev server, tests:
/// nothing cuts a request off there), and None for a deadline already
/// past on arrival, which no Lambda gives: `cargo lambda watch` sends
/// 600000 (ten minutes after 1970).
#[allow(clippy::disallowed_methods)] // Lambda's deadline is the real time, not the request's clock.
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
/// or settled (that would take more time; `Returned::unsettled`): a budget
/// slot stays spent, and an `Idempotency-Key` claim lapses after its
/// lease, as when a function dies, since the change may or may not have
/// been made.
fn out_of_time(span: &tracing::Span) -> Response {
    span.in_scope(|| {
        ApiError::internal("the request ran out of time before the invocation's deadline")
            .into_response()
    })
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

/// What ties the request to the rest of its trace: the X-Ray trace
/// header (Lambda's context, else API Gateway's `x-amzn-trace-id`), its
/// root, and the Lambda invocation's own request id, when there is one.
struct Trace {
    header: Option<String>,
    /// Only a well-formed root is taken (it is logged).
    root: Option<String>,
    invocation: Option<String>,
}

fn trace(request: &Request) -> Trace {
    use lambda_http::RequestExt;
    let context = request.lambda_context_ref();
    let header = context.and_then(|c| c.xray_trace_id.clone()).or_else(|| {
        request
            .headers()
            .get("x-amzn-trace-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });
    let root = header.as_deref().and_then(telemetry::traces::root);
    let invocation = context
        .map(|c| c.request_id.clone())
        .filter(|id| !id.is_empty());
    Trace {
        header,
        root,
        invocation,
    }
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
