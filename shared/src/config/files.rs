//! The files' bucket and the key that signs their links.

use super::vars::Vars;

/// Local development default; `make run` and the tests use it as it is.
pub const DEFAULT_BUCKET: &str = "integration-api-files";

/// The files' bucket and the key that signs their links (`state`:
/// `Files`, `Links`).
#[derive(Clone, Debug)]
pub struct FilesConfig {
    pub bucket: String,
    /// Secrets Manager secret with the access key that signs file links.
    pub link_signer_secret_arn: Option<String>,
}

impl FilesConfig {
    pub(super) fn read(vars: &Vars) -> Self {
        FilesConfig {
            bucket: vars
                .get("BUCKET_NAME")
                .unwrap_or_else(|| DEFAULT_BUCKET.into()),
            link_signer_secret_arn: vars.get("LINK_SIGNER_SECRET_ARN"),
        }
    }
}
