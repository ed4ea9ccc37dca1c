//! The dev server hands each route its request's whole body, as API
//! Gateway hands a Lambda function the whole body in its event.
//!
//! Streamed as hyper reads it, a body whose bytes arrive after the headers
//! is left unread by a request the API refuses first (401, 403, 429 ...):
//! hyper then closes the keep-alive connection after the answer without
//! saying so (no `Connection: close`), and the client's next request on it
//! fails with a broken pipe. `make load` over 20 keys, whose requests are
//! mostly refused 429, met it a few times in a run.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// API Gateway's largest request payload; the API's own limit
/// (`MAX_BODY_BYTES`, 413 `payload_too_large`) is lower.
pub const LARGEST: usize = 10 * 1024 * 1024;

/// Reads the whole body, then runs the route with it.
pub async fn whole_body(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    match axum::body::to_bytes(body, LARGEST).await {
        Ok(bytes) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        // Over API Gateway's limit (it answers 413 too), or the client left.
        Err(_) => {
            let mut refused = StatusCode::PAYLOAD_TOO_LARGE.into_response();
            refused
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            refused
        }
    }
}
