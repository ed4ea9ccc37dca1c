//! Stored files (waybill images, photos): what a file is, judged by its
//! bytes; the bucket operations the API needs; direct browser uploads to S3
//! through a presigned POST whose policy binds the object key, the size
//! range and the content type (SigV4 POST policy, `post_policy`); and
//! files copied to their place once the record that names them committed
//! (`promote`).
//!
//! Every write, copy and delete waits for the request's admission and
//! goes only while its `Idempotency-Key` claim is its own
//! (`outcome::effect_may_go`).

pub mod orphans;
pub mod paths;
pub mod post_policy;
pub mod promote;

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;

use crate::error::{ApiError, ApiResult};
use crate::store::exactly_once::outcome;

/// Largest file accepted: the contract's "10 MB", read as 10 MiB.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// An image type the API accepts, recognised by its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    Jpeg,
    Png,
    Webp,
}

impl ImageKind {
    pub const ALL: [ImageKind; 3] = [ImageKind::Jpeg, ImageKind::Png, ImageKind::Webp];

    /// The kind of `bytes`, by magic number; the name and the declared
    /// content type are not trusted.
    pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
        match bytes {
            [0xff, 0xd8, 0xff, ..] => Some(ImageKind::Jpeg),
            [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, ..] => Some(ImageKind::Png),
            [
                b'R',
                b'I',
                b'F',
                b'F',
                _,
                _,
                _,
                _,
                b'W',
                b'E',
                b'B',
                b'P',
                ..,
            ] => Some(ImageKind::Webp),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Png => "image/png",
            ImageKind::Webp => "image/webp",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            ImageKind::Jpeg => "jpg",
            ImageKind::Png => "png",
            ImageKind::Webp => "webp",
        }
    }

    pub fn from_content_type(value: &str) -> Option<ImageKind> {
        Self::ALL.into_iter().find(|k| k.content_type() == value)
    }
}

/// Bytes enough to tell the kinds apart.
pub const SNIFF_BYTES: usize = 12;

/// What `Files::copy_new` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Copied {
    Done,
    /// An object was at the name already: nothing written.
    AlreadyThere,
    /// The source is not the version or ETag named any more: nothing
    /// written.
    SourceChanged,
}

/// What `Files::peek` read of one version of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peeked {
    /// The whole object's size in bytes.
    pub size: u64,
    /// Its first `SNIFF_BYTES` (fewer when it is smaller).
    pub head: Vec<u8>,
    pub etag: Option<String>,
    /// The version read, in a versioned bucket.
    pub version: Option<String>,
}

/// One object of a listing (`Files::list`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub path: String,
    /// When its current version was written.
    pub modified: chrono::DateTime<chrono::Utc>,
}

/// The bucket, as the API's own role sees it.
#[derive(Clone, Debug)]
pub struct Files {
    s3: aws_sdk_s3::Client,
    sdk: aws_config::SdkConfig,
    bucket: String,
}

fn s3_error<E: std::error::Error + Send + Sync + 'static, R: std::fmt::Debug>(
    error: aws_sdk_s3::error::SdkError<E, R>,
) -> ApiError {
    ApiError::internal(aws_sdk_s3::error::DisplayErrorContext(error).to_string())
}

impl Files {
    pub fn new(sdk: &aws_config::SdkConfig, bucket: &str) -> Self {
        Self {
            s3: crate::links::s3_client(sdk),
            sdk: sdk.clone(),
            bucket: bucket.to_owned(),
        }
    }

    /// Writes `bytes` as `key`: the version written, in a versioned
    /// bucket (as deployed).
    pub async fn put(
        &self,
        key: &str,
        bytes: bytes::Bytes,
        kind: ImageKind,
    ) -> ApiResult<Option<String>> {
        effect_may_go().await?;
        let out = self
            .s3
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(kind.content_type())
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(s3_error)?;
        Ok(known_version(out.version_id()))
    }

    /// The object's size and first bytes, or `None` when there is none,
    /// with what names this very version of it (`Peeked`).
    pub async fn peek(&self, key: &str) -> ApiResult<Option<Peeked>> {
        let out = self
            .s3
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .range(format!("bytes=0-{}", SNIFF_BYTES - 1))
            .send()
            .await;
        let out = match out {
            Ok(out) => out,
            Err(e) if e.as_service_error().is_some_and(|e| e.is_no_such_key()) => return Ok(None),
            Err(e) => return Err(s3_error(e)),
        };
        // `Content-Range: bytes 0-11/12345` carries the whole size.
        let size = out
            .content_range()
            .and_then(|r| r.rsplit('/').next())
            .and_then(|n| n.parse().ok())
            .or(out.content_length().and_then(|n| u64::try_from(n).ok()))
            .unwrap_or(0);
        let etag = out.e_tag().map(str::to_owned);
        let version = known_version(out.version_id());
        let head = out
            .body
            .collect()
            .await
            .map_err(ApiError::internal)?
            .into_bytes();
        Ok(Some(Peeked {
            size,
            head: head.to_vec(),
            etag,
            version,
        }))
    }

    /// Copies exactly `version` of `from` (when the bucket is versioned;
    /// the object as it stands otherwise), on condition that its ETag is
    /// `etag` when one is given, to `to`, typed as `content_type`, unless
    /// an object is at `to` already: nothing is ever written over (S3's
    /// `If-None-Match: *`; a caller that cannot know the name is fresh
    /// looks first too, `exists`, for engines that ignore the condition on
    /// a copy). Both keys are the API's own (ASCII, no characters to
    /// escape).
    pub async fn copy_new(
        &self,
        from: &str,
        version: Option<&str>,
        etag: Option<&str>,
        to: &str,
        content_type: &str,
    ) -> ApiResult<Copied> {
        effect_may_go().await?;
        let source = match version {
            Some(version) => format!("{}/{from}?versionId={version}", self.bucket),
            None => format!("{}/{from}", self.bucket),
        };
        let copied = self
            .s3
            .copy_object()
            .bucket(&self.bucket)
            .copy_source(source)
            .set_copy_source_if_match(etag.map(str::to_owned))
            .if_none_match("*")
            .key(to)
            .content_type(content_type)
            .metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace)
            .send()
            .await;
        match copied {
            Ok(_) => Ok(Copied::Done),
            // Either condition: the source changed, or another copy got
            // there first.
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 412) => {
                Ok(match self.exists(to).await? {
                    true => Copied::AlreadyThere,
                    false => Copied::SourceChanged,
                })
            }
            Err(e) => Err(s3_error(e)),
        }
    }

    /// Whether an object is at `key` (for a role that may read it).
    pub async fn exists(&self, key: &str) -> ApiResult<bool> {
        let head = self
            .s3
            .head_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await;
        match head {
            Ok(_) => Ok(true),
            // S3 answers 403 for a missing object to a role that may read
            // it but not list the bucket.
            Err(e)
                if e.raw_response()
                    .is_some_and(|r| matches!(r.status().as_u16(), 403 | 404)) =>
            {
                Ok(false)
            }
            Err(e) => Err(s3_error(e)),
        }
    }

    /// One page (at most `objects`, 1000 when `None`) of the objects under
    /// `prefix`, in key order, from where the last page's continuation
    /// (`from`) left off, with the next page's. For operators' commands
    /// (`orphans`): no function's role may list the bucket.
    pub async fn list(
        &self,
        prefix: &str,
        from: Option<String>,
        objects: Option<i32>,
    ) -> ApiResult<(Vec<Listed>, Option<String>)> {
        let out = self
            .s3
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .set_continuation_token(from)
            .set_max_keys(objects)
            .send()
            .await
            .map_err(s3_error)?;
        let listed = out
            .contents()
            .iter()
            .filter_map(|object| {
                let modified = object.last_modified()?;
                Some(Listed {
                    path: object.key()?.to_owned(),
                    modified: chrono::DateTime::from_timestamp(
                        modified.secs(),
                        modified.subsec_nanos(),
                    )?,
                })
            })
            .collect();
        let next = out
            .is_truncated()
            .unwrap_or(false)
            .then(|| out.next_continuation_token().map(str::to_owned))
            .flatten();
        Ok((listed, next))
    }

    pub async fn delete(&self, key: &str) -> ApiResult<()> {
        effect_may_go().await?;
        self.s3
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(s3_error)?;
        Ok(())
    }

    /// A presigned browser upload of `key` (see `post_policy`), signed with
    /// the API's own credentials.
    pub async fn upload_form(
        &self,
        key: &str,
        kind: ImageKind,
        lifetime: std::time::Duration,
    ) -> ApiResult<post_policy::UploadForm> {
        use aws_credential_types::provider::ProvideCredentials;
        let provider = self
            .sdk
            .credentials_provider()
            .ok_or_else(|| ApiError::internal("no AWS credentials to sign uploads"))?;
        let credentials = provider
            .provide_credentials()
            .await
            .map_err(ApiError::internal)?;
        let region = self
            .sdk
            .region()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "us-east-1".into());
        let url = match self.sdk.endpoint_url() {
            // Moto, the local stack's S3: path-style addressing.
            Some(endpoint) => format!("{}/{}", endpoint.trim_end_matches('/'), self.bucket),
            None => format!("https://{}.s3.{region}.amazonaws.com", self.bucket),
        };
        let request = post_policy::UploadRequest {
            url,
            bucket: &self.bucket,
            key,
            content_type: kind.content_type(),
            max_bytes: MAX_FILE_BYTES,
            lifetime,
        };
        Ok(post_policy::sign(
            &request,
            &post_policy::Signer {
                access_key_id: credentials.access_key_id(),
                secret_access_key: credentials.secret_access_key(),
                session_token: credentials.session_token(),
                region: &region,
            },
            crate::clock::now(),
        ))
    }
}

/// The time a bucket operation is given to finish before the request's
/// hold on its `Idempotency-Key` must still run (`outcome::fence`).
const BUCKET_CALL: Duration = Duration::from_secs(10);

async fn effect_may_go() -> ApiResult<()> {
    outcome::effect_may_go(BUCKET_CALL).await?;
    Ok(())
}

/// A version id S3 answered, unless the bucket is not versioned.
fn known_version(version: Option<&str>) -> Option<String> {
    version
        .filter(|v| !v.is_empty() && *v != "null")
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_the_bytes() {
        assert_eq!(
            ImageKind::sniff(&[0xff, 0xd8, 0xff, 0xe0]),
            Some(ImageKind::Jpeg)
        );
        assert_eq!(
            ImageKind::sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            Some(ImageKind::Png)
        );
        assert_eq!(
            ImageKind::sniff(b"RIFF\x10\0\0\0WEBPVP8 "),
            Some(ImageKind::Webp)
        );
        for other in [
            &b"GIF89a......"[..],
            b"%PDF-1.7",
            b"hello, world",
            b"",
            b"\xff\xd8",
        ] {
            assert_eq!(ImageKind::sniff(other), None, "{other:?}");
        }
        assert_eq!(
            ImageKind::from_content_type("image/png"),
            Some(ImageKind::Png)
        );
        assert_eq!(ImageKind::from_content_type("image/gif"), None);
    }
}
