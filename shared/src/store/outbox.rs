//! Outbox records (`OUTBOX#<deliveryId>` / `OUTBOX`): written in the same
//! transaction as the change they announce, so an announcement is never
//! lost and never made for a change that did not happen. Indexed by the
//! hour they were written (`gsi1`: `OUTBOX#<yyyy-mm-dd-hh>`), for the
//! sweeper that sends the ones the fast path missed.

use aws_sdk_dynamodb::types::TransactWriteItem;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::item::to_item;
use super::keys;
use super::tx::put;
use crate::error::ApiResult;
use crate::model::Timestamp;

pub const SURPLUS_DELIVERED: &str = "surplus.delivered";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxRecord {
    /// The delivery id (the webhook body's `id`).
    pub id: Uuid,
    pub event: String,
    pub org_id: Uuid,
    pub surplus_id: Uuid,
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
            surplus_id,
            created_at: at,
        }
    }

    /// The transaction action that stores the record.
    pub(crate) fn write(&self, table: &str) -> ApiResult<TransactWriteItem> {
        let at = self.created_at.as_datetime();
        let item = OutboxItem {
            pk: keys::outbox_pk(self.id),
            sk: keys::OUTBOX_SK,
            gsi1pk: format!("OUTBOX#{}", at.format("%Y-%m-%d-%H")),
            gsi1sk: format!("{}#{}", self.created_at, self.id),
            record: self,
        };
        put(table, to_item(&item)?, Some("attribute_not_exists(pk)"))
    }
}
