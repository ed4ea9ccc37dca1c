//! JSON request bodies: 413 past the size limit, 400 `invalid_json` when not
//! JSON, 422 `validation_error` naming the field when the shape is wrong.
//! The Content-Type header is not required (documented in the OpenAPI).

use axum::extract::{FromRef, FromRequest, Request};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

pub struct JsonBody<T>(pub T);

impl<T, S> FromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
    AppState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let limit = AppState::from_ref(state).config.max_body_bytes;
        let bytes = axum::body::to_bytes(request.into_body(), limit)
            .await
            .map_err(|_| ApiError::PayloadTooLarge(limit))?;
        parse(&bytes).map(JsonBody)
    }
}

/// Parses a JSON object body into `T`.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::InvalidJson(
            "the request body is empty; send a JSON object".into(),
        ));
    }
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::InvalidJson(format!("the request body is not valid JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::Validation(
            "the request body must be a JSON object".into(),
        ));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let problem = e.into_inner();
        if path == "." {
            ApiError::Validation(problem.to_string())
        } else {
            ApiError::validation(&path, problem)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Body {
        #[allow(dead_code)]
        name: String,
    }

    #[test]
    fn not_json_is_invalid_json() {
        for bad in [&b""[..], b"  ", b"{", b"name=x", b"{\"name\": }"] {
            assert_eq!(parse::<Body>(bad).unwrap_err().code(), "invalid_json");
        }
    }

    #[test]
    fn wrong_shapes_name_the_field() {
        let e = parse::<Body>(br#"{"name": 5}"#).unwrap_err();
        assert_eq!(e.code(), "validation_error");
        assert!(e.to_string().starts_with("name: invalid type"), "{e}");
        let e = parse::<Body>(br#"{}"#).unwrap_err();
        assert!(e.to_string().contains("`name`"), "{e}");
        assert_eq!(
            parse::<Body>(b"[1]").unwrap_err().code(),
            "validation_error"
        );
    }
}
