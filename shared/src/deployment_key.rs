//! Keys that belong to a deployment (the cursor key, the key that seals
//! webhook secrets, the credentials of the geocoding provider and the issue
//! tracker): the same on every instance, never in the repository.
//! In AWS they come from Secrets Manager, read once per container when
//! first needed; the local stack uses fixed development keys, and only
//! when every AWS endpoint is on this machine (see `endpoints`).

use std::sync::Arc;

use crate::error::{ApiError, ApiResult};

/// Shortest accepted key, in bytes.
pub const MIN_KEY: usize = 32;

/// Where a deployment key comes from.
#[derive(Clone, Debug)]
pub enum KeySource {
    /// The key itself (an environment variable, or the local default).
    Value(Vec<u8>),
    /// A Secrets Manager secret holding it.
    Secret(String),
}

/// One key, resolved once per container.
#[derive(Clone, Debug)]
pub struct DeploymentKey {
    /// What the key is for, for error messages.
    what: &'static str,
    sdk: aws_config::SdkConfig,
    source: Option<KeySource>,
    /// Shortest accepted secret, in bytes.
    min_len: usize,
    key: Arc<tokio::sync::OnceCell<Vec<u8>>>,
}

impl DeploymentKey {
    /// A signing or sealing key: at least `MIN_KEY` bytes.
    pub fn new(what: &'static str, sdk: &aws_config::SdkConfig, source: Option<KeySource>) -> Self {
        Self {
            what,
            sdk: sdk.clone(),
            source,
            min_len: MIN_KEY,
            key: Default::default(),
        }
    }

    /// A credential a provider issued (an API key, a token): any length.
    pub fn credential(
        what: &'static str,
        sdk: &aws_config::SdkConfig,
        source: Option<KeySource>,
    ) -> Self {
        Self {
            min_len: 1,
            ..Self::new(what, sdk, source)
        }
    }

    pub fn is_configured(&self) -> bool {
        self.source.is_some()
    }

    /// The key's bytes (500 `internal_error` when none is configured or the
    /// secret is too short).
    pub async fn get(&self) -> ApiResult<&[u8]> {
        let key = self
            .key
            .get_or_try_init(|| async {
                let key = KeySource::read(self.source.as_ref(), self.what, &self.sdk).await?;
                if key.len() < self.min_len {
                    return Err(ApiError::internal(format!(
                        "the {} secret is too short",
                        self.what
                    )));
                }
                Ok(key)
            })
            .await?;
        Ok(key)
    }
}

impl KeySource {
    /// What `source` holds now: the value, or the secret's string (one
    /// Secrets Manager call); 500 `internal_error` when there is no source.
    pub async fn read(
        source: Option<&KeySource>,
        what: &str,
        sdk: &aws_config::SdkConfig,
    ) -> ApiResult<Vec<u8>> {
        match source {
            None => Err(ApiError::internal(format!("no {what} is configured"))),
            Some(KeySource::Value(key)) => Ok(key.clone()),
            Some(KeySource::Secret(arn)) => Ok(crate::secrets::fetch(sdk, arn).await?.into_bytes()),
        }
    }
}
