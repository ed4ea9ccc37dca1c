//! Signed, time-limited links to stored files (waybills, receiving point
//! photos): S3 presigned GET URLs valid for `LINK_LIFETIME`.
//!
//! A presigned URL lives no longer than the credentials that signed it, and
//! Lambda role credentials expire sooner than 24 hours. In AWS the signer
//! therefore uses a dedicated IAM user's access key (read-only on the
//! bucket), kept in Secrets Manager (`LINK_SIGNER_SECRET_ARN`) and loaded
//! once, on the first link. Without that setting (local stack, tests) the
//! default credentials sign.

use std::time::Duration;

use crate::model::Timestamp;
use aws_sdk_s3::presigning::PresigningConfig;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::error::{ApiError, ApiResult};

/// How long a handed-out link stays valid.
pub const LINK_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// `{storage_path, url, url_expires_at}` as responses show a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignedLink {
    pub storage_path: String,
    pub url: String,
    pub url_expires_at: Timestamp,
}

#[derive(Deserialize)]
struct SignerSecret {
    access_key_id: String,
    secret_access_key: String,
}

#[derive(Clone, Debug)]
pub struct LinkSigner {
    sdk: aws_config::SdkConfig,
    bucket: String,
    secret_arn: Option<String>,
    client: std::sync::Arc<OnceCell<aws_sdk_s3::Client>>,
}

/// An S3 client; path-style addressing when an endpoint override (the local
/// emulator) is configured.
pub fn s3_client(sdk: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let path_style = sdk.endpoint_url().is_some();
    aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(sdk)
            .force_path_style(path_style)
            .build(),
    )
}

impl LinkSigner {
    pub fn new(sdk: &aws_config::SdkConfig, bucket: &str, secret_arn: Option<String>) -> Self {
        Self {
            sdk: sdk.clone(),
            bucket: bucket.to_owned(),
            secret_arn,
            client: Default::default(),
        }
    }

    async fn client(&self) -> ApiResult<&aws_sdk_s3::Client> {
        self.client
            .get_or_try_init(|| async {
                let Some(arn) = &self.secret_arn else {
                    return Ok(s3_client(&self.sdk));
                };
                let text = crate::secrets::fetch(&self.sdk, arn).await?;
                let secret: SignerSecret = serde_json::from_str(&text).map_err(|_| {
                    ApiError::internal(
                        "link signer secret is not {access_key_id, secret_access_key}",
                    )
                })?;
                let credentials = aws_sdk_s3::config::Credentials::new(
                    secret.access_key_id,
                    secret.secret_access_key,
                    None,
                    None,
                    "link-signer",
                );
                let config = aws_sdk_s3::config::Builder::from(&self.sdk)
                    .credentials_provider(credentials)
                    .force_path_style(self.sdk.endpoint_url().is_some())
                    .build();
                Ok(aws_sdk_s3::Client::from_conf(config))
            })
            .await
    }

    /// A link to `storage_path` valid for `LINK_LIFETIME`.
    pub async fn sign(&self, storage_path: &str) -> ApiResult<SignedLink> {
        let client = self.client().await?;
        let now = crate::model::now();
        let config = PresigningConfig::builder()
            .start_time(now.as_datetime().into())
            .expires_in(LINK_LIFETIME)
            .build()
            .map_err(ApiError::internal)?;
        let request = client
            .get_object()
            .bucket(&self.bucket)
            .key(storage_path)
            .presigned(config)
            .await
            .map_err(|e| {
                ApiError::internal(aws_sdk_s3::error::DisplayErrorContext(e).to_string())
            })?;
        let expires = chrono::Duration::from_std(LINK_LIFETIME).map_err(ApiError::internal)?;
        Ok(SignedLink {
            storage_path: storage_path.to_owned(),
            url: request.uri().to_owned(),
            url_expires_at: now + expires,
        })
    }

    /// Links for several files, in order.
    pub async fn sign_all(&self, storage_paths: &[String]) -> ApiResult<Vec<SignedLink>> {
        let mut links = Vec::with_capacity(storage_paths.len());
        for path in storage_paths {
            links.push(self.sign(path).await?);
        }
        Ok(links)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn links_last_24_hours_and_name_the_object() {
        let sdk = aws_config::SdkConfig::builder()
            .region(aws_config::Region::new("eu-north-1"))
            .credentials_provider(aws_sdk_s3::config::SharedCredentialsProvider::new(
                aws_sdk_s3::config::Credentials::new("AKIDEXAMPLE", "secret", None, None, "test"),
            ))
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let signer = LinkSigner::new(&sdk, "files", None);
        let link = signer.sign("receiving-points/a/b/photo.jpg").await.unwrap();
        assert!(link.url.contains("files"), "{}", link.url);
        assert!(
            link.url.contains("receiving-points/a/b/photo.jpg"),
            "{}",
            link.url
        );
        assert!(link.url.contains("X-Amz-Expires=86400"), "{}", link.url);
        assert!(link.url.contains("X-Amz-Signature="), "{}", link.url);
        let lifetime = link.url_expires_at.as_datetime() - chrono::Utc::now();
        assert!((lifetime.num_seconds() - 86_400).abs() <= 5, "{lifetime}");
    }
}
