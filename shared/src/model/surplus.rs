//! Surplus load: the stored record, its view, its status machine, and the
//! create and PATCH bodies; its list query (`list`) and log entry (`log`)
//! in files of their own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::id::Id;

use super::link::SignedLink;
use super::patch::{self, Patch, assign};
use super::time::Timestamp;
use super::validate;
use super::volume::Litres;
use crate::error::ApiError;
use crate::error::codes;

mod list;
mod log;

pub use list::{DEFAULT_PAGE, ListStatus, ListSurpluses, MAX_PAGE};
pub use log::LogEntry;

pub const MAX_TEXT: usize = 500;
pub const MAX_NOTE: usize = 2000;
/// Volume bounds in m³ and the decimal places kept (litres).
pub const MIN_VOLUME_M3: f64 = 0.001;
pub const MAX_VOLUME_M3: f64 = 100.0;
pub const VOLUME_DECIMALS: i32 = 3;
/// The metadata key that holds `notes`.
pub const NOTES: &str = "notes";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SurplusStatus {
    New,
    InProgress,
    Delivered,
    Rejected,
}

/// The list filter a status falls under (`open`, `delivered`, `expired`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusGroup {
    Open,
    Delivered,
    Expired,
}

impl StatusGroup {
    pub fn as_str(self) -> &'static str {
        match self {
            StatusGroup::Open => "open",
            StatusGroup::Delivered => "delivered",
            StatusGroup::Expired => "expired",
        }
    }
}

impl SurplusStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SurplusStatus::New => "new",
            SurplusStatus::InProgress => "in_progress",
            SurplusStatus::Delivered => "delivered",
            SurplusStatus::Rejected => "rejected",
        }
    }

    pub fn group(self) -> StatusGroup {
        match self {
            SurplusStatus::New | SurplusStatus::InProgress => StatusGroup::Open,
            SurplusStatus::Delivered => StatusGroup::Delivered,
            SurplusStatus::Rejected => StatusGroup::Expired,
        }
    }

    /// The transition table: `new` and `in_progress` move to each other, to
    /// `rejected` and (with a waybill) to `delivered`; `delivered` and
    /// `rejected` are final. Staying in the same status is no transition.
    pub fn may_become(self, next: SurplusStatus) -> bool {
        use SurplusStatus::*;
        matches!(
            (self, next),
            (New | InProgress, New | InProgress | Delivered | Rejected)
        ) || self == next
    }
}

/// Who pays for the additive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BilledTo {
    OriginSite,
    Truck,
}

impl BilledTo {
    pub fn as_str(self) -> &'static str {
        match self {
            BilledTo::OriginSite => "origin_site",
            BilledTo::Truck => "truck",
        }
    }
}

/// The stored waybill image.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredWaybill {
    pub storage_path: String,
    pub content_type: String,
    pub size: u64,
    pub uploaded_at: Timestamp,
    /// The form upload it was confirmed from (none for one uploaded
    /// through the API): a confirmation of the same upload again answers
    /// the load as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SurplusRecord {
    pub id: Uuid,
    /// The origin site's organization (the key's).
    pub org_id: Uuid,
    pub site_id: Uuid,
    pub to_site_id: Option<Uuid>,
    pub to_receiving_point_id: Option<Uuid>,
    /// The receiving point's organization (another one's when it is public).
    pub to_org_id: Option<Uuid>,
    pub volume_m3: f64,
    pub status: SurplusStatus,
    pub additive: bool,
    pub additive_billed_to: Option<BilledTo>,
    pub material_grade: Option<String>,
    pub manufacturer: Option<String>,
    pub description: Option<String>,
    /// Free data; `notes` is kept here (the contract's "internal metadata
    /// field") and shown as `notes`.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    pub truck_id: Option<Uuid>,
    pub truck_org_id: Option<Uuid>,
    pub driver_id: Option<Uuid>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    pub waybill: Option<StoredWaybill>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<Timestamp>,
    #[serde(default)]
    pub version: u64,
    /// The status it was created with, when the load keeps its log's
    /// first entry ("created as ...") itself rather than as an item of its
    /// log: set by the store as it writes a new load. The entry's id is
    /// the load's, its time the load's `created_at`. None on a load stored
    /// before, whose first entry is an item of its log like every later
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_as: Option<SurplusStatus>,
}

/// A load as responses show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Surplus {
    pub id: Uuid,
    pub site_id: Uuid,
    pub to_site_id: Option<Uuid>,
    pub to_receiving_point_id: Option<Uuid>,
    pub volume_m3: f64,
    pub status: SurplusStatus,
    pub additive: bool,
    pub additive_billed_to: Option<BilledTo>,
    pub material_grade: Option<String>,
    pub manufacturer: Option<String>,
    pub description: Option<String>,
    pub notes: Option<String>,
    pub truck_id: Option<Uuid>,
    pub driver_id: Option<Uuid>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    pub waybill: Option<SignedLink>,
}

impl SurplusRecord {
    /// The volume, exact.
    pub fn litres(&self) -> Litres {
        Litres::from_m3(self.volume_m3)
    }

    /// Who pays for the additive and when: the organization billed
    /// (`origin_site` the origin's, `truck` the truck's, the origin's when
    /// the load has no truck) and the billing time (`delivered_at`, else
    /// `created_at`). None when there is nothing to bill: no additive, or a
    /// rejected load.
    pub fn billing(&self) -> Option<(Uuid, Timestamp)> {
        if !self.additive || self.status == SurplusStatus::Rejected {
            return None;
        }
        let billed = match self.additive_billed_to {
            Some(BilledTo::Truck) => self.truck_org_id.unwrap_or(self.org_id),
            _ => self.org_id,
        };
        Some((billed, self.delivered_at.unwrap_or(self.created_at)))
    }

    /// The other organization whose bill this version of the load starts
    /// or raises over `before` (billed to it where it was not, or more
    /// litres): a change that must still have that organization's consent.
    /// None when the load bills its own organization, or bills the other
    /// one no more than before (a rejection, a lower volume, a delivery).
    pub fn raises_charge_of(&self, before: &SurplusRecord) -> Option<Uuid> {
        let (billed, _) = self.billing()?;
        if billed == self.org_id {
            return None;
        }
        let raised = match before.billing() {
            Some((was, _)) if was == billed => self.litres() > before.litres(),
            _ => true,
        };
        raised.then_some(billed)
    }

    pub fn notes(&self) -> Option<String> {
        self.metadata.get(NOTES).cloned()
    }

    /// The view, with the waybill's link already signed.
    pub fn view(&self, waybill: Option<SignedLink>) -> Surplus {
        Surplus {
            id: self.id,
            site_id: self.site_id,
            to_site_id: self.to_site_id,
            to_receiving_point_id: self.to_receiving_point_id,
            volume_m3: self.volume_m3,
            status: self.status,
            additive: self.additive,
            additive_billed_to: self.additive_billed_to,
            material_grade: self.material_grade.clone(),
            manufacturer: self.manufacturer.clone(),
            description: self.description.clone(),
            notes: self.notes(),
            truck_id: self.truck_id,
            driver_id: self.driver_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
            delivered_at: self.delivered_at,
            waybill,
        }
    }
}

fn volume(field: &str, value: f64) -> Result<f64, ApiError> {
    validate::number(field, value, MIN_VOLUME_M3, MAX_VOLUME_M3, VOLUME_DECIMALS)
}

fn text(field: &str, value: Option<String>, max: usize) -> Result<Option<String>, ApiError> {
    validate::optional_text(field, value.as_deref(), max)
}

/// POST /api/v1/surpluses body. The site, the receiving point and the truck
/// are checked by the store.
#[derive(Debug, Deserialize)]
pub struct CreateSurplus {
    pub site_id: Id,
    pub volume_m3: f64,
    pub to_receiving_point_id: Option<Id>,
    pub truck_id: Option<Id>,
    pub additive: Option<bool>,
    pub additive_billed_to: Option<BilledTo>,
    pub material_grade: Option<String>,
    pub manufacturer: Option<String>,
    pub description: Option<String>,
    pub notes: Option<String>,
}

impl CreateSurplus {
    pub fn validate(self, org: Uuid, now: Timestamp) -> Result<SurplusRecord, ApiError> {
        let mut metadata = BTreeMap::new();
        if let Some(notes) = text("notes", self.notes, MAX_NOTE)? {
            metadata.insert(NOTES.to_owned(), notes);
        }
        let additive = self.additive.unwrap_or(false);
        Ok(SurplusRecord {
            id: crate::model::id::spread_id(),
            org_id: org,
            site_id: self.site_id.into(),
            to_site_id: None,
            to_receiving_point_id: self.to_receiving_point_id.map(Uuid::from),
            to_org_id: None,
            volume_m3: volume("volume_m3", self.volume_m3)?,
            status: SurplusStatus::New,
            additive,
            additive_billed_to: billed_to(additive, self.additive_billed_to),
            material_grade: text("material_grade", self.material_grade, MAX_TEXT)?,
            manufacturer: text("manufacturer", self.manufacturer, MAX_TEXT)?,
            description: text("description", self.description, MAX_NOTE)?,
            metadata,
            truck_id: self.truck_id.map(Uuid::from),
            truck_org_id: None,
            driver_id: None,
            created_at: now,
            updated_at: now,
            delivered_at: None,
            waybill: None,
            archived_at: None,
            version: 0,
            created_as: None,
        })
    }
}

/// Who pays for an additive: as given, `origin_site` when an additive has
/// no payer named, none without an additive.
fn billed_to(additive: bool, given: Option<BilledTo>) -> Option<BilledTo> {
    if additive {
        Some(given.unwrap_or(BilledTo::OriginSite))
    } else {
        given
    }
}

/// Fields a PATCH may not carry (set by the service or at creation): 422
/// naming the field.
const READ_ONLY: [&str; 7] = [
    "created_at",
    "delivered_at",
    "truck_id",
    "truckId",
    "driver_id",
    "driverId",
    "driver",
];

/// PATCH /api/v1/surpluses/{surplusId} body: exactly the contract's fields.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PatchSurplus {
    pub volume_m3: Patch<f64>,
    pub additive: Patch<bool>,
    pub additive_billed_to: Patch<BilledTo>,
    pub material_grade: Patch<String>,
    pub manufacturer: Patch<String>,
    pub description: Patch<String>,
    pub notes: Patch<String>,
    pub site_id: Patch<Id>,
    pub to_receiving_point_id: Patch<Id>,
    pub status: Patch<SurplusStatus>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// Validated changes of a load.
#[derive(Clone, Debug, Default)]
pub struct SurplusChanges {
    volume_m3: Option<f64>,
    additive: Option<bool>,
    additive_billed_to: Option<Option<BilledTo>>,
    material_grade: Option<Option<String>>,
    manufacturer: Option<Option<String>>,
    description: Option<Option<String>>,
    notes: Option<Option<String>>,
    /// A new origin site (checked by the store).
    pub site_id: Option<Uuid>,
    /// A new receiving point, or `Some(None)` for none (checked by the store).
    pub to_receiving_point_id: Option<Option<Uuid>>,
    pub status: Option<SurplusStatus>,
}

fn not_null<T>(field: &str, value: Patch<T>) -> Result<Option<T>, ApiError> {
    match value {
        Patch::Absent => Ok(None),
        Patch::Null => Err(ApiError::validation(field, "must not be null")),
        Patch::Value(v) => Ok(Some(v)),
    }
}

impl PatchSurplus {
    pub fn validate(self) -> Result<SurplusChanges, ApiError> {
        if let Some(field) = READ_ONLY.iter().find(|f| self.other.contains_key(**f)) {
            return Err(ApiError::validation(
                field,
                "cannot be changed (set when the load is created or delivered)",
            ));
        }
        let changes = SurplusChanges {
            volume_m3: not_null("volume_m3", self.volume_m3)?
                .map(|v| volume("volume_m3", v))
                .transpose()?,
            additive: not_null("additive", self.additive)?,
            additive_billed_to: match self.additive_billed_to {
                Patch::Absent => None,
                Patch::Null => Some(None),
                Patch::Value(v) => Some(Some(v)),
            },
            material_grade: patch::optional_text("material_grade", self.material_grade, MAX_TEXT)?,
            manufacturer: patch::optional_text("manufacturer", self.manufacturer, MAX_TEXT)?,
            description: patch::optional_text("description", self.description, MAX_NOTE)?,
            notes: patch::optional_text("notes", self.notes, MAX_NOTE)?,
            site_id: not_null("site_id", self.site_id)?.map(Uuid::from),
            to_receiving_point_id: match self.to_receiving_point_id {
                Patch::Absent => None,
                Patch::Null => Some(None),
                Patch::Value(v) => Some(Some(v.into())),
            },
            status: not_null("status", self.status)?,
        };
        let empty = changes.volume_m3.is_none()
            && changes.additive.is_none()
            && changes.additive_billed_to.is_none()
            && changes.material_grade.is_none()
            && changes.manufacturer.is_none()
            && changes.description.is_none()
            && changes.notes.is_none()
            && changes.site_id.is_none()
            && changes.to_receiving_point_id.is_none()
            && changes.status.is_none();
        if empty {
            return Err(ApiError::Validation(
                "the body needs at least one of volume_m3, additive, additive_billed_to, material_grade, manufacturer, description, notes, site_id, to_receiving_point_id, status".into(),
            ));
        }
        Ok(changes)
    }
}

pub fn route_locked() -> ApiError {
    codes::ROUTE_LOCKED
        .with("the load is delivered: its route (site_id, to_receiving_point_id) cannot change")
}

pub fn invalid_transition(from: SurplusStatus, to: SurplusStatus) -> ApiError {
    codes::INVALID_STATUS_TRANSITION.with(format!(
        "a {} load cannot become {}",
        from.as_str(),
        to.as_str()
    ))
}

impl SurplusRecord {
    /// Keeps the load's first log entry on it (its status as created),
    /// unless it keeps one already.
    pub fn keep_created_entry(&mut self) {
        self.created_as.get_or_insert(self.status);
    }

    /// Its first log entry, when the load keeps it (`created_as`).
    pub fn created_entry(&self) -> Option<LogEntry> {
        self.created_as.map(|status| LogEntry {
            id: self.id,
            created_at: self.created_at,
            status_from: None,
            status_to: status,
            message: LogEntry::message(None, status),
            user_id: None,
        })
    }

    /// Whether the waybill may still change: 409 `waybill_locked` once the
    /// load is delivered.
    pub fn waybill_open(&self) -> Result<(), ApiError> {
        if self.status == SurplusStatus::Delivered {
            return Err(
                codes::WAYBILL_LOCKED.with("the load is delivered: its waybill cannot be replaced")
            );
        }
        Ok(())
    }
}

pub fn waybill_required() -> ApiError {
    codes::WAYBILL_REQUIRED.with("upload the waybill before the load is delivered")
}

impl SurplusChanges {
    /// Applies the changes that need nothing stored to check: the status
    /// machine (409 `invalid_status_transition`, `waybill_required`), the
    /// route lock (422 `route_locked`) and the plain fields. The caller sets
    /// the route's resolved destination.
    pub fn apply(&self, load: &mut SurplusRecord, now: Timestamp) -> Result<(), ApiError> {
        if load.status == SurplusStatus::Delivered {
            let moves_site = self.site_id.is_some_and(|s| s != load.site_id);
            let moves_point = self
                .to_receiving_point_id
                .is_some_and(|p| p != load.to_receiving_point_id);
            if moves_site || moves_point {
                return Err(route_locked());
            }
        }
        if let Some(next) = self.status {
            if !load.status.may_become(next) {
                return Err(invalid_transition(load.status, next));
            }
            if next == SurplusStatus::Delivered && load.status != next {
                if load.waybill.is_none() {
                    return Err(waybill_required());
                }
                load.delivered_at = Some(now);
            }
            load.status = next;
        }
        assign(&mut load.volume_m3, &self.volume_m3);
        assign(&mut load.additive, &self.additive);
        assign(&mut load.additive_billed_to, &self.additive_billed_to);
        load.additive_billed_to = billed_to(load.additive, load.additive_billed_to);
        assign(&mut load.material_grade, &self.material_grade);
        assign(&mut load.manufacturer, &self.manufacturer);
        assign(&mut load.description, &self.description);
        match &self.notes {
            None => {}
            Some(None) => {
                load.metadata.remove(NOTES);
            }
            Some(Some(notes)) => {
                load.metadata.insert(NOTES.to_owned(), notes.clone());
            }
        }
        assign(&mut load.site_id, &self.site_id);
        load.updated_at = now;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SurplusStatus::*;

    #[test]
    fn transition_table() {
        for from in [New, InProgress] {
            for to in [New, InProgress, Delivered, Rejected] {
                assert!(from.may_become(to), "{from:?} -> {to:?}");
            }
        }
        for from in [Delivered, Rejected] {
            for to in [New, InProgress, Delivered, Rejected] {
                assert_eq!(from.may_become(to), from == to, "{from:?} -> {to:?}");
            }
        }
    }

    #[test]
    fn volumes_are_bounded_and_kept_to_litres() {
        assert_eq!(volume("volume_m3", 7.2556).unwrap(), 7.256);
        assert_eq!(volume("volume_m3", 0.001).unwrap(), 0.001);
        for bad in [0.0, 0.0009, -1.0, 100.001, f64::NAN] {
            assert!(volume("volume_m3", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_additive_without_a_payer_is_billed_to_the_origin_site() {
        assert_eq!(billed_to(true, None), Some(BilledTo::OriginSite));
        assert_eq!(
            billed_to(true, Some(BilledTo::Truck)),
            Some(BilledTo::Truck)
        );
        assert_eq!(billed_to(false, None), None);
    }
}
