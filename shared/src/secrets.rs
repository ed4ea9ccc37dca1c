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

/// Writes `text` as the new current value of the secret `arn`, whatever
/// it holds (a test standing in for an outside change; operators' tools
/// write through `replace`).
pub async fn put(sdk: &aws_config::SdkConfig, arn: &str, text: &str) -> ApiResult<()> {
    client(sdk)
        .put_secret_value()
        .secret_id(arn)
        .secret_string(text)
        .send()
        .await
        .map_err(internal)?;
    Ok(())
}

/// A secret's value as read, and the version it was read at.
#[derive(Clone, Debug)]
pub struct Read {
    pub text: String,
    pub version: String,
}

/// The current value of the secret `arn`, with its version (for a
/// `replace` of it).
pub async fn read(sdk: &aws_config::SdkConfig, arn: &str) -> ApiResult<Read> {
    let out = client(sdk)
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(internal)?;
    match (out.secret_string, out.version_id) {
        (Some(text), Some(version)) => Ok(Read { text, version }),
        _ => Err(ApiError::internal(format!(
            "secret {arn} holds no string or names no version"
        ))),
    }
}

/// Whether a `replace` wrote its value or found the secret changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replaced {
    Written,
    /// Another write made another version current since `read`: nothing
    /// of this one is current; read again.
    Raced,
}

/// Writes `text` as the secret's current value only if the current value
/// is still the version `read` (operators' tools rotating a key: the
/// functions only read). A compare-and-swap through Secrets Manager's
/// idempotency tokens: a new version's id is the token it is written
/// with, and the token here follows from the version read, so of two
/// writers that read the same version the second finds its token taken
/// by the first (`ResourceExistsException`, a different value) and is
/// `Raced`, never both `Written`; a writer that read an older version
/// finds its token taken by whoever moved on from it. (A value written by
/// hand, with a token of its own, is not seen: only writers through here
/// take part.)
pub async fn replace(
    sdk: &aws_config::SdkConfig,
    arn: &str,
    read: &Read,
    text: &str,
) -> ApiResult<Replaced> {
    use sha2::Digest;
    let token = hex::encode(sha2::Sha256::digest(format!("after {}", read.version)));
    let written = client(sdk)
        .put_secret_value()
        .secret_id(arn)
        .secret_string(text)
        .client_request_token(token)
        .send()
        .await;
    match written {
        Ok(_) => Ok(Replaced::Written),
        Err(error)
            if error
                .as_service_error()
                .is_some_and(|e| e.is_resource_exists_exception()) =>
        {
            Ok(Replaced::Raced)
        }
        Err(error) => Err(internal(error)),
    }
}

fn internal<E: std::error::Error + Send + Sync + 'static, R: std::fmt::Debug>(
    error: aws_sdk_secretsmanager::error::SdkError<E, R>,
) -> ApiError {
    ApiError::internal(aws_sdk_secretsmanager::error::DisplayErrorContext(error).to_string())
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
