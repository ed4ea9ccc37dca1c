//! JSON response bodies.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::ApiError;

/// A JSON response: `axum::Json`'s answer, written into one growing `Vec`.
/// axum's writes through `BytesMut`'s `io::Write`, one call per token; on
/// a page of 100 loads that was a tenth of the code's own time (perf,
/// `make bench`).
pub struct Json<T>(pub T);

/// Room for a single record without growing; pages grow a few times.
const FIRST_CAPACITY: usize = 2048;

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        let mut body = Vec::with_capacity(FIRST_CAPACITY);
        match serde_json::to_writer(&mut body, &self.0) {
            Ok(()) => (
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response(),
            Err(e) => ApiError::internal(format!("response encoding: {e}")).into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_the_same_body_and_type_as_axum() {
        let value = serde_json::json!({"data": {"name": "Bench \"site\"", "n": [1, 2.5, null]}});
        let ours = Json(&value).into_response();
        let axums = axum::Json(&value).into_response();
        assert_eq!(ours.status(), axums.status());
        assert_eq!(
            ours.headers().get(header::CONTENT_TYPE),
            axums.headers().get(header::CONTENT_TYPE)
        );
        let ours = axum::body::to_bytes(ours.into_body(), usize::MAX)
            .await
            .unwrap();
        let axums = axum::body::to_bytes(axums.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(ours, axums);
    }
}
