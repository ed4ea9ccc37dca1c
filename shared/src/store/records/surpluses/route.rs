//! What a load names, read before its transaction and checked again in
//! it: its origin site, its destination (this organization's receiving
//! point or another's public one) and its truck (its own, or a partner's
//! under a standing `full` grant), with the refusals each means.

use aws_sdk_dynamodb::types::{ConditionCheck, TransactWriteItem};
use uuid::Uuid;

use crate::error::codes;
use crate::error::{ApiError, ApiResult};
use crate::model::grant::GrantScope;
use crate::model::receiving_point::ReceivingPointRecord;
use crate::model::site::SiteRecord;
use crate::model::surplus::SurplusRecord;
use crate::model::truck::TruckRecord;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{from_item, key, s};
use crate::store::engine::keys;
use crate::store::records::grants;
use crate::store::records::org_records::record_key;

use super::Surpluses;

pub(super) fn receiving_point_not_found() -> ApiError {
    codes::RECEIVING_POINT_NOT_FOUND_IN_BODY.with(
        "to_receiving_point_id names no receiving point of this organization and no public one",
    )
}

pub(super) fn receiving_point_archived() -> ApiError {
    codes::RECEIVING_POINT_ARCHIVED.with("the receiving point is archived")
}

pub(super) fn truck_not_found() -> ApiError {
    codes::TRUCK_NOT_FOUND_IN_BODY.with("truck_id names no truck in service of this organization or of an active partner that granted it full access")
}

pub(super) fn truck_not_granted() -> ApiError {
    codes::TRUCK_NOT_GRANTED.with("the load's truck belongs to an organization that no longer grants this one full access: its bill cannot be charged more")
}

/// The truck's organization's consent, checked inside a load's
/// transaction: its `full` grant to the load's organization stands, and it
/// is active. Only the truck's organization's own act lets another name
/// its trucks or bill it.
pub(super) fn consent(
    table: &str,
    truck_org: Uuid,
    load_org: Uuid,
) -> ApiResult<[TransactWriteItem; 2]> {
    let grant = ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(grants::grant_key(truck_org, load_org)))
        .condition_expression("#scope = :full")
        .expression_attribute_names("#scope", "scope")
        .expression_attribute_values(":full", s("full"))
        .build()
        .map_err(ApiError::internal)?;
    let active = ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(key(keys::org_pk(truck_org), keys::ORG_SK)))
        .condition_expression("#status = :active")
        .expression_attribute_names("#status", "status")
        .expression_attribute_values(":active", s(crate::model::org::STATUS_ACTIVE))
        .build()
        .map_err(ApiError::internal)?;
    Ok([grant, active].map(|c| TransactWriteItem::builder().condition_check(c).build()))
}

/// A condition checked in a load's transaction, and the refusal it means.
pub(super) type Check = (TransactWriteItem, fn() -> ApiError);

/// A resolved destination: the receiving point and its site and owner.
pub(super) struct Destination {
    point: ReceivingPointRecord,
}

impl Destination {
    pub(super) fn apply(&self, load: &mut SurplusRecord) {
        load.to_receiving_point_id = Some(self.point.id);
        load.to_site_id = Some(self.point.site_id);
        load.to_org_id = Some(self.point.org_id);
    }

    /// The receiving point is still as read: there, active, and this
    /// organization's or public.
    pub(super) fn checks(&self, table: &str, org: Uuid) -> ApiResult<Vec<Check>> {
        let condition = if self.point.org_id == org {
            "attribute_exists(pk) AND attribute_not_exists(archived_at)"
        } else {
            "attribute_exists(pk) AND attribute_not_exists(archived_at) AND is_public = :yes"
        };
        let check = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(record_key::<ReceivingPointRecord>(
                self.point.org_id,
                self.point.id,
            )))
            .condition_expression(condition);
        let check = if self.point.org_id == org {
            check
        } else {
            check.expression_attribute_values(
                ":yes",
                aws_sdk_dynamodb::types::AttributeValue::Bool(true),
            )
        };
        let point = TransactWriteItem::builder()
            .condition_check(check.build().map_err(ApiError::internal)?)
            .build();
        let mut checks: Vec<Check> = vec![(point, receiving_point_archived)];
        if self.point.org_id != org {
            // Another organization's public point: while it is active.
            let active = ConditionCheck::builder()
                .table_name(table)
                .set_key(Some(key(keys::org_pk(self.point.org_id), keys::ORG_SK)))
                .condition_expression("#status = :active")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":active", s(crate::model::org::STATUS_ACTIVE))
                .build()
                .map_err(ApiError::internal)?;
            let active = TransactWriteItem::builder().condition_check(active).build();
            checks.push((active, receiving_point_not_found));
        }
        Ok(checks)
    }
}

impl Surpluses<'_> {
    /// An active origin site of the organization (422 `site_not_found`,
    /// `site_archived`).
    pub(super) async fn origin(&self, org: Uuid, site: Uuid) -> ApiResult<SiteRecord> {
        let site = self
            .0
            .sites()
            .get(org, site)
            .await?
            .ok_or_else(ApiError::site_not_found)?;
        if site.archived_at.is_some() {
            return Err(ApiError::site_archived());
        }
        Ok(site)
    }

    /// A receiving point the organization may deliver to: one of its own,
    /// or another organization's public one (found by id through `gsi1`);
    /// 422 `receiving_point_not_found`, `receiving_point_archived`.
    pub(super) async fn destination(&self, org: Uuid, point: Uuid) -> ApiResult<Destination> {
        let store = self.0;
        let found = match store.receiving_points().get(org, point).await? {
            Some(own) => Some(own),
            None => {
                let page = store
                    .db
                    .query()
                    .table_name(store.table())
                    .index_name("gsi1")
                    .key_condition_expression("gsi1pk = :pk")
                    .expression_attribute_values(":pk", s(keys::receiving_point_lookup_pk(point)))
                    .send()
                    .await
                    .map_err(sdk_error)?;
                page.items
                    .unwrap_or_default()
                    .into_iter()
                    .next()
                    .map(from_item::<ReceivingPointRecord>)
                    .transpose()?
                    .filter(|p| p.is_public)
            }
        };
        let point = found.ok_or_else(receiving_point_not_found)?;
        if point.archived_at.is_some() {
            return Err(receiving_point_archived());
        }
        Ok(Destination { point })
    }

    /// A truck in service that the organization may name: its own, or one
    /// of an active organization that granted it `full` access (422
    /// `truck_not_found`). The grant is checked again in the load's
    /// transaction (`consent`).
    pub(super) async fn truck(&self, org: Uuid, truck: Uuid) -> ApiResult<TruckRecord> {
        let store = self.0;
        if let Some(own) = store.trucks().get(org, truck).await? {
            return own
                .retired_at
                .is_none()
                .then_some(own)
                .ok_or_else(truck_not_found);
        }
        match store
            .grants()
            .granted_record::<TruckRecord>(org, truck)
            .await?
        {
            Some((found, GrantScope::Full)) if found.retired_at.is_none() => Ok(found),
            _ => Err(truck_not_found()),
        }
    }
}
