//! The one error type. Every contract error code lives here with its status;
//! handlers return `Err(ApiError::…)` and never build an error body by hand.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

pub type ApiResult<T> = Result<T, ApiError>;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    // 400
    /// A path id is not a UUID. `code` names the id (`invalid_org_id`, ...).
    #[error("{param} must be a UUID")]
    InvalidId {
        code: &'static str,
        param: &'static str,
    },
    #[error("{0}")]
    InvalidJson(String),
    /// Another 400: `code` names the problem.
    #[error("{message}")]
    Invalid { code: &'static str, message: String },
    // 401
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
    // 403
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
    /// Another 403: `code` names the rule.
    #[error("{message}")]
    Forbidden {
        code: &'static str,
        message: &'static str,
    },
    // 404
    #[error("{message}")]
    NotFound {
        code: &'static str,
        message: &'static str,
    },
    #[error("no route matches this path")]
    RouteNotFound,
    // 405
    #[error("this method is not allowed on this path")]
    MethodNotAllowed,
    // 409
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    // 413
    #[error("the request body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    /// Another 413: `code` names what is too large.
    #[error("{message}")]
    TooLarge { code: &'static str, message: String },
    // 422
    /// A missing or invalid field; the message names the field.
    #[error("{0}")]
    Validation(String),
    #[error("{message}")]
    Unprocessable { code: &'static str, message: String },
    // 429
    #[error("rate limit exceeded; retry after {retry_after} seconds")]
    RateLimited { retry_after: u64 },
    /// Another 429 (a quota of its own): `code` names it.
    #[error("{message}; retry after {retry_after} seconds")]
    QuotaExceeded {
        code: &'static str,
        message: &'static str,
        retry_after: u64,
    },
    // 500: details are logged, never rendered.
    #[error("internal error: {0}")]
    Internal(BoxError),
    // 502: a provider (geocoding, the issue tracker) failed.
    #[error("{message}")]
    BadGateway {
        code: &'static str,
        message: &'static str,
    },
    // 503
    #[error("{message}")]
    Unavailable {
        code: &'static str,
        message: &'static str,
    },
    // 504: a provider did not answer in time.
    #[error("{message}")]
    GatewayTimeout {
        code: &'static str,
        message: &'static str,
    },
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        use ApiError::*;
        match self {
            InvalidId { .. } | InvalidJson(_) | Invalid { .. } => StatusCode::BAD_REQUEST,
            MissingApiKey | InvalidApiKey | ApiKeyRevoked | ApiKeyExpired | ConflictingApiKeys => {
                StatusCode::UNAUTHORIZED
            }
            OrgIdMismatch(_)
            | FeatureNotEnabled
            | OrgInactive
            | InsufficientScope(_)
            | PublicApiDisabled
            | Forbidden { .. } => StatusCode::FORBIDDEN,
            NotFound { .. } | RouteNotFound => StatusCode::NOT_FOUND,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Conflict { .. } => StatusCode::CONFLICT,
            PayloadTooLarge(_) | TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Validation(_) | Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            RateLimited { .. } | QuotaExceeded { .. } => StatusCode::TOO_MANY_REQUESTS,
            Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            BadGateway { .. } => StatusCode::BAD_GATEWAY,
            Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            GatewayTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    pub fn code(&self) -> &'static str {
        use ApiError::*;
        match self {
            InvalidId { code, .. } => code,
            InvalidJson(_) => "invalid_json",
            Invalid { code, .. } => code,
            MissingApiKey => "missing_api_key",
            InvalidApiKey => "invalid_api_key",
            ApiKeyRevoked => "api_key_revoked",
            ApiKeyExpired => "api_key_expired",
            ConflictingApiKeys => "conflicting_api_keys",
            OrgIdMismatch(_) => "org_id_mismatch",
            FeatureNotEnabled => "feature_not_enabled",
            OrgInactive => "org_inactive",
            InsufficientScope(_) => "insufficient_scope",
            PublicApiDisabled => "public_api_disabled",
            Forbidden { code, .. } => code,
            NotFound { code, .. } => code,
            RouteNotFound => "not_found",
            MethodNotAllowed => "method_not_allowed",
            Conflict { code, .. } => code,
            PayloadTooLarge(_) => "payload_too_large",
            TooLarge { code, .. } => code,
            Validation(_) => "validation_error",
            Unprocessable { code, .. } => code,
            RateLimited { .. } => "rate_limited",
            QuotaExceeded { code, .. } => code,
            Internal(_) => "internal_error",
            BadGateway { code, .. } => code,
            Unavailable { code, .. } => code,
            GatewayTimeout { code, .. } => code,
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
        Self::NotFound {
            code: "org_not_found",
            message: "organization not found",
        }
    }

    /// 409: DELETE on a record that is already archived.
    pub fn already_archived() -> Self {
        Self::Conflict {
            code: "already_archived",
            message: "the record is already archived".into(),
        }
    }

    /// 409: restore on a record that is not archived.
    pub fn not_archived() -> Self {
        Self::Conflict {
            code: "not_archived",
            message: "the record is not archived".into(),
        }
    }

    /// 409: PATCH on an archived record.
    pub fn record_archived() -> Self {
        Self::Conflict {
            code: "record_archived",
            message: "the record is archived; restore it before changing it".into(),
        }
    }

    /// 422: a body's `site_id` names no site of the key's organization.
    pub fn site_not_found() -> Self {
        Self::Unprocessable {
            code: "site_not_found",
            message: "site_id names no site of this organization".into(),
        }
    }

    /// 422: a body's `site_id` names an archived site.
    pub fn site_archived() -> Self {
        Self::Unprocessable {
            code: "site_archived",
            message: "the site is archived; restore it first".into(),
        }
    }

    /// 422: a PATCH gives a field that cannot change a value other than the
    /// record's own.
    pub fn immutable(field: &str) -> Self {
        Self::Unprocessable {
            code: "immutable_field",
            message: format!("{field} cannot change"),
        }
    }

    pub fn org_name_conflict() -> Self {
        Self::Conflict {
            code: "org_name_conflict",
            message: "an organization with this name already exists".into(),
        }
    }
}

/// The cause of a 500, riding in its response's extensions to the one
/// layer that logs it (`http::middleware`).
#[derive(Clone, Debug)]
pub struct InternalCause(pub std::sync::Arc<str>);

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
        let mut response = (status, Json(body)).into_response();
        // Logged by the layer around the route, with the request's id and
        // the store call to blame (never rendered).
        if let Some(cause) = cause {
            response.extensions_mut().insert(cause);
        }
        if let ApiError::RateLimited { retry_after } | ApiError::QuotaExceeded { retry_after, .. } =
            self
        {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
        }
        response
    }
}

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
        let (status, json, headers) = body(ApiError::QuotaExceeded {
            code: "support_rate_limited",
            message: "at most 5 support tickets an hour per key",
            retry_after: 1200,
        })
        .await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(json["code"], "support_rate_limited");
        assert_eq!(headers[header::RETRY_AFTER], "1200");
        let (status, json, _) = body(ApiError::GatewayTimeout {
            code: "geocode_timeout",
            message: "late",
        })
        .await;
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
