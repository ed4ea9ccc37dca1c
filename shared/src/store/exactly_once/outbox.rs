//! Outbox records (`OUTBOX#<deliveryId>` / `OUTBOX`): written in the same
//! transaction as the change they announce, so an announcement is never
//! lost and never made for a change that did not happen. Indexed by the
//! hour they were written (`gsi1`: `OUTBOX#<yyyy-mm-dd-hh>`), for the
//! sweeper that sends the ones the fast path missed.

use aws_sdk_dynamodb::types::TransactWriteItem;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::ApiResult;
use crate::model::Timestamp;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{from_item, key, n, s, to_item};
use crate::store::engine::keys;
use crate::store::exactly_once::hourly;
use crate::store::exactly_once::tx::put;

pub const SURPLUS_DELIVERED: &str = "surplus.delivered";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxRecord {
    /// The announcement's id (each delivery's id derives from it and its
    /// webhook's).
    pub id: Uuid,
    pub event: String,
    pub org_id: Uuid,
    /// The load it announces; none for a ping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surplus_id: Option<Uuid>,
    /// The one webhook it is for (a ping); none: every webhook of the
    /// organization registered for its event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_id: Option<Uuid>,
    pub created_at: Timestamp,
}

#[derive(Serialize)]
struct OutboxItem<'a> {
    pk: String,
    sk: &'static str,
    gsi1pk: String,
    gsi1sk: String,
    #[serde(flatten)]
    record: &'a OutboxRecord,
}

impl OutboxRecord {
    /// The announcement that load `surplus` of `org` was delivered.
    pub fn delivered(org_id: Uuid, surplus_id: Uuid, at: Timestamp) -> Self {
        OutboxRecord {
            id: Uuid::now_v7(),
            event: SURPLUS_DELIVERED.into(),
            org_id,
            surplus_id: Some(surplus_id),
            webhook_id: None,
            created_at: at,
        }
    }

    /// A ping of webhook `webhook` of `org`, asked for at `at`.
    pub fn ping(org_id: Uuid, webhook: Uuid, at: Timestamp) -> Self {
        OutboxRecord {
            id: Uuid::now_v7(),
            event: crate::model::webhook::WEBHOOK_PING.into(),
            org_id,
            surplus_id: None,
            webhook_id: Some(webhook),
            created_at: at,
        }
    }

    /// The delivery the record makes for webhook `webhook`. A ping's is
    /// made when it was asked for (its payload's `requestedAt`).
    pub fn delivery_to(&self, webhook: Uuid) -> crate::model::delivery::DeliveryRecord {
        let mut delivery = crate::model::delivery::DeliveryRecord::new(
            self.id,
            webhook,
            self.org_id,
            self.surplus_id,
            &self.event,
        );
        if self.webhook_id.is_some() {
            delivery.created_at = self.created_at;
        }
        delivery
    }

    /// The transaction action that stores the record.
    pub(crate) fn write(&self, table: &str) -> ApiResult<TransactWriteItem> {
        let at = self.created_at.as_datetime();
        let item = OutboxItem {
            pk: keys::outbox_pk(self.id),
            sk: keys::OUTBOX_SK,
            gsi1pk: keys::outbox_hour_pk(at, Some(hourly::shard_of(self.id.as_bytes()))),
            gsi1sk: format!("{}#{}", self.created_at, self.id),
            record: self,
        };
        put(table, to_item(&item)?, Some("attribute_not_exists(pk)"))
    }
}

/// Days an outbox record is kept once dispatched.
const KEEP_DAYS: i64 = 30;

pub struct Outbox<'a>(pub(in crate::store) &'a Store);

impl Outbox<'_> {
    /// Outbox record `id` (strongly consistent), if it exists.
    pub async fn get(&self, id: Uuid) -> ApiResult<Option<OutboxRecord>> {
        let found = self
            .0
            .get_item(key(keys::outbox_pk(id), keys::OUTBOX_SK))
            .await?;
        found.map(from_item).transpose()
    }

    /// Takes record `id` out of the sweeper's index (its deliveries are
    /// queued) and lets it expire.
    pub async fn mark_dispatched(&self, id: Uuid) -> ApiResult<()> {
        let store = self.0;
        let now = crate::model::now();
        let expires = (now + chrono::TimeDelta::days(KEEP_DAYS)).unix();
        store
            .update(keys::outbox_pk(id), keys::OUTBOX_SK)
            .update_expression("SET dispatched_at = :now, #ttl = :ttl REMOVE gsi1pk, gsi1sk")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#ttl", keys::TTL)
            .expression_attribute_values(":now", s(now.to_string()))
            .expression_attribute_values(":ttl", n(expires))
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(())
    }

    /// Records not yet dispatched, written in the last `hours` hours and
    /// at least `settle` ago (`store::exactly_once::hourly`).
    pub async fn undispatched(
        &self,
        hours: u32,
        settle: chrono::TimeDelta,
    ) -> ApiResult<Vec<OutboxRecord>> {
        let found = hourly::waiting(self.0, keys::outbox_hour_pk, hours, settle).await?;
        found.into_iter().map(from_item).collect()
    }
}
