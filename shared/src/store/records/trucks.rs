//! Trucks (`ORG#<org>` / `TRUCK#<id>`) with their plate uniqueness items
//! (`PLATE#<country>#<normalized plate>`, written in the truck's
//! transaction) and their drivers: the truck names its driver and the
//! driver's membership names the truck, both changed in one transaction
//! (see `store::records::members`). Every write of a truck bumps its `version`, so a
//! read-modify-write never overwrites a change it did not see.

use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Delete, TransactWriteItem};
use uuid::Uuid;

use crate::error::codes;
use crate::error::{ApiError, ApiResult};
use crate::model::Timestamp;
use crate::model::factory::FactoryRecord;
use crate::model::geo::Coordinates;
use crate::model::truck::{TruckChanges, TruckRecord};
use crate::store::engine::batch::get_all;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{Item, from_item, get_s, key, n, s, to_item};
use crate::store::engine::keys::{self, TRUCK_PREFIX, UNIQUE_SK};
use crate::store::engine::query::query_records;
use crate::store::exactly_once::outcome;
use crate::store::exactly_once::tx::{Conflict, put, raced, retry_races, transact};
use crate::store::records::members::{Membership, hold_truck, release_driver, release_truck};
use crate::store::records::org_records::{Record, item, record_key};
use crate::store::records::{geo, members};

pub struct Trucks<'a>(pub(in crate::store) &'a Store);

pub fn truck_not_found() -> ApiError {
    codes::TRUCK_NOT_FOUND.with("no active truck of this organization has this id")
}

fn license_conflict() -> ApiError {
    codes::LICENSE_CONFLICT.with("a truck with this plate already exists for that country")
}

fn driver_not_found() -> ApiError {
    codes::DRIVER_NOT_FOUND.with("the driver is not an active member of this organization")
}

fn factory_not_found() -> ApiError {
    codes::FACTORY_NOT_FOUND_IN_BODY.with("factoryId names no factory of this organization")
}

fn factory_archived() -> ApiError {
    codes::FACTORY_ARCHIVED.with("the factory is archived; restore it first")
}

#[derive(serde::Serialize)]
struct PlateItem {
    pk: String,
    sk: &'static str,
    truck_id: Uuid,
}

fn plate_key(truck: &TruckRecord) -> Item {
    key(
        keys::plate_pk(truck.org_id, truck.country.as_str(), &truck.plate_key),
        UNIQUE_SK,
    )
}

fn plate_item(table: &str, truck: &TruckRecord) -> ApiResult<TransactWriteItem> {
    let item = PlateItem {
        pk: keys::plate_pk(truck.org_id, truck.country.as_str(), &truck.plate_key),
        sk: UNIQUE_SK,
        truck_id: truck.id,
    };
    put(table, to_item(&item)?, Some("attribute_not_exists(pk)"))
}

fn delete_plate(table: &str, truck: &TruckRecord) -> ApiResult<TransactWriteItem> {
    let delete = Delete::builder()
        .table_name(table)
        .set_key(Some(plate_key(truck)))
        .condition_expression("truck_id = :me")
        .expression_attribute_values(":me", s(truck.id.to_string()))
        .build()
        .map_err(ApiError::internal)?;
    Ok(TransactWriteItem::builder().delete(delete).build())
}

/// The truck as a conditional Put: unchanged since `version` was read.
fn put_truck(table: &str, truck: &TruckRecord, read_version: u64) -> ApiResult<TransactWriteItem> {
    let unchanged = if read_version == 0 {
        "attribute_not_exists(version) OR version = :version"
    } else {
        "version = :version"
    };
    let write = aws_sdk_dynamodb::types::Put::builder()
        .table_name(table)
        .set_item(Some(item(truck)?))
        .condition_expression(unchanged)
        .expression_attribute_values(":version", n(read_version))
        .build()
        .map_err(ApiError::internal)?;
    Ok(TransactWriteItem::builder().put(write).build())
}

/// What a write needs to know of the records a truck points at.
struct Related {
    driver: Option<Membership>,
    factory: Option<FactoryRecord>,
}

impl Trucks<'_> {
    /// The truck, retired or not; `None` when the organization has no such truck.
    pub async fn get(&self, org: Uuid, id: Uuid) -> ApiResult<Option<TruckRecord>> {
        let store = self.0;
        let out = store
            .db
            .get_item()
            .table_name(store.table())
            .set_key(Some(key(keys::org_pk(org), keys::truck_sk(id))))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_error)?;
        out.item.map(from_item).transpose()
    }

    /// An active truck of the organization, or 404 `truck_not_found`.
    pub async fn require(&self, org: Uuid, id: Uuid) -> ApiResult<TruckRecord> {
        self.get(org, id)
            .await?
            .filter(|t| t.retired_at.is_none())
            .ok_or_else(truck_not_found)
    }

    /// The organization's trucks in service, newest first.
    pub async fn list(&self, org: Uuid) -> ApiResult<Vec<TruckRecord>> {
        let store = self.0;
        let query = store
            .prefix_query(keys::org_pk(org), TRUCK_PREFIX)
            .filter_expression("attribute_not_exists(retired_at)")
            .scan_index_forward(false);
        query_records(query).await
    }

    /// Reads, in one batch, the driver membership and the factory a write
    /// names (and the truck itself, when given).
    async fn related(
        &self,
        org: Uuid,
        truck: Option<Uuid>,
        driver: Option<Uuid>,
        factory: Option<Uuid>,
    ) -> ApiResult<(Option<TruckRecord>, Related)> {
        let store = self.0;
        let mut wanted = Vec::new();
        if let Some(id) = truck {
            wanted.push(key(keys::org_pk(org), keys::truck_sk(id)));
        }
        if let Some(id) = driver {
            wanted.push(key(keys::org_pk(org), keys::member_sk(id)));
        }
        if let Some(id) = factory {
            wanted.push(record_key::<FactoryRecord>(org, id));
        }
        let mut related = Related {
            driver: None,
            factory: None,
        };
        if wanted.is_empty() {
            return Ok((None, related));
        }
        let mut found = None;
        for row in get_all(store, wanted).await? {
            let sort = get_s(&row, keys::SK).unwrap_or_default().to_owned();
            if sort.starts_with(TRUCK_PREFIX) {
                found = Some(from_item(row)?);
            } else if sort.starts_with(keys::MEMBER_PREFIX) {
                related.driver = Some(members::membership(row)?);
            } else {
                related.factory = Some(from_item(row)?);
            }
        }
        Ok((found, related))
    }

    /// Stores a new truck: its plate item (409 `license_conflict`), its
    /// driver (an active member, 422 `driver_not_found`, released from any
    /// other truck) and its factory (422 `factory_not_found`,
    /// `factory_archived`), in one transaction.
    pub async fn create(&self, truck: &TruckRecord) -> ApiResult<TruckRecord> {
        retry_races(|| async {
            let org = truck.org_id;
            let (_, related) = self
                .related(org, None, truck.driver_id, truck.factory_id)
                .await?;
            let table = self.0.table();
            let fresh = Some("attribute_not_exists(pk)");
            let mut actions = vec![put(table, item(truck)?, fresh)?, plate_item(table, truck)?];
            let mut conflicts: Vec<Conflict> = vec![(1, license_conflict)];
            self.drive(&mut actions, &mut conflicts, truck, None, &related)?;
            if truck.factory_id.is_some() {
                let factory = related.factory.as_ref().ok_or_else(factory_not_found)?;
                if factory.archived_at.is_some() {
                    return Err(factory_archived());
                }
                let check = ConditionCheck::builder()
                    .table_name(table)
                    .set_key(Some(record_key::<FactoryRecord>(org, factory.id)))
                    .condition_expression(
                        "attribute_exists(pk) AND attribute_not_exists(archived_at)",
                    )
                    .build()
                    .map_err(ApiError::internal)?;
                conflicts.push((actions.len(), factory_archived));
                actions.push(TransactWriteItem::builder().condition_check(check).build());
            }
            outcome::render(truck).await?;
            transact(self.0, actions, &conflicts).await
        })
        .await?;
        Ok(truck.clone())
    }

    /// Applies validated changes to an active truck: a plate or country
    /// change moves the plate item; a new driver (an active member) is
    /// released from any other truck and the old one is let go; all in one
    /// transaction.
    pub async fn update(
        &self,
        org: Uuid,
        id: Uuid,
        changes: &TruckChanges,
    ) -> ApiResult<TruckRecord> {
        retry_races(|| async {
            let new_driver = changes.driver_id.flatten();
            let (current, related) = self.related(org, Some(id), new_driver, None).await?;
            let current = current
                .filter(|t| t.retired_at.is_none())
                .ok_or_else(truck_not_found)?;
            let mut updated = current.clone();
            changes.apply(&mut updated, crate::model::now());
            updated.version = current.version + 1;
            let table = self.0.table();
            let mut actions = vec![put_truck(table, &updated, current.version)?];
            let mut conflicts: Vec<Conflict> = vec![(0, raced)];
            if (updated.country, &updated.plate_key) != (current.country, &current.plate_key) {
                actions.push(delete_plate(table, &current)?);
                conflicts.push((actions.len(), license_conflict));
                actions.push(plate_item(table, &updated)?);
            }
            self.drive(
                &mut actions,
                &mut conflicts,
                &updated,
                current.driver_id,
                &related,
            )?;
            transact(self.0, actions, &conflicts).await?;
            Ok(updated)
        })
        .await
    }

    /// The driver actions of a truck write: `truck` now has `truck.driver_id`
    /// (read as `related.driver`), before it had `before`.
    fn drive(
        &self,
        actions: &mut Vec<TransactWriteItem>,
        conflicts: &mut Vec<Conflict>,
        truck: &TruckRecord,
        before: Option<Uuid>,
        related: &Related,
    ) -> ApiResult<()> {
        let table = self.0.table();
        let org = truck.org_id;
        if truck.driver_id == before {
            return Ok(());
        }
        if let Some(old) = before {
            conflicts.push((actions.len(), raced));
            actions.push(release_driver(table, org, old, truck.id)?);
        }
        if truck.driver_id.is_some() {
            let driver = related
                .driver
                .as_ref()
                .filter(|m| m.active)
                .ok_or_else(driver_not_found)?;
            conflicts.push((actions.len(), raced));
            actions.push(hold_truck(table, org, driver, truck.id)?);
            if let Some(other) = driver.truck_id.filter(|t| *t != truck.id) {
                conflicts.push((actions.len(), raced));
                actions.push(release_truck(table, org, other, driver.profile_id)?);
            }
        }
        Ok(())
    }

    /// Records the vehicle's last known position (positions are never
    /// written through the API).
    pub async fn record_position(
        &self,
        org: Uuid,
        id: Uuid,
        at: Coordinates,
        when: Timestamp,
    ) -> ApiResult<TruckRecord> {
        let store = self.0;
        let out = store
            .update(keys::org_pk(org), keys::truck_sk(id))
            .update_expression(
                "SET coordinates = :at, position_updated_at = :when ADD version :one",
            )
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(retired_at)")
            .expression_attribute_values(":at", AttributeValue::M(to_item(&at)?))
            .expression_attribute_values(":when", s(when.to_string()))
            .expression_attribute_values(":one", n(1))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await;
        match out {
            Ok(out) => from_item(out.attributes.unwrap_or_default()),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Err(truck_not_found())
            }
            Err(e) => Err(sdk_error(e)),
        }
    }

    /// Takes a truck out of service (an operator's command): gone from the
    /// list and 404 by id, its plate free again, its driver let go.
    pub async fn retire(&self, org: Uuid, id: Uuid) -> ApiResult<TruckRecord> {
        retry_races(|| async {
            let mut truck = self.require(org, id).await?;
            let read_version = truck.version;
            let table = self.0.table();
            let before = truck.driver_id.take();
            truck.retired_at = Some(crate::model::now());
            truck.updated_at = crate::model::now();
            truck.version += 1;
            let mut actions = vec![
                put_truck(table, &truck, read_version)?,
                delete_plate(table, &truck)?,
            ];
            if let Some(driver) = before {
                actions.push(release_driver(table, org, driver, id)?);
            }
            transact(self.0, actions, &[(0, raced), (2, raced)]).await?;
            Ok(truck)
        })
        .await
    }
}

/// Trucks are records of their organization's partition (a partner's
/// truck is read through `Grants::granted_record`); retired is their
/// archived state, and they have no place in the geo index.
impl Record for TruckRecord {
    const PREFIX: &'static str = TRUCK_PREFIX;
    fn not_found() -> ApiError {
        truck_not_found()
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
        self.retired_at
    }
    fn set_archived(&mut self, archived_at: Option<Timestamp>, now: Timestamp) {
        self.retired_at = archived_at;
        self.updated_at = now;
    }
    fn geo(&self) -> Vec<geo::GeoEntry> {
        Vec::new()
    }
}
