//! Staged files (`FILE#<path>` / `STAGED`): a file its record names but
//! that is not in place yet. A file is uploaded under `uploads/` (which
//! the bucket expires after a day), and the record that names its final
//! place (`waybills/...`, `receiving-points/...`) commits in one
//! transaction with this item; the request then copies the upload to its
//! place and removes the item (`files::promote`). A request that died in
//! between leaves the item, and the sweeper finishes the copy: it reads
//! the items by the hour they were written (`gsi1`:
//! `STAGED#<yyyy-mm-dd-hh>`). So no object is written where a record may
//! point before its record commits, and an upload whose record never
//! commits is never copied and expires.

use aws_sdk_dynamodb::types::TransactWriteItem;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::ApiResult;
use crate::model::Timestamp;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item;
use crate::store::engine::item::{from_item, key, s, to_item};
use crate::store::engine::keys;
use crate::store::exactly_once::hourly;
use crate::store::exactly_once::tx::put;

/// The record that names a staged file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Owner {
    /// A load's waybill.
    Surplus { org_id: Uuid, id: Uuid },
    /// One of a receiving point's photos.
    ReceivingPoint { org_id: Uuid, id: Uuid },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedFile {
    /// Where the record says the file is.
    pub path: String,
    /// Where it was uploaded.
    pub upload: String,
    /// The version of the upload that was checked, in a versioned bucket
    /// (as deployed): exactly that one is copied.
    pub version: Option<String>,
    /// Its ETag, when it was read (a form's upload): the copy is
    /// conditioned on it.
    pub etag: Option<String>,
    pub content_type: String,
    pub owner: Owner,
    pub created_at: Timestamp,
}

#[derive(Serialize)]
struct StagedItem<'a> {
    pk: String,
    sk: &'static str,
    gsi1pk: String,
    gsi1sk: String,
    #[serde(flatten)]
    file: &'a StagedFile,
}

impl StagedFile {
    /// The transaction action that stores the item.
    pub(crate) fn write(&self, table: &str) -> ApiResult<TransactWriteItem> {
        let item = StagedItem {
            pk: keys::staged_file_pk(&self.path),
            sk: keys::STAGED_SK,
            gsi1pk: keys::staged_hour_pk(
                self.created_at.as_datetime(),
                Some(hourly::shard_of(self.path.as_bytes())),
            ),
            gsi1sk: format!("{}#{}", self.created_at, self.path),
            file: self,
        };
        put(table, to_item(&item)?, Some("attribute_not_exists(pk)"))
    }
}

pub struct Staged<'a>(pub(in crate::store) &'a Store);

/// Set once the file is in place.
const DONE_AT: &str = "done_at";
/// Days an item is kept once its file is in place.
const KEEP_DAYS: i64 = 7;

impl Staged<'_> {
    /// The staged file that will be at `path`, if its copy is pending.
    pub async fn get(&self, path: &str) -> ApiResult<Option<StagedFile>> {
        let found = self
            .0
            .get_item(key(keys::staged_file_pk(path), keys::STAGED_SK))
            .await?
            .filter(|item| !item.contains_key(DONE_AT));
        found.map(from_item).transpose()
    }

    /// The file at `path` is in place (or no longer wanted): its item
    /// leaves the sweeper's index and expires (an UpdateItem, as for the
    /// outbox: the functions that stage files delete no items).
    pub async fn done(&self, path: &str) -> ApiResult<()> {
        crate::gate::writes_may_go().await?;
        let now = crate::model::now();
        let expires = (now + chrono::TimeDelta::days(KEEP_DAYS)).unix();
        self.0
            .update(keys::staged_file_pk(path), keys::STAGED_SK)
            .update_expression("SET #done = :now, #ttl = :ttl REMOVE gsi1pk, gsi1sk")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#done", DONE_AT)
            .expression_attribute_names("#ttl", keys::TTL)
            .expression_attribute_values(":now", s(now.to_string()))
            .expression_attribute_values(":ttl", item::n(expires))
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(())
    }

    /// Files still staged, written in the last `hours` hours and at least
    /// `settle` ago (`store::exactly_once::hourly`).
    pub async fn waiting(
        &self,
        hours: u32,
        settle: chrono::TimeDelta,
    ) -> ApiResult<Vec<StagedFile>> {
        let found = hourly::waiting(self.0, keys::staged_hour_pk, hours, settle).await?;
        found.into_iter().map(from_item).collect()
    }

    /// Whether the record that staged `file` still names it, as the type
    /// it has (a later upload may have replaced it before it was copied).
    pub async fn still_named(&self, file: &StagedFile) -> ApiResult<bool> {
        self.names(file.owner, &file.path, Some(&file.content_type))
            .await
    }

    /// Whether `owner`'s record (archived or not) names the file at
    /// `path`, as `content_type` when one is given (a consistent read).
    pub async fn names(
        &self,
        owner: Owner,
        path: &str,
        content_type: Option<&str>,
    ) -> ApiResult<bool> {
        let store = self.0;
        Ok(match owner {
            Owner::Surplus { org_id, id } => store
                .records::<crate::model::surplus::SurplusRecord>()
                .get(org_id, id)
                .await?
                .and_then(|load| load.waybill)
                .is_some_and(|waybill| {
                    waybill.storage_path == path
                        && content_type.is_none_or(|ty| waybill.content_type == ty)
                }),
            Owner::ReceivingPoint { org_id, id } => store
                .receiving_points()
                .get(org_id, id)
                .await?
                .is_some_and(|point| point.photos.iter().any(|photo| photo == path)),
        })
    }
}
