//! `admin webhooks ...`: a superadmin manages an organization's webhooks,
//! the same rows the organization manages through the API, by the same
//! code (`shared::webhooks`, the store): list, register, delete, list a
//! webhook's delivery attempts (or its pings'), retry one delivery, roll a
//! secret, ping it. Register, roll, delete, retry and ping change
//! something: their audit records
//! (`crate::audit`) say who did what to which organization, and when.

use anyhow::Result;
use clap::Subcommand;
use serde_json::{Value, json};
use shared::model::integer::Integer;
use shared::model::patch::Patch;
use shared::model::webhook::{CreateWebhook, RollSecret, VerificationMode, WebhookRecord};
use shared::state::AppState;
use shared::store::exactly_once::outbox::OutboxRecord;
use shared::store::records::deliveries::AttemptLog;
use uuid::Uuid;

use crate::audit::{Action, Done, shown_url};

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
    /// Give a webhook a new secret (printed once); the one before signs
    /// beside it for the overlap, so its receiver can switch meanwhile.
    RollSecret {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        webhook: Uuid,
        /// Hours the secret before keeps signing (0 to 168).
        #[arg(long, default_value_t = shared::model::webhook::DEFAULT_OVERLAP_HOURS)]
        overlap_hours: u32,
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
        /// Its pings' attempts instead of its loads' deliveries'.
        #[arg(long)]
        pings: bool,
    },
    /// Send the webhook a signed `webhook.ping` (no load, report or bill
    /// touched): its attempts show with `deliveries --pings`.
    Ping {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        webhook: Uuid,
    },
    /// After a receiver's outage: one more attempt of each delivery whose
    /// last attempt failed, of those attempted since `--since` (30 days
    /// back at the earliest), 100 a run; run again from the `next_since` it
    /// prints until that is null.
    Recover {
        #[arg(long)]
        org: Uuid,
        #[arg(long)]
        webhook: Uuid,
        /// A date-time (RFC 3339).
        #[arg(long)]
        since: String,
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

fn shown(record: &WebhookRecord) -> Value {
    json!(record.view())
}

impl Webhooks {
    /// What the command changes, for its audit; `None` when it only reads.
    pub fn action(&self) -> Option<Action> {
        match self {
            Webhooks::List { .. } | Webhooks::Deliveries { .. } => None,
            Webhooks::Register {
                org,
                url,
                event,
                verification_mode,
            } => Some(Action::new(
                "webhooks register",
                Some(*org),
                json!({"event": event, "url": shown_url(url), "verification_mode": verification_mode}),
            )),
            Webhooks::RollSecret {
                org,
                webhook,
                overlap_hours,
            } => Some(Action::new(
                "webhooks roll-secret",
                Some(*org),
                json!({"webhook_id": webhook, "overlap_hours": overlap_hours}),
            )),
            Webhooks::Delete { org, webhook } => Some(Action::new(
                "webhooks delete",
                Some(*org),
                json!({"webhook_id": webhook}),
            )),
            Webhooks::Retry {
                org,
                webhook,
                delivery,
            } => Some(Action::new(
                "webhooks retry",
                Some(*org),
                json!({"webhook_id": webhook, "delivery_id": delivery}),
            )),
            Webhooks::Ping { org, webhook } => Some(Action::new(
                "webhooks ping",
                Some(*org),
                json!({"webhook_id": webhook}),
            )),
            Webhooks::Recover {
                org,
                webhook,
                since,
            } => Some(Action::new(
                "webhooks recover",
                Some(*org),
                json!({"webhook_id": webhook, "since": since}),
            )),
        }
    }
}

/// Runs `command`: the output's lines (a registration's secret among them,
/// shown once), and what it made.
pub async fn run(state: &AppState, command: Webhooks) -> Result<Done> {
    crate::cli::as_operators(run_on(state, command)).await
}

async fn run_on(state: &AppState, command: Webhooks) -> Result<Done> {
    let store = &state.store;
    let mut lines = Vec::new();
    let mut made = None;
    let mut print = |line: Value| lines.push(line);
    match command {
        Webhooks::List { org } => {
            let hooks = store.webhooks().list(org).await?;
            if hooks.is_empty() {
                print(json!({"webhooks": 0}));
            }
            for hook in &hooks {
                print(json!({"webhook": shown(hook)}));
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
            .validate(state.config.webhooks.allow_loopback)?;
            let (record, secret) = state.register_webhook(org, new).await?;
            made = Some(json!({"webhook_id": record.id}));
            print(json!({"webhook": shown(&record), "secret": secret}));
        }
        Webhooks::RollSecret {
            org,
            webhook,
            overlap_hours,
        } => {
            let overlap = RollSecret {
                overlap_hours: Patch::Value(Integer(overlap_hours.into())),
            }
            .overlap()?;
            let (record, secret) = state.roll_webhook_secret(org, webhook, overlap).await?;
            print(json!({
                "webhook": shown(&record),
                "secret": secret,
                "previous_secret_expires_at": record.previous_secret_until,
            }));
        }
        Webhooks::Delete { org, webhook } => {
            let removed = store.webhooks().delete(org, webhook).await?;
            print(json!({"deleted": shown(&removed)}));
        }
        Webhooks::Deliveries {
            org,
            webhook,
            limit,
            pings,
        } => {
            store.webhooks().require(org, webhook).await?;
            let log = if pings {
                AttemptLog::Pings
            } else {
                AttemptLog::Deliveries
            };
            let (attempts, _) = store
                .deliveries()
                .attempts(webhook, log, None, limit.clamp(1, 100))
                .await?;
            if attempts.is_empty() {
                print(json!({"attempts": 0}));
            }
            for attempt in &attempts {
                print(json!({"attempt": attempt}));
            }
        }
        Webhooks::Retry {
            org,
            webhook,
            delivery,
        } => {
            let queued = state.retry_delivery(org, webhook, delivery).await?;
            print(json!({"queued": queued}));
        }
        Webhooks::Ping { org, webhook } => {
            store.webhooks().require(org, webhook).await?;
            let ping = OutboxRecord::ping(org, webhook, shared::model::now());
            let requested = state.ping_webhook(&ping).await?;
            state.queue.announce(org, ping.id).await;
            made = Some(json!({"delivery_id": requested.delivery_id}));
            print(json!({"ping": requested}));
        }
        Webhooks::Recover {
            org,
            webhook,
            since,
        } => {
            let since = shared::model::delivery::Recover {
                since: Patch::Value(since),
            }
            .since(shared::model::now())?;
            let queued = state.recover_deliveries(org, webhook, since).await?;
            made = Some(json!({"queued": queued.queued, "skipped": queued.skipped}));
            print(json!({"recovery": queued}));
        }
    }
    Ok(Done {
        lines,
        org: None,
        made,
    })
}
