//! The webhooks' queues, payloads and sealed secrets.

use super::vars::Vars;
use super::{ConfigError, development_only};
use crate::deployment_key::KeySource;

pub(super) const DEV_WEBHOOK_SEAL_KEY: &str =
    "local-development-webhook-seal-key-not-for-production";

/// The webhooks' queues, payloads and sealed secrets (the webhooks
/// function, the dispatcher).
#[derive(Clone, Debug)]
pub struct WebhooksConfig {
    pub queue_url: Option<String>,
    /// Where the dispatcher moves deliveries whose attempts ran out.
    pub dlq_url: Option<String>,
    /// Development only (refused unless every AWS endpoint is on loopback,
    /// `endpoints`): webhooks may be plain `http://` on loopback and the
    /// dispatcher may connect to loopback, for a local receiver.
    pub allow_loopback: bool,
    /// `adminUrl` of webhook payloads: `{surplusId}` is replaced.
    pub admin_url_template: Option<String>,
    /// Key that seals webhook secrets at rest, chosen as the cursor key is
    /// (`WEBHOOK_SEAL_KEY`, `WEBHOOK_SEAL_KEY_SECRET_ARN`).
    pub seal_key: Option<KeySource>,
}

impl WebhooksConfig {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let allow_loopback = vars.flag("WEBHOOK_ALLOW_LOOPBACK_HTTP", false)?;
        if allow_loopback && !vars.local {
            return Err(development_only("WEBHOOK_ALLOW_LOOPBACK_HTTP"));
        }
        Ok(WebhooksConfig {
            queue_url: vars.get("WEBHOOK_QUEUE_URL"),
            dlq_url: vars.get("WEBHOOK_DLQ_URL"),
            allow_loopback,
            admin_url_template: vars.get("ADMIN_URL_TEMPLATE"),
            seal_key: vars.key("WEBHOOK_SEAL_KEY", DEV_WEBHOOK_SEAL_KEY)?,
        })
    }
}
