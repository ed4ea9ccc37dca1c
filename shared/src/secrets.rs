//! Secrets Manager: the deployment keeps signing keys out of plain
//! environment variables; a function reads each secret once, when it first
//! needs it (not at cold start).

use crate::error::{ApiError, ApiResult};

/// The secret string of `arn`.
pub async fn fetch(sdk: &aws_config::SdkConfig, arn: &str) -> ApiResult<String> {
    let out = client(sdk)
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|e| {
            ApiError::internal(aws_sdk_secretsmanager::error::DisplayErrorContext(e).to_string())
        })?;
    out.secret_string
        .ok_or_else(|| ApiError::internal(format!("secret {arn} holds no string")))
}

/// Writes `text` as the new current value of the secret `arn` (operator
/// tools rotating a key: the functions only read).
pub async fn put(sdk: &aws_config::SdkConfig, arn: &str, text: &str) -> ApiResult<()> {
    client(sdk)
        .put_secret_value()
        .secret_id(arn)
        .secret_string(text)
        .send()
        .await
        .map_err(|e| {
            ApiError::internal(aws_sdk_secretsmanager::error::DisplayErrorContext(e).to_string())
        })?;
    Ok(())
}

/// A Secrets Manager client whose calls a request's counter sees.
fn client(sdk: &aws_config::SdkConfig) -> aws_sdk_secretsmanager::Client {
    aws_sdk_secretsmanager::Client::from_conf(
        aws_sdk_secretsmanager::config::Builder::from(sdk)
            .interceptor(crate::aws_calls::CountAwsCalls)
            .interceptor(crate::telemetry::aws_spans::SpanAwsCalls)
            .build(),
    )
}
