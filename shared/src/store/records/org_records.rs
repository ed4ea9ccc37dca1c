//! Records of an organization (`<PREFIX><id>` in the partition its id
//! names: `keys::record_pk`): sites, receiving points, factories. One
//! mechanism reads, lists, creates and changes them; a change is read,
//! modify, conditional write on the record's version (retried on a race),
//! with its geo index entries in the same transaction.

use crate::model::Timestamp;
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::model::archive::{self, StatusFilter};
use crate::store::engine::calls::CallCounter;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item;
use crate::store::engine::item::{from_item, key, n, s, to_item};
use crate::store::engine::keys;
use crate::store::engine::query::query_partitions;
use crate::store::exactly_once::tx::{Conflict, put, raced, retry_races, transact};
use crate::store::exactly_once::{outcome, staged};
use crate::store::records::geo::{self, GeoEntry};

pub trait Record: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    /// Sort-key prefix, e.g. `SITE#`.
    const PREFIX: &'static str;
    /// Whether new records of the kind are spread over the organization's
    /// shards (their ids made by `model::id::spread_id`), so a list reads
    /// every partition of `keys::record_partitions`; a kind not spread
    /// lives in the organization's partition.
    const SPREAD: bool = false;
    fn not_found() -> ApiError;
    fn id(&self) -> Uuid;
    fn org_id(&self) -> Uuid;
    fn version(&self) -> u64;
    fn set_version(&mut self, version: u64);
    fn archived_at(&self) -> Option<Timestamp>;
    /// Sets the archive marker and `updated_at`.
    fn set_archived(&mut self, archived_at: Option<Timestamp>, now: Timestamp);
    /// The record's entries in the geo index (none when archived).
    fn geo(&self) -> Vec<GeoEntry>;
    /// GSI attributes of the stored item (for lookups other than by the
    /// organization's partition); none by default.
    fn index(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

pub fn sk<R: Record>(id: Uuid) -> String {
    format!("{}{id}", R::PREFIX)
}

/// The key of organization `org`'s record `id` of kind `R`, in the
/// partition its id names.
pub fn record_key<R: Record>(org: Uuid, id: Uuid) -> item::Item {
    key(keys::record_pk(org, id), sk::<R>(id))
}

/// The partitions organization `org`'s records of kind `R` may be in.
pub(in crate::store) fn partitions<R: Record>(org: Uuid) -> Vec<String> {
    if R::SPREAD {
        keys::all_shards()
            .map(|shard| keys::org_shard_pk(org, shard))
            .collect()
    } else {
        vec![keys::org_pk(org)]
    }
}

pub struct Records<'a, R> {
    pub(in crate::store) store: &'a Store,
    _record: std::marker::PhantomData<R>,
}

impl<'a, R: Record> Records<'a, R> {
    pub fn new(store: &'a Store) -> Self {
        Self {
            store,
            _record: std::marker::PhantomData,
        }
    }

    /// The record, archived or not; `None` when `org` has no such record.
    pub async fn get(&self, org: Uuid, id: Uuid) -> ApiResult<Option<R>> {
        let store = self.store;
        let out = store
            .db
            .get_item()
            .table_name(store.table())
            .set_key(Some(record_key::<R>(org, id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_error)?;
        out.item.map(from_item).transpose()
    }

    /// The record, or its kind's 404.
    pub async fn require(&self, org: Uuid, id: Uuid) -> ApiResult<R> {
        self.get(org, id).await?.ok_or_else(R::not_found)
    }

    /// The organization's records, newest first (ids are time-ordered):
    /// every partition they may be in, read at once.
    pub async fn list(&self, org: Uuid, listing: StatusFilter) -> ApiResult<Vec<R>> {
        let store = self.store;
        let queries = partitions::<R>(org).into_iter().map(|pk| {
            let query = store.prefix_query(pk, R::PREFIX);
            match listing {
                StatusFilter::Active => {
                    query.filter_expression("attribute_not_exists(archived_at)")
                }
                StatusFilter::All => query,
            }
        });
        let mut records: Vec<R> = query_partitions(queries).await?;
        records.sort_by_key(|record| std::cmp::Reverse(sk::<R>(record.id())));
        Ok(records)
    }

    /// Stores a new record with its geo entries; returns it.
    pub async fn create(&self, record: &R) -> ApiResult<R> {
        self.insert(record, Vec::new(), Vec::new()).await
    }

    /// Stores a new record under parent record `parent_id` of the same
    /// organization, in one transaction with a check that the parent is
    /// still active (`archived` when it is not).
    pub async fn create_under<P: Record>(
        &self,
        record: &R,
        parent_id: Uuid,
        archived: fn() -> ApiError,
    ) -> ApiResult<R> {
        let check = still_active::<P>(self.store.table(), record.org_id(), parent_id)?;
        self.insert(record, vec![check], vec![(1, archived)]).await
    }

    /// A new record, `more` actions after it (`conflicts` naming them by
    /// position), its geo entries and its organization's count of public
    /// places, in one transaction (with the request's answer for the
    /// record: `outcome`).
    async fn insert(
        &self,
        record: &R,
        more: Vec<aws_sdk_dynamodb::types::TransactWriteItem>,
        mut conflicts: Vec<Conflict>,
    ) -> ApiResult<R> {
        let table = self.store.table();
        let mut actions = vec![put(
            table,
            self.item(record)?,
            Some("attribute_not_exists(pk)"),
        )?];
        actions.extend(more);
        let org = record.org_id();
        geo_actions(table, org, &[], &record.geo(), &mut actions, &mut conflicts)?;
        outcome::render(record).await?;
        transact(self.store, actions, &conflicts).await?;
        Ok(record.clone())
    }

    /// Reads the record, applies `change` (which may refuse with an error)
    /// and writes it back if nobody changed it meanwhile; returns it (the
    /// request's answer for it commits with it: `outcome`).
    pub async fn modify(
        &self,
        org: Uuid,
        id: Uuid,
        change: impl Fn(&mut R) -> ApiResult<()>,
    ) -> ApiResult<R> {
        self.modify_with(org, id, change, None).await
    }

    /// `modify`, committing with the record the staged file it now names
    /// (`store::exactly_once::staged`: copied to its place once committed).
    pub async fn modify_staging(
        &self,
        org: Uuid,
        id: Uuid,
        change: impl Fn(&mut R) -> ApiResult<()>,
        staged: &staged::StagedFile,
    ) -> ApiResult<R> {
        self.modify_with(org, id, change, Some(staged)).await
    }

    async fn modify_with(
        &self,
        org: Uuid,
        id: Uuid,
        change: impl Fn(&mut R) -> ApiResult<()>,
        staged: Option<&staged::StagedFile>,
    ) -> ApiResult<R> {
        let nothing = async { Ok(()) };
        let answer = |written: &R, _: &()| {
            let written = outcome::wants::<R>().then(|| written.clone());
            async move { rendered(written).await }
        };
        let more = match staged {
            Some(staged) => vec![staged.write(self.store.table())?],
            None => Vec::new(),
        };
        Ok(self
            .change(org, id, nothing, change, answer, &more)
            .await?
            .0)
    }

    /// `modify`, with `beside` (a read the answer needs) made at the same
    /// time as the record's first read and finished before anything is
    /// written: when it fails, nothing is. The request's answer for both
    /// commits with the record.
    pub async fn modify_beside<T: Clone + Send + 'static>(
        &self,
        org: Uuid,
        id: Uuid,
        beside: impl Future<Output = ApiResult<T>>,
        change: impl Fn(&mut R) -> ApiResult<()>,
    ) -> ApiResult<(R, T)> {
        let answer = |written: &R, beside: &T| {
            let both = outcome::wants::<(R, T)>().then(|| (written.clone(), beside.clone()));
            async move { rendered(both).await }
        };
        self.change(org, id, beside, change, answer, &[]).await
    }

    /// `modify_beside`, the answer rendered by `answer` before each
    /// attempt's transaction, `more` actions after the record's.
    async fn change<T, A: Future<Output = ApiResult<()>>>(
        &self,
        org: Uuid,
        id: Uuid,
        beside: impl Future<Output = ApiResult<T>>,
        change: impl Fn(&mut R) -> ApiResult<()>,
        answer: impl Fn(&R, &T) -> A,
        more: &[aws_sdk_dynamodb::types::TransactWriteItem],
    ) -> ApiResult<(R, T)> {
        let (first_read, beside) =
            CallCounter::together(async { tokio::join!(self.require(org, id), beside) }).await;
        let beside = beside?;
        let (beside_ref, answer) = (&beside, &answer);
        let mut first_read = Some(first_read);
        let change = &change;
        let written = retry_races(|| {
            let read = first_read.take();
            async move {
                let current = match read {
                    Some(read) => read?,
                    None => self.require(org, id).await?,
                };
                let mut updated = current.clone();
                change(&mut updated)?;
                updated.set_version(current.version() + 1);
                let table = self.store.table();
                let put = aws_sdk_dynamodb::types::Put::builder()
                    .table_name(table)
                    .set_item(Some(self.item(&updated)?))
                    .condition_expression("version = :version")
                    .expression_attribute_values(":version", n(current.version()))
                    .build()
                    .map_err(ApiError::internal)?;
                let mut actions = vec![
                    aws_sdk_dynamodb::types::TransactWriteItem::builder()
                        .put(put)
                        .build(),
                ];
                actions.extend_from_slice(more);
                let mut conflicts: Vec<Conflict> = vec![(0, raced)];
                let (old, new) = (current.geo(), updated.geo());
                geo_actions(table, org, &old, &new, &mut actions, &mut conflicts)?;
                answer(&updated, beside_ref).await?;
                transact(self.store, actions, &conflicts).await?;
                Ok(updated)
            }
        })
        .await?;
        Ok((written, beside))
    }

    /// DELETE: archives; 409 `already_archived` when archived.
    pub async fn archive(&self, org: Uuid, id: Uuid) -> ApiResult<R> {
        self.modify(org, id, archiving).await
    }

    /// POST .../restore: unarchives; 409 `not_archived` when active.
    pub async fn restore(&self, org: Uuid, id: Uuid) -> ApiResult<R> {
        self.modify(org, id, restoring).await
    }

    fn item(&self, record: &R) -> ApiResult<item::Item> {
        item(record)
    }
}

/// The request's answer rendered from `value`, when it has one to render.
async fn rendered<T: std::any::Any + Clone + Send>(value: Option<T>) -> ApiResult<()> {
    match value {
        Some(value) => outcome::render(&value).await,
        None => Ok(()),
    }
}

/// The actions that move a record's geo entries from `old` to `new`, and
/// its organization's count of public places with them (409
/// `public_place_limit_reached` past the cap).
fn geo_actions(
    table: &str,
    org: Uuid,
    old: &[geo::GeoEntry],
    new: &[geo::GeoEntry],
    actions: &mut Vec<aws_sdk_dynamodb::types::TransactWriteItem>,
    conflicts: &mut Vec<Conflict>,
) -> ApiResult<()> {
    actions.extend(geo::changes(table, old, new)?);
    if let Some(count) = geo::public_count(table, org, old, new)? {
        conflicts.push((actions.len(), geo::public_place_limit_reached));
        actions.push(count);
    }
    Ok(())
}

/// The stored item of `record`: its attributes, keys and index attributes.
pub(crate) fn item<R: Record>(record: &R) -> ApiResult<item::Item> {
    let mut item = to_item(record)?;
    item.insert(
        keys::PK.into(),
        s(keys::record_pk(record.org_id(), record.id())),
    );
    item.insert(keys::SK.into(), s(sk::<R>(record.id())));
    for (name, value) in record.index() {
        item.insert(name.into(), s(value));
    }
    Ok(item)
}

/// The change of an archive (`modify`'s, or `modify_beside`'s): 409
/// `already_archived` when archived.
pub fn archiving<R: Record>(record: &mut R) -> ApiResult<()> {
    let now = crate::model::now();
    let mut archived_at = record.archived_at();
    archive::archive(&mut archived_at, now)?;
    record.set_archived(archived_at, now);
    Ok(())
}

/// The change of a restore: 409 `not_archived` when active.
pub fn restoring<R: Record>(record: &mut R) -> ApiResult<()> {
    let mut archived_at = record.archived_at();
    archive::restore(&mut archived_at)?;
    record.set_archived(archived_at, crate::model::now());
    Ok(())
}

/// A transaction's check that organization `org`'s record `id` of kind `R`
/// exists and is not archived.
pub(crate) fn still_active<R: Record>(
    table: &str,
    org: Uuid,
    id: Uuid,
) -> ApiResult<aws_sdk_dynamodb::types::TransactWriteItem> {
    let check = aws_sdk_dynamodb::types::ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(record_key::<R>(org, id)))
        .condition_expression("attribute_exists(pk) AND attribute_not_exists(archived_at)")
        .build()
        .map_err(ApiError::internal)?;
    Ok(aws_sdk_dynamodb::types::TransactWriteItem::builder()
        .condition_check(check)
        .build())
}
