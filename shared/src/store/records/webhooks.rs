//! Webhooks (`ORG#<org>` / `WEBHOOK#<id>`) and their uniqueness per
//! organization, event and URL (`WEBHOOK#<org>#<event>#<sha256(url)>` /
//! `UNIQUE`), written and removed together in one transaction with the
//! organization's count of them (`webhooks` on its item, at most
//! `MAX_WEBHOOKS`).

use uuid::Uuid;

use aws_sdk_dynamodb::types::{ConditionCheck, Put, TransactWriteItem, Update};

use crate::error::codes;
use crate::error::{ApiError, ApiResult};
use crate::model::delivery::PingRequested;
use crate::model::webhook::{MAX_WEBHOOKS, WebhookRecord};
use crate::store::engine::client::Store;
use crate::store::engine::item::{from_item, key, n, s, to_item};
use crate::store::engine::keys::{self, ORG_SK, UNIQUE_SK, WEBHOOK_PREFIX};
use crate::store::engine::query::query_records;
use crate::store::exactly_once::outbox::OutboxRecord;
use crate::store::exactly_once::outcome;
use crate::store::exactly_once::tx::{delete, put, raced, transact};

pub struct Webhooks<'a>(pub(in crate::store) &'a Store);

pub fn webhook_not_found() -> ApiError {
    codes::WEBHOOK_NOT_FOUND.with("no webhook of this organization has this id")
}

fn webhook_limit_reached() -> ApiError {
    codes::WEBHOOK_LIMIT_REACHED.with(format!(
        "this organization has {MAX_WEBHOOKS} webhooks, the most it may have; delete one first"
    ))
}

/// The organization's webhook count moved by `by` (+1 within the cap, -1).
fn count(table: &str, org: Uuid, by: i64) -> ApiResult<TransactWriteItem> {
    let mut update = Update::builder()
        .table_name(table)
        .set_key(Some(key(keys::org_pk(org), ORG_SK)))
        .update_expression("ADD webhooks :by")
        .expression_attribute_values(":by", n(by));
    update = if by > 0 {
        update
            .condition_expression(
                "attribute_exists(pk) AND (attribute_not_exists(webhooks) OR webhooks < :cap)",
            )
            .expression_attribute_values(":cap", n(MAX_WEBHOOKS))
    } else {
        update.condition_expression("attribute_exists(pk)")
    };
    let update = update.build().map_err(ApiError::internal)?;
    Ok(TransactWriteItem::builder().update(update).build())
}

fn webhook_already_exists() -> ApiError {
    codes::WEBHOOK_ALREADY_EXISTS
        .with("this organization already has a webhook for this event and URL")
}

#[derive(serde::Serialize)]
struct WebhookItem<'a> {
    pk: String,
    sk: String,
    #[serde(flatten)]
    record: &'a WebhookRecord,
}

#[derive(serde::Serialize)]
struct UniqueItem {
    pk: String,
    sk: &'static str,
    webhook_id: Uuid,
}

fn unique_key(record: &WebhookRecord) -> String {
    keys::webhook_unique_pk(record.org_id, &record.event, &record.url)
}

impl Webhooks<'_> {
    /// Stores a new webhook; 409 `webhook_already_exists` when the
    /// organization has one for the same event and URL,
    /// `webhook_limit_reached` when it has `MAX_WEBHOOKS`.
    pub async fn create(&self, record: &WebhookRecord) -> ApiResult<()> {
        let table = self.0.table();
        let item = WebhookItem {
            pk: keys::org_pk(record.org_id),
            sk: keys::webhook_sk(record.id),
            record,
        };
        let unique = UniqueItem {
            pk: unique_key(record),
            sk: UNIQUE_SK,
            webhook_id: record.id,
        };
        let actions = vec![
            put(table, to_item(&item)?, Some("attribute_not_exists(pk)"))?,
            put(table, to_item(&unique)?, Some("attribute_not_exists(pk)"))?,
            count(table, record.org_id, 1)?,
        ];
        let conflicts = [
            (1, webhook_already_exists as fn() -> ApiError),
            (2, webhook_limit_reached),
        ];
        outcome::render(record).await?;
        transact(self.0, actions, &conflicts).await
    }

    /// Stores `rolled` (a webhook with its secret rolled: the new one
    /// sealed, the one before and until when it signs) if the webhook's
    /// secret is still `current`: 409 `raced` (for `tx::retry_races`) when
    /// another roll came first or the webhook is gone.
    pub async fn roll(&self, rolled: &WebhookRecord, current: &str) -> ApiResult<()> {
        let item = WebhookItem {
            pk: keys::org_pk(rolled.org_id),
            sk: keys::webhook_sk(rolled.id),
            record: rolled,
        };
        let put = Put::builder()
            .table_name(self.0.table())
            .set_item(Some(to_item(&item)?))
            .condition_expression("#sealed = :current")
            .expression_attribute_names("#sealed", "sealed_secret")
            .expression_attribute_values(":current", s(current))
            .build()
            .map_err(ApiError::internal)?;
        let actions = vec![TransactWriteItem::builder().put(put).build()];
        outcome::render(rolled).await?;
        transact(self.0, actions, &[(0, raced)]).await
    }

    /// Stores `ping`'s outbox record (a ping of the one webhook it names)
    /// while that webhook exists, with `requested` (the answer) kept for
    /// the request's `Idempotency-Key`: 404 `webhook_not_found` when it
    /// was deleted meanwhile.
    pub async fn ping(&self, ping: &OutboxRecord, requested: &PingRequested) -> ApiResult<()> {
        let table = self.0.table();
        let webhook = ping
            .webhook_id
            .ok_or_else(|| ApiError::internal("a ping names no webhook"))?;
        let exists = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(key(
                keys::org_pk(ping.org_id),
                keys::webhook_sk(webhook),
            )))
            .condition_expression("attribute_exists(pk)")
            .build()
            .map_err(ApiError::internal)?;
        let actions = vec![
            ping.write(table)?,
            TransactWriteItem::builder().condition_check(exists).build(),
        ];
        outcome::render(requested).await?;
        transact(self.0, actions, &[(1, webhook_not_found)]).await
    }

    /// The organization's webhooks, oldest first.
    pub async fn list(&self, org: Uuid) -> ApiResult<Vec<WebhookRecord>> {
        let store = self.0;
        let query = store.prefix_query(keys::org_pk(org), WEBHOOK_PREFIX);
        let mut hooks: Vec<WebhookRecord> = query_records(query).await?;
        hooks.sort_by_key(|hook| (hook.created_at, hook.id));
        Ok(hooks)
    }

    /// Webhook `id` of `org`, if it exists.
    pub async fn get(&self, org: Uuid, id: Uuid) -> ApiResult<Option<WebhookRecord>> {
        let found = self
            .0
            .get_item(key(keys::org_pk(org), keys::webhook_sk(id)))
            .await?;
        found.map(from_item).transpose()
    }

    /// Webhook `id` of `org`, or 404 `webhook_not_found`.
    pub async fn require(&self, org: Uuid, id: Uuid) -> ApiResult<WebhookRecord> {
        self.get(org, id).await?.ok_or_else(webhook_not_found)
    }

    /// Deletes webhook `id` of `org` with its uniqueness item (404
    /// `webhook_not_found`, also for a second, racing delete).
    pub async fn delete(&self, org: Uuid, id: Uuid) -> ApiResult<WebhookRecord> {
        let table = self.0.table();
        let record = self.require(org, id).await?;
        let actions = vec![
            delete(
                table,
                key(keys::org_pk(org), keys::webhook_sk(id)),
                Some("attribute_exists(pk)"),
            )?,
            delete(table, key(unique_key(&record), UNIQUE_SK), None)?,
            count(table, org, -1)?,
        ];
        transact(self.0, actions, &[(0, webhook_not_found)]).await?;
        Ok(record)
    }
}
