//! Who runs the operator's commands. By default, whoever the standard AWS
//! configuration chain names (`GetCallerIdentity`'s ARN in the audit
//! trail). An assumed role's ARN carries a session name the caller
//! chooses, so a deployment that wants to know the person behind a shared
//! operator role has the CLI assume it with a source identity
//! (`ADMIN_ROLE_ARN`, `ADMIN_SOURCE_IDENTITY`): STS sets it on the session
//! for good (CloudTrail shows it on every call of the session, and a role
//! whose trust policy requires `sts:SourceIdentity` cannot be assumed
//! without one), and the audit records it beside the ARN.

use anyhow::{Context, Result, bail};
use aws_credential_types::Credentials;

/// The identity the commands run as.
#[derive(Clone, Debug)]
pub struct Operator {
    /// The configuration the commands call AWS with.
    pub sdk: aws_config::SdkConfig,
    /// The source identity set on the operator's role session, when the
    /// CLI assumed the role.
    pub source_identity: Option<String>,
}

impl Operator {
    /// The caller as configured, with no source identity.
    pub fn as_configured(sdk: &aws_config::SdkConfig) -> Self {
        Self {
            sdk: sdk.clone(),
            source_identity: None,
        }
    }

    /// `ADMIN_ROLE_ARN` assumed with `ADMIN_SOURCE_IDENTITY` when set (both
    /// or neither); else the caller as configured.
    pub async fn from_env(sdk: &aws_config::SdkConfig) -> Result<Self> {
        let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (var("ADMIN_ROLE_ARN"), var("ADMIN_SOURCE_IDENTITY")) {
            (None, None) => Ok(Self::as_configured(sdk)),
            (Some(role), Some(source)) => Self::assume(sdk, &role, &source).await,
            _ => bail!(
                "set both ADMIN_ROLE_ARN and ADMIN_SOURCE_IDENTITY, or neither: a source identity is set when a role is assumed"
            ),
        }
    }

    /// `role` assumed with source identity `source` (STS's rule: 2 to 64
    /// of letters, digits and `_+=,.@-`), which also names the session.
    pub async fn assume(sdk: &aws_config::SdkConfig, role: &str, source: &str) -> Result<Self> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || "_+=,.@-".contains(c);
        if !(2..=64).contains(&source.len()) || !source.chars().all(allowed) {
            bail!(
                "ADMIN_SOURCE_IDENTITY must be 2 to 64 letters, digits or _+=,.@- (STS's rule), got {source:?}"
            );
        }
        let assumed = aws_sdk_sts::Client::new(sdk)
            .assume_role()
            .role_arn(role)
            .role_session_name(source)
            .source_identity(source)
            .send()
            .await
            .map_err(|e| anyhow::anyhow!(aws_sdk_sts::error::DisplayErrorContext(e).to_string()))
            .with_context(|| format!("assuming {role} as {source}; nothing was done"))?;
        let credentials = assumed
            .credentials
            .context("STS gave no credentials for the role; nothing was done")?;
        let credentials = Credentials::new(
            credentials.access_key_id,
            credentials.secret_access_key,
            Some(credentials.session_token),
            std::time::SystemTime::try_from(credentials.expiration).ok(),
            "admin assumed role",
        );
        let sdk = sdk
            .to_builder()
            .credentials_provider(
                aws_credential_types::provider::SharedCredentialsProvider::new(credentials),
            )
            .build();
        Ok(Self {
            sdk,
            source_identity: Some(source.to_owned()),
        })
    }
}
