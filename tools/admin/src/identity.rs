//! Who runs the operator's commands. By default, whoever the standard AWS
//! configuration chain names (`GetCallerIdentity`'s ARN in the audit
//! trail). An assumed role's ARN carries a session name the caller
//! chooses, so a deployment that wants to know the person behind a shared
//! operator role has the CLI assume it with a source identity
//! (`ADMIN_ROLE_ARN`, `ADMIN_SOURCE_IDENTITY`): STS sets it on the session
//! for good (CloudTrail shows it on every call of the session, and a role
//! whose trust policy requires `sts:SourceIdentity` cannot be assumed
//! without one), and the audit records it beside the ARN. The source
//! identity is only as good as the trust policy that checks it: tied to
//! the caller (`${aws:username}` for IAM users, the identity provider's
//! for federated ones; docs/operations.md), not merely required, or any
//! operator could record a colleague's name.

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

    /// `ADMIN_ROLE_ARN` assumed with `ADMIN_SOURCE_IDENTITY`, or, when that
    /// is not set, with the caller's own IAM user name (what a trust
    /// policy that requires `sts:SourceIdentity` to be `${aws:username}`
    /// accepts); else the caller as configured.
    pub async fn from_env(sdk: &aws_config::SdkConfig) -> Result<Self> {
        let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
        match (var("ADMIN_ROLE_ARN"), var("ADMIN_SOURCE_IDENTITY")) {
            (None, None) => Ok(Self::as_configured(sdk)),
            (Some(role), Some(source)) => Self::assume(sdk, &role, &source).await,
            (Some(role), None) => Self::assume_as_caller(sdk, &role).await,
            (None, Some(_)) => bail!(
                "ADMIN_SOURCE_IDENTITY is set when a role is assumed: set ADMIN_ROLE_ARN too, or neither"
            ),
        }
    }

    /// `role` assumed with the caller's IAM user name as the source
    /// identity. A caller that is no IAM user (a role session, a
    /// federated user) names its source identity with
    /// `ADMIN_SOURCE_IDENTITY`: the one its identity provider set, which
    /// STS keeps through every role it assumes.
    pub async fn assume_as_caller(sdk: &aws_config::SdkConfig, role: &str) -> Result<Self> {
        let caller = aws_sdk_sts::Client::new(sdk)
            .get_caller_identity()
            .send()
            .await
            .map_err(|e| anyhow::anyhow!(aws_sdk_sts::error::DisplayErrorContext(e).to_string()))
            .context("asking STS who the caller is; nothing was done")?;
        let arn = caller.arn.unwrap_or_default();
        let Some(name) = user_name(&arn) else {
            bail!(
                "the caller ({arn}) is no IAM user: set ADMIN_SOURCE_IDENTITY to the source identity your identity provider gives you"
            );
        };
        Self::assume(sdk, role, name).await
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

/// The user name of an IAM user's ARN (`arn:aws:iam::<account>:user/<path/>name`,
/// or STS's `arn:aws:sts::<account>:user/...` form); None for any other
/// principal.
fn user_name(arn: &str) -> Option<&str> {
    let mut parts = arn.splitn(6, ':');
    let (service, resource) = (parts.nth(2)?, parts.nth(2)?);
    let path = resource.strip_prefix("user/")?;
    let name = path.rsplit('/').next()?;
    (matches!(service, "iam" | "sts") && !name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::user_name;

    #[test]
    fn only_an_iam_users_arn_names_a_user() {
        assert_eq!(
            user_name("arn:aws:iam::123456789012:user/alice"),
            Some("alice")
        );
        assert_eq!(
            user_name("arn:aws:iam::123456789012:user/ops/bob"),
            Some("bob")
        );
        assert_eq!(
            user_name("arn:aws:sts::123456789012:user/moto"),
            Some("moto")
        );
        for other in [
            "arn:aws:sts::123456789012:assumed-role/operators/alice",
            "arn:aws:iam::123456789012:root",
            "arn:aws:iam::123456789012:role/operators",
            "arn:aws:s3:::bucket/user/x",
            "arn:aws:iam::123456789012:user/",
            "",
        ] {
            assert_eq!(user_name(other), None, "{other}");
        }
    }
}
