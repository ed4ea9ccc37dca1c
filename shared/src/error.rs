//! The one error type. Every code it answers is declared once, with its
//! status and meaning, in the catalogue (`codes`); errors are built from
//! there, and handlers return `Err(ApiError::…)` or `Err(codes::X.with(…))`,
//! never an error body of their own.

pub mod codes;

use std::borrow::Cow;

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

pub use codes::Code;

pub type ApiResult<T> = Result<T, ApiError>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A path id is not a UUID. `code` names the id (`invalid_org_id`, ...).
    #[error("{param} must be a UUID")]
    InvalidId {
        code: &'static Code,
        param: &'static str,
    },
    #[error("{0}")]
    InvalidJson(String),
    #[error("an API key is required: send `Authorization: Bearer <key>` or `X-Api-Key: <key>`")]
    MissingApiKey,
    #[error("the API key is not valid")]
    InvalidApiKey,
    #[error("the API key has been revoked")]
    ApiKeyRevoked,
    #[error("the API key has expired")]
    ApiKeyExpired,
    #[error("`Authorization` and `X-Api-Key` carry different keys; send one key")]
    ConflictingApiKeys,
    #[error("{0}")]
    OrgIdMismatch(&'static str),
    #[error("public API features are not enabled for this organization")]
    FeatureNotEnabled,
    #[error("the key's organization has been deactivated")]
    OrgInactive,
    #[error("this route needs the `{0}` scope")]
    InsufficientScope(&'static str),
    #[error("the versioned API is disabled in this deployment")]
    PublicApiDisabled,
    #[error("no route matches this path")]
    RouteNotFound,
    #[error("this method is not allowed on this path")]
    MethodNotAllowed,
    #[error("the request body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    /// A missing or invalid field; the message names the field.
    #[error("{0}")]
    Validation(String),
    #[error("rate limit exceeded; retry after {retry_after} seconds")]
    RateLimited { retry_after: u64 },
    /// Any other code of the catalogue, with its message (and the seconds
    /// of `Retry-After`, for a 429 of its own).
    #[error("{message}")]
    Coded {
        code: &'static Code,
        message: Cow<'static, str>,
        retry_after: Option<u64>,
    },
    /// 500: details are logged, never rendered.
    #[error("internal error: {0}")]
    Internal(BoxError),
}

impl Code {
    /// This code's error, saying `message`.
    pub fn with(&'static self, message: impl Into<Cow<'static, str>>) -> ApiError {
        ApiError::Coded {
            code: self,
            message: message.into(),
            retry_after: None,
        }
    }

    /// This code's 429, saying `message`, and when to come back.
    pub fn retry_after(&'static self, message: &str, seconds: u64) -> ApiError {
        ApiError::Coded {
            code: self,
            message: format!("{message}; retry after {seconds} seconds").into(),
            retry_after: Some(seconds),
        }
    }
}

impl ApiError {
    /// The error's entry in the catalogue.
    pub fn catalogued(&self) -> &'static Code {
        use ApiError::*;
        match self {
            InvalidId { code, .. } | Coded { code, .. } => code,
            InvalidJson(_) => &codes::INVALID_JSON,
            MissingApiKey => &codes::MISSING_API_KEY,
            InvalidApiKey => &codes::INVALID_API_KEY,
            ApiKeyRevoked => &codes::API_KEY_REVOKED,
            ApiKeyExpired => &codes::API_KEY_EXPIRED,
            ConflictingApiKeys => &codes::CONFLICTING_API_KEYS,
            OrgIdMismatch(_) => &codes::ORG_ID_MISMATCH,
            FeatureNotEnabled => &codes::FEATURE_NOT_ENABLED,
            OrgInactive => &codes::ORG_INACTIVE,
            InsufficientScope(_) => &codes::INSUFFICIENT_SCOPE,
            PublicApiDisabled => &codes::PUBLIC_API_DISABLED,
            RouteNotFound => &codes::NOT_FOUND,
            MethodNotAllowed => &codes::METHOD_NOT_ALLOWED,
            PayloadTooLarge(_) => &codes::PAYLOAD_TOO_LARGE,
            Validation(_) => &codes::VALIDATION_ERROR,
            RateLimited { .. } => &codes::RATE_LIMITED,
            Internal(_) => &codes::INTERNAL_ERROR,
        }
    }

    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.catalogued().status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    pub fn code(&self) -> &'static str {
        self.catalogued().code
    }

    /// Seconds for `Retry-After`, on a 429.
    fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::RateLimited { retry_after } => Some(*retry_after),
            ApiError::Coded { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// 422 `validation_error` naming the field.
    pub fn validation(field: &str, problem: impl std::fmt::Display) -> Self {
        Self::Validation(format!("{field}: {problem}"))
    }

    pub fn internal(error: impl Into<BoxError>) -> Self {
        Self::Internal(error.into())
    }

    pub fn org_not_found() -> Self {
        codes::ORG_NOT_FOUND.with("organization not found")
    }

    /// 409: DELETE on a record that is already archived.
    pub fn already_archived() -> Self {
        codes::ALREADY_ARCHIVED.with("the record is already archived")
    }

    /// 409: restore on a record that is not archived.
    pub fn not_archived() -> Self {
        codes::NOT_ARCHIVED.with("the record is not archived")
    }

    /// 409: PATCH on an archived record.
    pub fn record_archived() -> Self {
        codes::RECORD_ARCHIVED.with("the record is archived; restore it before changing it")
    }

    /// 422: a body's `site_id` names no site of the key's organization.
    pub fn site_not_found() -> Self {
        codes::SITE_NOT_FOUND_IN_BODY.with("site_id names no site of this organization")
    }

    /// 422: a body's `site_id` names an archived site.
    pub fn site_archived() -> Self {
        codes::SITE_ARCHIVED.with("the site is archived; restore it first")
    }

    /// 422: a PATCH gives a field that cannot change a value other than the
    /// record's own.
    pub fn immutable(field: &str) -> Self {
        codes::IMMUTABLE_FIELD.with(format!("{field} cannot change"))
    }

    pub fn org_name_conflict() -> Self {
        codes::ORG_NAME_CONFLICT.with("an organization with this name already exists")
    }
}

/// The cause of a 500, riding in its response's extensions to the one
/// layer that logs it (`http::middleware`).
#[derive(Clone, Debug)]
pub struct InternalCause(pub std::sync::Arc<str>);

/// The contract's error code of an error response, in its extensions (for
/// the layer: `http::idempotency` never keeps a 409
/// `idempotency_key_in_flight` as a request's answer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorCode(pub String);

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    message: String,
    code: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let cause = match &self {
            ApiError::Internal(source) => Some(InternalCause(source.to_string().into())),
            _ => None,
        };
        let message = match &self {
            ApiError::Internal(_) => {
                "an unexpected error occurred; quote the x-request-id header when reporting it"
                    .to_owned()
            }
            other => other.to_string(),
        };
        let body = ErrorBody {
            error: status.canonical_reason().unwrap_or("Error"),
            message,
            code: self.code(),
        };
        let retry_after = self.retry_after();
        let code = ErrorCode(body.code.to_owned());
        let mut response = (status, Json(body)).into_response();
        response.extensions_mut().insert(code);
        // Logged by the layer around the route, with the request's id and
        // the store call to blame (never rendered).
        if let Some(cause) = cause {
            response.extensions_mut().insert(cause);
        }
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.code() == codes::EVENT_DEPRECATED.code {
            for (name, value) in SURPLUS_CREATED_DEPRECATION {
                response
                    .headers_mut()
                    .insert(name, HeaderValue::from_static(value));
            }
        }
        response
    }
}

/// What answers the deprecated event `surplus.created` carries
/// (docs/compatibility.md): deprecated since v1's release (RFC 9745, a
/// Structured Fields date: 2026-11-21T00:00:00Z), sunset the same day,
/// since v1 never sends it (RFC 8594), and where the notice is.
pub const SURPLUS_CREATED_DEPRECATION: [(&str, &str); 3] = [
    ("deprecation", "@1795219200"),
    ("sunset", "Sat, 21 Nov 2026 00:00:00 GMT"),
    (
        "link",
        "</docs#op-post-api-v1-webhooks>; rel=\"deprecation\"; type=\"text/html\"",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(error: ApiError) -> (StatusCode, serde_json::Value, http::HeaderMap) {
        let response = error.into_response();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap(), headers)
    }

    #[tokio::test]
    async fn renders_error_message_code() {
        let (status, json, _) = body(ApiError::org_not_found()).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(
            json,
            serde_json::json!({
                "error": "Not Found", "message": "organization not found", "code": "org_not_found"
            })
        );
    }

    #[tokio::test]
    async fn internal_errors_hide_their_cause() {
        let (status, json, _) = body(ApiError::internal("table xyz exploded")).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(json["code"], "internal_error");
        assert_eq!(json["error"], "Internal Server Error");
        assert!(!json["message"].as_str().unwrap().contains("xyz"));
    }

    #[tokio::test]
    async fn rate_limited_sets_retry_after() {
        let (status, json, headers) = body(ApiError::RateLimited { retry_after: 17 }).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(json["error"], "Too Many Requests");
        assert_eq!(headers[header::RETRY_AFTER], "17");
    }

    #[tokio::test]
    async fn a_quota_of_its_own_sets_retry_after_too() {
        let (status, json, headers) = body(
            codes::SUPPORT_RATE_LIMITED
                .retry_after("at most 5 support tickets an hour per key", 1200),
        )
        .await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(json["code"], "support_rate_limited");
        assert_eq!(headers[header::RETRY_AFTER], "1200");
        let (status, json, _) = body(codes::GEOCODE_TIMEOUT.with("late")).await;
        assert_eq!(
            (status, json["error"].as_str()),
            (StatusCode::GATEWAY_TIMEOUT, Some("Gateway Timeout"))
        );
    }

    #[test]
    fn validation_names_the_field() {
        let e = ApiError::validation("name", "must not be empty");
        assert_eq!(e.code(), "validation_error");
        assert_eq!(e.to_string(), "name: must not be empty");
    }
}
