//! Signed, time-limited links to stored files (waybills, receiving point
//! photos): S3 presigned GET URLs valid for `LINK_LIFETIME`.
//!
//! A presigned URL lives no longer than the credentials that signed it, and
//! Lambda role credentials expire sooner than 24 hours. In AWS the signer
//! therefore uses a dedicated IAM user's access key (read-only on the
//! bucket), kept in Secrets Manager (`LINK_SIGNER_SECRET_ARN`) and loaded
//! once, on the first link. Without that setting (local stack, tests) the
//! default credentials sign.

use std::sync::Arc;
use std::time::Duration;

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sdk_s3::config::endpoint::{DefaultResolver, ResolveEndpoint};
use aws_sigv4::http_request::{
    PercentEncodingMode, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use serde::Deserialize;
use tokio::sync::OnceCell;

/// The template's IAM user whose key signs links in AWS (the role check
/// judges a link's read by its policy: `aws_calls::record`).
const LINK_SIGNER: &str = "LinkSignerUser";

use crate::model::Timestamp;

use crate::error::{ApiError, ApiResult};

/// How long a handed-out link stays valid.
pub const LINK_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

pub use crate::model::link::SignedLink;

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
    signer: Arc<OnceCell<Signer>>,
}

/// What signing needs, settled on the first link: the bucket's URL (the
/// S3 endpoint rules' answer: virtual-hosted in AWS, path-style against an
/// endpoint override), the region, and whose keys sign.
#[derive(Debug)]
struct Signer {
    bucket_url: String,
    region: String,
    keys: Keys,
}

#[derive(Debug)]
enum Keys {
    /// The link signer user's access key (AWS).
    Fixed(Credentials),
    /// The default credentials (local stack, tests): the provider caches
    /// and refreshes them.
    Default(SharedCredentialsProvider),
}

/// How long a link signed now with `credentials` lives: `LINK_LIFETIME`,
/// or less when the credentials expire sooner (a presigned URL dies with
/// the session that signed it: a role's credentials, when no link signer
/// is set), so that `url_expires_at` is never a promise S3 breaks.
fn lifetime(credentials: &Credentials, now: Timestamp) -> Duration {
    let Some(expiry) = credentials.expiry() else {
        return LINK_LIFETIME;
    };
    let now = std::time::SystemTime::from(now.as_datetime());
    let left = expiry.duration_since(now).unwrap_or_default();
    // Whole seconds (X-Amz-Expires), at least one.
    Duration::from_secs(left.as_secs().max(1)).min(LINK_LIFETIME)
}

/// An S3 client; path-style addressing when an endpoint override (moto, the
/// local stack's S3) is configured.
pub fn s3_client(sdk: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(sdk)
            .force_path_style(path_style(sdk))
            .interceptor(crate::aws_calls::CountAwsCalls)
            .interceptor(crate::telemetry::aws_spans::SpanAwsCalls)
            .build(),
    )
}

fn path_style(sdk: &aws_config::SdkConfig) -> bool {
    sdk.endpoint_url().is_some()
}

impl LinkSigner {
    pub fn new(sdk: &aws_config::SdkConfig, bucket: &str, secret_arn: Option<String>) -> Self {
        Self {
            sdk: sdk.clone(),
            bucket: bucket.to_owned(),
            secret_arn,
            signer: Default::default(),
        }
    }

    async fn signer(&self) -> ApiResult<&Signer> {
        self.signer
            .get_or_try_init(|| async {
                let region = self
                    .sdk
                    .region()
                    .ok_or_else(|| ApiError::internal("no AWS region to sign links in"))?
                    .to_string();
                let mut params = aws_sdk_s3::config::endpoint::Params::builder()
                    .bucket(&self.bucket)
                    .region(&region)
                    .force_path_style(path_style(&self.sdk))
                    .use_fips(self.sdk.use_fips().unwrap_or(false))
                    .use_dual_stack(self.sdk.use_dual_stack().unwrap_or(false));
                if let Some(endpoint) = self.sdk.endpoint_url() {
                    params = params.endpoint(endpoint);
                }
                let params = params.build().map_err(ApiError::internal)?;
                let endpoint = DefaultResolver::new()
                    .resolve_endpoint(&params)
                    .await
                    .map_err(|e| ApiError::internal(format!("bucket endpoint: {e}")))?;
                Ok(Signer {
                    bucket_url: endpoint.url().trim_end_matches('/').to_owned(),
                    region,
                    keys: self.keys().await?,
                })
            })
            .await
    }

    async fn keys(&self) -> ApiResult<Keys> {
        let Some(arn) = &self.secret_arn else {
            return self
                .sdk
                .credentials_provider()
                .map(Keys::Default)
                .ok_or_else(|| ApiError::internal("no credentials to sign links with"));
        };
        let text = crate::secrets::fetch(&self.sdk, arn).await?;
        let secret: SignerSecret = serde_json::from_str(&text).map_err(|_| {
            ApiError::internal("link signer secret is not {access_key_id, secret_access_key}")
        })?;
        Ok(Keys::Fixed(Credentials::new(
            secret.access_key_id,
            secret.secret_access_key,
            None,
            None,
            "link-signer",
        )))
    }

    /// A link to `storage_path` valid for `LINK_LIFETIME`: a presigned S3
    /// GET, signed here with SigV4 rather than through an S3 client's
    /// request pipeline (five times the work per link, which a page of
    /// delivered loads pays 50 times). The URL is the one the S3 client's
    /// presigner makes (tested).
    pub async fn sign(&self, storage_path: &str) -> ApiResult<SignedLink> {
        self.sign_at(storage_path, crate::model::now()).await
    }

    async fn sign_at(&self, storage_path: &str, now: Timestamp) -> ApiResult<SignedLink> {
        let signer = self.signer().await?;
        let credentials = match &signer.keys {
            Keys::Fixed(credentials) => credentials.clone(),
            Keys::Default(provider) => provider
                .provide_credentials()
                .await
                .map_err(ApiError::internal)?,
        };
        let lifetime = lifetime(&credentials, now);
        let identity: Identity = credentials.into();
        let mut settings = SigningSettings::default();
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(lifetime);
        // S3's rules: the path is encoded once and never normalized.
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&signer.region)
            .name("s3")
            .time(now.as_datetime().into())
            .settings(settings)
            .build()
            .map_err(ApiError::internal)?
            .into();
        // `x-id` as the S3 client adds it: S3 ignores it, logs show it.
        let url = format!(
            "{}/{}?x-id=GetObject",
            signer.bucket_url,
            object_path(storage_path)
        );
        if crate::aws_calls::record::enabled() {
            let object = crate::aws_calls::needed::Resource::Object {
                bucket: self.bucket.clone(),
                key: crate::aws_calls::needed::object_class(storage_path),
            };
            let needed = [crate::aws_calls::needed::Needed::new(
                "s3:GetObject",
                object,
            )];
            let caller = crate::aws_calls::caller();
            crate::aws_calls::record::record_signed(
                LINK_SIGNER,
                caller.as_deref(),
                "GetObject",
                &needed,
            );
        }
        let mut request = http::Request::get(&url)
            .body(())
            .map_err(ApiError::internal)?;
        let signable = SignableRequest::new(
            "GET",
            &url,
            std::iter::empty(),
            SignableBody::UnsignedPayload,
        )
        .map_err(ApiError::internal)?;
        let (instructions, _) = sign(signable, &params)
            .map_err(ApiError::internal)?
            .into_parts();
        instructions.apply_to_request_http1x(&mut request);
        let expires = chrono::Duration::from_std(lifetime).map_err(ApiError::internal)?;
        Ok(SignedLink {
            storage_path: storage_path.to_owned(),
            url: request.uri().to_string(),
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

/// `storage_path` as an S3 URL path: each segment percent-encoded (RFC
/// 3986 unreserved characters kept), the slashes kept.
fn object_path(storage_path: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    storage_path
        .split('/')
        .map(|segment| percent_encoding::utf8_percent_encode(segment, SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/")
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
        let lifetime = link.url_expires_at.as_datetime() - crate::clock::now();
        assert!((lifetime.num_seconds() - 86_400).abs() <= 5, "{lifetime}");
    }

    #[tokio::test]
    async fn a_link_signed_by_credentials_that_expire_sooner_says_so() {
        let now = crate::model::now();
        let in_an_hour = std::time::SystemTime::from(now.as_datetime()) + Duration::from_secs(3600);
        for (expiry, seconds) in [
            (Some(in_an_hour), 3600),
            (Some(in_an_hour + Duration::from_secs(2 * 86_400)), 86_400),
            (Some(in_an_hour - Duration::from_secs(7200)), 1),
            (None, 86_400),
        ] {
            let sdk = aws_config::SdkConfig::builder()
                .region(aws_config::Region::new("eu-north-1"))
                .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                    "AKIDEXAMPLE",
                    "secret",
                    Some("session".into()),
                    expiry,
                    "role",
                )))
                .behavior_version(aws_config::BehaviorVersion::latest())
                .build();
            let link = LinkSigner::new(&sdk, "files", None)
                .sign_at("waybills/a/b/c.png", now)
                .await
                .unwrap();
            assert!(
                link.url.contains(&format!("X-Amz-Expires={seconds}&")),
                "{seconds}: {}",
                link.url
            );
            assert_eq!(
                link.url_expires_at,
                now + chrono::Duration::seconds(seconds as i64)
            );
        }
    }

    fn sdk(endpoint: Option<&str>) -> aws_config::SdkConfig {
        let mut sdk = aws_config::SdkConfig::builder()
            .region(aws_config::Region::new("eu-north-1"))
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "AKIDEXAMPLE",
                "secret",
                Some("session".into()),
                None,
                "test",
            )))
            .behavior_version(aws_config::BehaviorVersion::latest());
        if let Some(endpoint) = endpoint {
            sdk = sdk.endpoint_url(endpoint);
        }
        sdk.build()
    }

    /// The S3 client's own presigner, the reference.
    async fn presigned_by_the_client(
        sdk: &aws_config::SdkConfig,
        path: &str,
        at: Timestamp,
    ) -> String {
        let config = aws_sdk_s3::presigning::PresigningConfig::builder()
            .start_time(at.as_datetime().into())
            .expires_in(LINK_LIFETIME)
            .build()
            .unwrap();
        s3_client(sdk)
            .get_object()
            .bucket("files")
            .key(path)
            .presigned(config)
            .await
            .unwrap()
            .uri()
            .to_owned()
    }

    #[tokio::test]
    async fn links_are_the_urls_the_s3_client_presigns() {
        let at = crate::model::now();
        for endpoint in [None, Some("http://127.0.0.1:5005")] {
            let sdk = sdk(endpoint);
            let signer = LinkSigner::new(&sdk, "files", None);
            for path in ["waybills/a/b/c.png", "odd name/ä+%/x y.jpg"] {
                let ours = signer.sign_at(path, at).await.unwrap();
                assert_eq!(
                    ours.url,
                    presigned_by_the_client(&sdk, path, at).await,
                    "{endpoint:?} {path}"
                );
            }
        }
    }
}
