//! Receiving point: the stored record, its views and its create and PATCH
//! bodies. Photos are stored object paths, shown as signed links.

use super::time::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::id::Id;

use super::archive::{self, Status};
use super::geo::Coordinates;
use super::integer::Integer;
use super::link::SignedLink;
use super::open_hours::OpenHours;
use super::patch::{self, Patch, assign};
use super::validate;
use crate::error::ApiError;

pub const MAX_TEXT: usize = 500;
/// Longer free texts: `notes`, `directions`.
pub const MAX_NOTE: usize = 2000;
/// Largest accepted `capacity_m3`.
pub const MAX_CAPACITY_M3: i64 = 1_000_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReceivingPointRecord {
    pub id: Uuid,
    pub org_id: Uuid,
    pub site_id: Uuid,
    pub name: String,
    pub coordinates: Option<Coordinates>,
    pub capacity_m3: Option<i64>,
    pub is_public: bool,
    pub notes: Option<String>,
    pub directions: Option<String>,
    pub open_hours: Option<OpenHours>,
    /// Object paths in the bucket, added by operators.
    #[serde(default)]
    pub photos: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<Timestamp>,
    #[serde(default)]
    pub version: u64,
}

/// A receiving point as responses show it; `open_hours` and `photos` only
/// in the single read (and the answers of writes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReceivingPoint {
    pub id: Uuid,
    pub name: String,
    pub site_id: Uuid,
    pub coordinates: Option<Coordinates>,
    pub capacity_m3: Option<i64>,
    pub is_public: bool,
    pub status: Status,
    pub notes: Option<String>,
    pub directions: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_hours: Option<Option<OpenHours>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photos: Option<Vec<SignedLink>>,
}

impl ReceivingPointRecord {
    pub fn row(&self) -> ReceivingPoint {
        ReceivingPoint {
            id: self.id,
            name: self.name.clone(),
            site_id: self.site_id,
            coordinates: self.coordinates,
            capacity_m3: self.capacity_m3,
            is_public: self.is_public,
            status: archive::status(self.archived_at),
            notes: self.notes.clone(),
            directions: self.directions.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            open_hours: None,
            photos: None,
        }
    }

    /// The single read, with `photos` already signed.
    pub fn detail(&self, photos: Vec<SignedLink>) -> ReceivingPoint {
        ReceivingPoint {
            open_hours: Some(self.open_hours.clone()),
            photos: Some(photos),
            ..self.row()
        }
    }
}

fn capacity(value: Option<Integer>) -> Result<Option<i64>, ApiError> {
    match value {
        Some(Integer(v)) if !(0..=MAX_CAPACITY_M3).contains(&v) => Err(ApiError::validation(
            "capacity_m3",
            format!("must be an integer from 0 to {MAX_CAPACITY_M3}"),
        )),
        other => Ok(other.map(|Integer(v)| v)),
    }
}

fn note(field: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    validate::optional_text(field, value.as_deref(), MAX_NOTE)
}

/// POST /api/v1/receiving-points body.
#[derive(Debug, Deserialize)]
pub struct CreateReceivingPoint {
    pub site_id: Id,
    pub name: String,
    pub lat: Option<f64>,
    pub lng: Option<f64>,
    pub capacity_m3: Option<Integer>,
    pub is_public: Option<bool>,
    pub notes: Option<String>,
    pub directions: Option<String>,
    pub open_hours: Option<OpenHours>,
}

impl CreateReceivingPoint {
    /// The new record (the site is checked by the caller).
    pub fn validate(self, org: Uuid, now: Timestamp) -> Result<ReceivingPointRecord, ApiError> {
        Ok(ReceivingPointRecord {
            id: crate::model::id::spread_id(),
            org_id: org,
            site_id: self.site_id.into(),
            name: validate::required_text("name", &self.name, MAX_TEXT)?,
            coordinates: Coordinates::from_parts(self.lat, self.lng)?,
            capacity_m3: capacity(self.capacity_m3)?,
            is_public: self.is_public.unwrap_or(false),
            notes: note("notes", self.notes)?,
            directions: note("directions", self.directions)?,
            open_hours: self.open_hours.map(OpenHours::validate).transpose()?,
            photos: Vec::new(),
            created_at: now,
            updated_at: now,
            archived_at: None,
            version: 0,
        })
    }
}

/// PATCH /api/v1/receiving-points/{rpId} body. `site_id` may be repeated
/// but not changed.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PatchReceivingPoint {
    pub site_id: Patch<Id>,
    pub name: Patch<String>,
    pub lat: Patch<f64>,
    pub lng: Patch<f64>,
    pub capacity_m3: Patch<Integer>,
    pub is_public: Patch<bool>,
    pub notes: Patch<String>,
    pub directions: Patch<String>,
    pub open_hours: Patch<OpenHours>,
}

#[derive(Clone, Debug, Default)]
pub struct ReceivingPointChanges {
    site_id: Option<Uuid>,
    name: Option<String>,
    coordinates: Option<Option<Coordinates>>,
    capacity_m3: Option<Option<i64>>,
    is_public: Option<bool>,
    notes: Option<Option<String>>,
    directions: Option<Option<String>>,
    open_hours: Option<Option<OpenHours>>,
}

impl PatchReceivingPoint {
    pub fn validate(self) -> Result<ReceivingPointChanges, ApiError> {
        let changes = ReceivingPointChanges {
            site_id: match self.site_id {
                Patch::Absent => None,
                Patch::Null => return Err(ApiError::validation("site_id", "cannot change")),
                Patch::Value(id) => Some(id.into()),
            },
            name: patch::required_text("name", self.name, MAX_TEXT)?,
            coordinates: Coordinates::from_patch(self.lat, self.lng)?,
            capacity_m3: match self.capacity_m3 {
                Patch::Absent => None,
                Patch::Null => Some(None),
                Patch::Value(v) => Some(capacity(Some(v))?),
            },
            is_public: match self.is_public {
                Patch::Absent => None,
                Patch::Null => {
                    return Err(ApiError::validation("is_public", "must be true or false"));
                }
                Patch::Value(v) => Some(v),
            },
            notes: patch::optional_text("notes", self.notes, MAX_NOTE)?,
            directions: patch::optional_text("directions", self.directions, MAX_NOTE)?,
            open_hours: match self.open_hours {
                Patch::Absent => None,
                Patch::Null => Some(None),
                Patch::Value(v) => Some(Some(v.validate()?)),
            },
        };
        let empty = changes.site_id.is_none()
            && changes.name.is_none()
            && changes.coordinates.is_none()
            && changes.capacity_m3.is_none()
            && changes.is_public.is_none()
            && changes.notes.is_none()
            && changes.directions.is_none()
            && changes.open_hours.is_none();
        if empty {
            return Err(ApiError::Validation(
                "the body needs at least one field to change".into(),
            ));
        }
        Ok(changes)
    }
}

impl ReceivingPointChanges {
    /// Applies the changes to an active point (409 `record_archived` when
    /// archived; 422 `immutable_field` when `site_id` differs).
    pub fn apply(&self, point: &mut ReceivingPointRecord, now: Timestamp) -> Result<(), ApiError> {
        archive::ensure_editable(point.archived_at)?;
        if self.site_id.is_some_and(|site| site != point.site_id) {
            return Err(ApiError::immutable("site_id"));
        }
        assign(&mut point.name, &self.name);
        assign(&mut point.coordinates, &self.coordinates);
        assign(&mut point.capacity_m3, &self.capacity_m3);
        assign(&mut point.is_public, &self.is_public);
        assign(&mut point.notes, &self.notes);
        assign(&mut point.directions, &self.directions);
        assign(&mut point.open_hours, &self.open_hours);
        point.updated_at = now;
        Ok(())
    }
}
