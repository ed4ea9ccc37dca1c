//! `admin webhooks ...`: a superadmin manages an organization's webhooks,
//! the same rows the organization manages through the API, by the same
//! code (`shared::webhooks`, the store): list, register, delete, list a
//! webhook's delivery attempts, retry one delivery. Every line of output
//! carries an `audit` object: which operator did what to which
//! organization, and when (the operator is `ADMIN_OPERATOR`, else the
//! login name).

use anyhow::Result;
use clap::Subcommand;
use serde_json::{Value, json};
use shared::AppState;
use shared::model::webhook::{CreateWebhook, VerificationMode, WebhookRecord};
use uuid::Uuid;

#[derive(Subcommand)]
pub enum Webhooks {
    /// List an organization's webhooks (no secrets).
    List {
        #[arg(long)]
        org: Uuid,
    },
    /// Register a webhook for an organization; prints its secret once.
    Register {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        url: String,
        #[arg(long, default_value = "surplus.delivered")]
        event: String,
        /// hmac_sha256 (default) or bearer_token.
        #[arg(long, value_parser = parse_mode)]
        verification_mode: Option<VerificationMode>,
    },
    /// Delete an organization's webhook for good.
    Delete {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        webhook: Uuid,
    },
    /// A webhook's delivery attempts of the last 30 days, newest first.
    Deliveries {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        webhook: Uuid,
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Queue one more attempt of a delivery, with the same delivery id.
    Retry {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        webhook: Uuid,
        #[arg(long)]
        delivery: Uuid,
    },
}

fn parse_mode(text: &str) -> Result<VerificationMode, String> {
    serde_json::from_value(json!(text))
        .map_err(|_| format!("unknown mode {text:?}; use hmac_sha256 or bearer_token"))
}

/// Who ran the command, what it did to which organization, and when.
fn audit(action: &str, org: Uuid) -> Value {
    let operator = std::env::var("ADMIN_OPERATOR")
        .or_else(|_| std::env::var("USER"))
        .unwrap_or_else(|_| "unknown".into());
    json!({
        "operator": operator,
        "action": format!("webhooks.{action}"),
        "org_id": org,
        "at": shared::model::now(),
    })
}

/// `line` with its audit.
fn audited(mut line: Value, action: &str, org: Uuid) -> Value {
    line["audit"] = audit(action, org);
    line
}

fn shown(record: &WebhookRecord) -> Value {
    json!(record.view())
}

/// Runs `command`: the output's lines, each audited.
pub async fn run(state: &AppState, command: Webhooks) -> Result<Vec<Value>> {
    let store = &state.store;
    let mut lines = Vec::new();
    let mut print = |line: Value, action: &str, org: Uuid| lines.push(audited(line, action, org));
    match command {
        Webhooks::List { org } => {
            let hooks = store.webhooks().list(org).await?;
            if hooks.is_empty() {
                print(json!({"webhooks": 0}), "list", org);
            }
            for hook in &hooks {
                print(json!({"webhook": shown(hook)}), "list", org);
            }
        }
        Webhooks::Register {
            org,
            url,
            event,
            verification_mode,
        } => {
            store
                .orgs()
                .get(org)
                .await?
                .ok_or_else(shared::ApiError::org_not_found)?;
            let new = CreateWebhook {
                event,
                url,
                verification_mode,
            }
            .validate(state.config.webhook_allow_loopback)?;
            let (record, secret) = state.register_webhook(org, new).await?;
            print(
                json!({"webhook": shown(&record), "secret": secret}),
                "register",
                org,
            );
        }
        Webhooks::Delete { org, webhook } => {
            let removed = store.webhooks().delete(org, webhook).await?;
            print(json!({"deleted": shown(&removed)}), "delete", org);
        }
        Webhooks::Deliveries {
            org,
            webhook,
            limit,
        } => {
            store.webhooks().require(org, webhook).await?;
            let (attempts, _) = store
                .deliveries()
                .attempts(webhook, None, limit.clamp(1, 100))
                .await?;
            if attempts.is_empty() {
                print(json!({"attempts": 0}), "deliveries", org);
            }
            for attempt in &attempts {
                print(json!({"attempt": attempt}), "deliveries", org);
            }
        }
        Webhooks::Retry {
            org,
            webhook,
            delivery,
        } => {
            let queued = state.retry_delivery(org, webhook, delivery).await?;
            print(json!({"queued": queued}), "retry", org);
        }
    }
    Ok(lines)
}
