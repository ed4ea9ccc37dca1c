//! Surplus loads (`SURPLUS#<id>` in the origin organization's partition
//! its id names: `keys::record_pk`), their log (`LOG#<id>#<entry>`, oldest
//! first, beside the load) and keyset pages over three keys, each spread
//! like the loads: the organization's partitions (all loads), `gsi1` (one
//! status group) and `gsi2` (one origin site). A load is written whole, conditioned on the
//! version read; a status change adds its log entry, the move to
//! `delivered` its outbox record, and any change of what a delivered load
//! counts for its day's figures (`rollups`), to the same transaction.

use aws_sdk_dynamodb::types::{ConditionCheck, TransactWriteItem};
use uuid::Uuid;

use crate::error::codes;
use crate::error::{ApiError, ApiResult};
use crate::model::Timestamp;
use crate::model::site::SiteRecord;
use crate::model::surplus::{
    LogEntry, StoredWaybill, SurplusChanges, SurplusRecord, SurplusStatus,
};
use crate::model::truck::TruckRecord;
use crate::store::engine::calls::CallCounter;
use crate::store::engine::client::Store;
use crate::store::engine::item::{Item, key, n, to_item};
use crate::store::engine::keys::{self, SURPLUS_PREFIX};
use crate::store::engine::query::query_records;
use crate::store::exactly_once::outbox::OutboxRecord;
use crate::store::exactly_once::outcome;
use crate::store::exactly_once::staged::StagedFile;
use crate::store::exactly_once::tx::{Conflict, put, raced, retry_races, transact};
use crate::store::records::geo;
use crate::store::records::org_records::{Record, item, record_key, sk};
use crate::store::records::rollups;

mod pages;
mod route;

pub(in crate::store) use pages::{Drops, List};
pub use pages::{Page, Position};
use route::{consent, truck_not_found, truck_not_granted};

pub struct Surpluses<'a>(pub(in crate::store) &'a Store);

pub fn surplus_not_found() -> ApiError {
    codes::SURPLUS_NOT_FOUND.with("no surplus load of this organization has this id")
}

impl Record for SurplusRecord {
    const PREFIX: &'static str = SURPLUS_PREFIX;
    const SPREAD: bool = true;
    fn not_found() -> ApiError {
        surplus_not_found()
    }
    fn id(&self) -> Uuid {
        self.id
    }
    fn org_id(&self) -> Uuid {
        self.org_id
    }
    fn version(&self) -> u64 {
        self.version
    }
    fn set_version(&mut self, version: u64) {
        self.version = version;
    }
    fn archived_at(&self) -> Option<Timestamp> {
        self.archived_at
    }
    fn set_archived(&mut self, archived_at: Option<Timestamp>, now: Timestamp) {
        self.archived_at = archived_at;
        self.updated_at = now;
    }
    fn geo(&self) -> Vec<geo::GeoEntry> {
        Vec::new()
    }
    /// The list indexes and the billing index; an archived load leaves
    /// them all (sparse indexes).
    fn index(&self) -> Vec<(&'static str, String)> {
        if self.archived_at.is_some() {
            return Vec::new();
        }
        let order = format!("{}#{}", self.created_at, self.id);
        let shard = keys::record_shard(self.id);
        let mut index = vec![
            (
                "gsi1pk",
                keys::surplus_group_pk(self.org_id, self.status.group().as_str(), shard),
            ),
            ("gsi1sk", order.clone()),
            (
                "gsi2pk",
                keys::surplus_site_pk(self.org_id, self.site_id, shard),
            ),
            ("gsi2sk", order),
        ];
        if let Some((billed, at)) = self.billing() {
            index.push(("gsi3pk", keys::billing_pk(billed)));
            index.push(("gsi3sk", format!("{at}#{}", self.id)));
        }
        index
    }
}

#[derive(serde::Serialize)]
struct LogItem<'a> {
    pk: String,
    sk: String,
    #[serde(flatten)]
    entry: &'a LogEntry,
}

/// The stored item of one log entry of `load`.
fn log_record(load: &SurplusRecord, entry: &LogEntry) -> ApiResult<Item> {
    to_item(&LogItem {
        pk: keys::record_pk(load.org_id, load.id),
        sk: keys::surplus_log_sk(load.id, entry.id),
        entry,
    })
}

fn log_item(table: &str, load: &SurplusRecord, entry: &LogEntry) -> ApiResult<TransactWriteItem> {
    put(
        table,
        log_record(load, entry)?,
        Some("attribute_not_exists(pk)"),
    )
}

fn check(table: &str, item_key: Item, condition: &str) -> ApiResult<TransactWriteItem> {
    let check = ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(item_key))
        .condition_expression(condition)
        .build()
        .map_err(ApiError::internal)?;
    Ok(TransactWriteItem::builder().condition_check(check).build())
}

impl Surpluses<'_> {
    /// A load of the organization that is not archived, or 404
    /// `surplus_not_found`.
    pub async fn require(&self, org: Uuid, id: Uuid) -> ApiResult<SurplusRecord> {
        self.0
            .records::<SurplusRecord>()
            .get(org, id)
            .await?
            .filter(|load| load.archived_at.is_none())
            .ok_or_else(surplus_not_found)
    }

    /// Stores a new load, its first log entry kept on it, after resolving its
    /// origin site, destination and truck (and its driver at this moment),
    /// in one transaction that checks them again.
    pub async fn create(&self, load: &mut SurplusRecord) -> ApiResult<SurplusRecord> {
        let org = load.org_id;
        let table = self.0.table();
        // The origin, the destination and the truck, read at once; their
        // refusals keep the contract's order (site, destination, truck).
        let (origin, destination, truck) = CallCounter::together(async {
            futures::join!(
                self.origin(org, load.site_id),
                optional(load.to_receiving_point_id, |point| self
                    .destination(org, point)),
                optional(load.truck_id, |truck| self.truck(org, truck)),
            )
        })
        .await;
        origin?;
        let destination = destination?;
        if let Some(destination) = &destination {
            destination.apply(load);
        }
        let truck = truck?;
        if let Some(truck) = &truck {
            load.truck_org_id = Some(truck.org_id);
            load.driver_id = truck.driver_id;
        }
        load.keep_created_entry();
        let mut actions = vec![
            put(table, item(&*load)?, Some("attribute_not_exists(pk)"))?,
            check(
                table,
                record_key::<SiteRecord>(org, load.site_id),
                "attribute_exists(pk) AND attribute_not_exists(archived_at)",
            )?,
        ];
        let mut conflicts: Vec<Conflict> = vec![(1, ApiError::site_archived)];
        if let Some(destination) = &destination {
            for (check, error) in destination.checks(table, org)? {
                conflicts.push((actions.len(), error));
                actions.push(check);
            }
        }
        if let Some(truck) = &truck {
            conflicts.push((actions.len(), truck_not_found));
            actions.push(check(
                table,
                key(keys::org_pk(truck.org_id), sk::<TruckRecord>(truck.id)),
                "attribute_exists(pk) AND attribute_not_exists(retired_at)",
            )?);
            if truck.org_id != org {
                for action in consent(table, truck.org_id, org)? {
                    conflicts.push((actions.len(), truck_not_found));
                    actions.push(action);
                }
            }
        }
        outcome::render(&*load).await?;
        transact(self.0, actions, &conflicts).await?;
        Ok(load.clone())
    }

    /// Applies validated changes (the status machine, the route lock, a new
    /// origin or destination) and writes the load, its log entry when the
    /// status moved and its outbox record when it became `delivered`, in
    /// one transaction. Racing writers are applied one after the other, so
    /// racing moves to `delivered` make one transition: the others find the
    /// load delivered and change nothing. Returns the load and the outbox
    /// record written, if any (for the caller to queue at once).
    pub async fn update(
        &self,
        org: Uuid,
        id: Uuid,
        changes: &SurplusChanges,
    ) -> ApiResult<(SurplusRecord, Option<OutboxRecord>)> {
        retry_races(|| async {
            let table = self.0.table();
            // The load, and the origin and destination the body names, read
            // at once; their refusals keep the order: the load, its status
            // and route rules, then the site, then the destination.
            let (current, origin, destination) = CallCounter::together(async {
                futures::join!(
                    self.require(org, id),
                    optional(changes.site_id, |site| self.origin(org, site)),
                    optional(changes.to_receiving_point_id.flatten(), |point| {
                        self.destination(org, point)
                    }),
                )
            })
            .await;
            let current = current?;
            let now = crate::model::now();
            let mut updated = current.clone();
            changes.apply(&mut updated, now)?;
            let mut checks = Vec::new();
            if updated.site_id != current.site_id {
                origin?;
                checks.push((
                    check(
                        table,
                        record_key::<SiteRecord>(org, updated.site_id),
                        "attribute_exists(pk) AND attribute_not_exists(archived_at)",
                    )?,
                    ApiError::site_archived as fn() -> ApiError,
                ));
            }
            match changes.to_receiving_point_id {
                Some(Some(point)) if Some(point) != current.to_receiving_point_id => {
                    let destination = destination?
                        .ok_or_else(|| ApiError::internal("the destination named was read"))?;
                    destination.apply(&mut updated);
                    checks.extend(destination.checks(table, org)?);
                }
                Some(None) => {
                    updated.to_receiving_point_id = None;
                    updated.to_site_id = None;
                    updated.to_org_id = None;
                }
                _ => {}
            }
            // Billing another organization more needs its consent still.
            if let Some(billed) = updated.raises_charge_of(&current) {
                for action in consent(table, billed, org)? {
                    checks.push((action, truck_not_granted));
                }
            }
            updated.version = current.version + 1;
            let mut actions = vec![self.write(&updated, current.version)?];
            let mut conflicts: Vec<Conflict> = vec![(0, raced)];
            let mut announced = None;
            if updated.status != current.status {
                let entry = LogEntry::new(Some(current.status), updated.status, now);
                actions.push(log_item(table, &updated, &entry)?);
                if updated.status == SurplusStatus::Delivered {
                    let outbox = OutboxRecord::delivered(org, id, now);
                    actions.push(outbox.write(table)?);
                    announced = Some(outbox);
                }
            }
            actions.extend(rollups::changes(table, Some(&current), &updated)?);
            for (action, error) in checks {
                conflicts.push((actions.len(), error));
                actions.push(action);
            }
            transact(self.0, actions, &conflicts).await?;
            Ok((updated, announced))
        })
        .await
    }

    /// The load as a conditional Put: unchanged since `read_version`.
    fn write(&self, load: &SurplusRecord, read_version: u64) -> ApiResult<TransactWriteItem> {
        let unchanged = if read_version == 0 {
            "attribute_not_exists(version) OR version = :version"
        } else {
            "version = :version"
        };
        let write = aws_sdk_dynamodb::types::Put::builder()
            .table_name(self.0.table())
            .set_item(Some(item(load)?))
            .condition_expression(unchanged)
            .expression_attribute_values(":version", n(read_version))
            .build()
            .map_err(ApiError::internal)?;
        Ok(TransactWriteItem::builder().put(write).build())
    }

    /// Stores `waybill` as the load's (replacing one uploaded before; 409
    /// `waybill_locked` once delivered), with the file it names staged
    /// (`staged`: copied to its place once committed). Returns the load
    /// and the storage path of the waybill it replaced.
    pub async fn set_waybill(
        &self,
        org: Uuid,
        id: Uuid,
        waybill: &StoredWaybill,
        staged: &StagedFile,
    ) -> ApiResult<(SurplusRecord, Option<String>)> {
        retry_races(|| async {
            let current = self.require(org, id).await?;
            current.waybill_open()?;
            let mut updated = current.clone();
            updated.waybill = Some(waybill.clone());
            updated.updated_at = crate::model::now();
            updated.version = current.version + 1;
            let actions = vec![
                self.write(&updated, current.version)?,
                staged.write(self.0.table())?,
            ];
            let replaced = current
                .waybill
                .map(|w| w.storage_path)
                .filter(|path| *path != waybill.storage_path);
            let written = (updated, replaced);
            outcome::render(&written).await?;
            transact(self.0, actions, &[(0, raced)]).await?;
            Ok(written)
        })
        .await
    }

    /// The log of a load of the organization, oldest first: 404
    /// `surplus_not_found` when the load is not the organization's or is
    /// archived (the load and its entries are read at once).
    pub async fn log(&self, org: Uuid, id: Uuid) -> ApiResult<Vec<LogEntry>> {
        let (load, stored) = futures::try_join!(self.require(org, id), self.stored(org, id))?;
        Ok(with_first(&load, stored))
    }

    /// The entries of `load`'s log, oldest first (for a caller that holds
    /// the load already).
    pub async fn entries(&self, load: &SurplusRecord) -> ApiResult<Vec<LogEntry>> {
        Ok(with_first(load, self.stored(load.org_id, load.id).await?))
    }

    /// The entries of load `id`'s log stored as items of their own, oldest
    /// first: every one but a first entry the load keeps.
    async fn stored(&self, org: Uuid, id: Uuid) -> ApiResult<Vec<LogEntry>> {
        let store = self.0;
        let query = store.prefix_query(keys::record_pk(org, id), &keys::surplus_log_prefix(id));
        query_records(query).await
    }

    /// Archives a load (an operator's command): 404 from then on, and out
    /// of the figures.
    pub async fn archive(&self, org: Uuid, id: Uuid) -> ApiResult<SurplusRecord> {
        retry_races(|| async {
            let current = self.require(org, id).await?;
            let mut updated = current.clone();
            let now = crate::model::now();
            updated.set_archived(Some(now), now);
            updated.version = current.version + 1;
            let mut actions = vec![self.write(&updated, current.version)?];
            actions.extend(rollups::changes(self.0.table(), Some(&current), &updated)?);
            transact(self.0, actions, &[(0, raced)]).await?;
            Ok(updated)
        })
        .await
    }
}

/// `load`'s log: the first entry it keeps (it is the oldest), then the
/// entries stored as items.
fn with_first(load: &SurplusRecord, stored: Vec<LogEntry>) -> Vec<LogEntry> {
    load.created_entry().into_iter().chain(stored).collect()
}

/// `read(id)` when there is an id.
async fn optional<T, F, Fut>(id: Option<Uuid>, read: F) -> ApiResult<Option<T>>
where
    F: FnOnce(Uuid) -> Fut,
    Fut: Future<Output = ApiResult<T>>,
{
    match id {
        Some(id) => read(id).await.map(Some),
        None => Ok(None),
    }
}
