//! Truck: the stored record, its view, the create body (camelCase, as the
//! contract has it) and the PATCH body (either spelling of a field, not
//! both). Positions are reported by the vehicle, never written through the
//! API.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::id::Id;

use super::geo::Coordinates;
use super::patch::{self, Patch, assign};
use super::time::Timestamp;
use super::validate;
use crate::error::ApiError;

pub const MAX_TEXT: usize = 500;
/// Longer free text: `notes`.
pub const MAX_NOTE: usize = 2000;
/// Largest capacity in m³, and its decimal places kept.
pub const MAX_CAPACITY_M3: f64 = 100.0;
pub const CAPACITY_DECIMALS: i32 = 2;
/// A plate as sent, and its letters and digits once normalized.
pub const MAX_PLATE_SENT: usize = 20;
pub const MIN_PLATE: usize = 2;
pub const MAX_PLATE: usize = 12;

/// Country of the plate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Country {
    Fi,
    Se,
    Ee,
}

impl Country {
    pub fn as_str(self) -> &'static str {
        match self {
            Country::Fi => "fi",
            Country::Se => "se",
            Country::Ee => "ee",
        }
    }
}

/// A license plate: the text as the owner writes it (trimmed, inner spaces
/// collapsed) and the normalized form that decides uniqueness per country:
/// uppercase letters and digits, with spaces and hyphens removed, so
/// `abc-123`, `ABC 123` and `ABC123` are one plate. Letters are A-Z and the
/// Nordic and Estonian ÅÄÖÕÜŠŽ, either case (the description's pattern says
/// the same).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plate {
    pub display: String,
    pub normalized: String,
}

const PLATE_LETTERS: &str = "ÅÄÖÕÜŠŽåäöõüšž";

impl Plate {
    pub fn parse(field: &str, value: &str) -> Result<Plate, ApiError> {
        validate::max_len(field, value, MAX_PLATE_SENT)?;
        let separator = |c: char| c == ' ' || c == '-';
        let sign = |c: char| c.is_ascii_alphanumeric() || PLATE_LETTERS.contains(c);
        let signs = value.chars().filter(|c| !separator(*c)).count();
        let valid = value.chars().all(|c| separator(c) || sign(c))
            && (MIN_PLATE..=MAX_PLATE).contains(&signs);
        if !valid {
            return Err(ApiError::validation(
                field,
                format!(
                    "must be a plate of {MIN_PLATE} to {MAX_PLATE} letters and digits (spaces and hyphens allowed)"
                ),
            ));
        }
        Ok(Plate {
            display: value
                .split(' ')
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
            normalized: value
                .chars()
                .filter(|c| !separator(*c))
                .flat_map(char::to_uppercase)
                .collect(),
        })
    }
}

/// The stored truck.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TruckRecord {
    pub id: Uuid,
    pub org_id: Uuid,
    pub license: String,
    /// The normalized plate (its uniqueness item is `PLATE#<country>#<this>`).
    pub plate_key: String,
    pub country: Country,
    pub capacity_m3: Option<f64>,
    pub name: Option<String>,
    pub notes: Option<String>,
    pub driver_id: Option<Uuid>,
    pub factory_id: Option<Uuid>,
    pub coordinates: Option<Coordinates>,
    pub position_updated_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Out of service (an operator's command): gone from the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<Timestamp>,
    #[serde(default)]
    pub version: u64,
}

/// A truck as responses show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Truck {
    pub id: Uuid,
    pub license: String,
    pub country: Country,
    pub capacity_m3: Option<f64>,
    pub name: Option<String>,
    pub notes: Option<String>,
    pub driver_id: Option<Uuid>,
    pub factory_id: Option<Uuid>,
    pub coordinates: Option<Coordinates>,
    pub position_updated_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl TruckRecord {
    pub fn view(&self) -> Truck {
        Truck {
            id: self.id,
            license: self.license.clone(),
            country: self.country,
            capacity_m3: self.capacity_m3,
            name: self.name.clone(),
            notes: self.notes.clone(),
            driver_id: self.driver_id,
            factory_id: self.factory_id,
            coordinates: self.coordinates,
            position_updated_at: self.position_updated_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

fn capacity(field: &str, value: f64) -> Result<f64, ApiError> {
    validate::number(field, value, 0.0, MAX_CAPACITY_M3, CAPACITY_DECIMALS)
}

/// POST /api/v1/trucks body (camelCase, as the contract has it).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTruck {
    pub org_id: Id,
    pub license: String,
    pub country: Country,
    pub capacity: Option<f64>,
    pub name: Option<String>,
    pub driver_id: Option<Id>,
    pub factory_id: Option<Id>,
    pub notes: Option<String>,
}

impl CreateTruck {
    /// The new record of organization `org` (403 when `orgId` differs).
    pub fn validate(self, org: Uuid, now: Timestamp) -> Result<TruckRecord, ApiError> {
        if self.org_id.0 != org {
            return Err(ApiError::OrgIdMismatch(
                "orgId must be the key's organization",
            ));
        }
        let plate = Plate::parse("license", &self.license)?;
        Ok(TruckRecord {
            id: Uuid::now_v7(),
            org_id: org,
            license: plate.display,
            plate_key: plate.normalized,
            country: self.country,
            capacity_m3: self.capacity.map(|c| capacity("capacity", c)).transpose()?,
            name: validate::optional_text("name", self.name.as_deref(), MAX_TEXT)?,
            notes: validate::optional_text("notes", self.notes.as_deref(), MAX_NOTE)?,
            driver_id: self.driver_id.map(Uuid::from),
            factory_id: self.factory_id.map(Uuid::from),
            coordinates: None,
            position_updated_at: None,
            created_at: now,
            updated_at: now,
            retired_at: None,
            version: 0,
        })
    }
}

/// Fields of a truck that only the vehicle (its position) or the record's
/// creation set: a PATCH that carries one is 422 naming it.
const READ_ONLY: [&str; 8] = [
    "coordinates",
    "position_updated_at",
    "lat",
    "lng",
    "factory_id",
    "factoryId",
    "org_id",
    "orgId",
];

/// PATCH /api/v1/trucks/{truckId} body: `driver_id` or `driverId`,
/// `capacity_m3` or `capacity` (one spelling per field), `name`, `license`,
/// `country`, `notes`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PatchTruck {
    pub driver_id: Patch<Id>,
    #[serde(rename = "driverId")]
    pub driver_id_camel: Patch<Id>,
    pub capacity_m3: Patch<f64>,
    pub capacity: Patch<f64>,
    pub name: Patch<String>,
    pub license: Patch<String>,
    pub country: Patch<Country>,
    pub notes: Patch<String>,
    /// Everything else, to refuse the read-only fields by name (other
    /// unknown fields are ignored, as everywhere).
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// Validated truck changes.
#[derive(Clone, Debug, Default)]
pub struct TruckChanges {
    /// `Some(None)` unassigns the driver.
    pub driver_id: Option<Option<Uuid>>,
    capacity_m3: Option<Option<f64>>,
    name: Option<Option<String>>,
    plate: Option<Plate>,
    country: Option<Country>,
    notes: Option<Option<String>>,
}

/// One field sent in either of its two spellings (not both).
fn one_of<T>(snake: Patch<T>, camel: Patch<T>, names: (&str, &str)) -> Result<Patch<T>, ApiError> {
    match (snake, camel) {
        (Patch::Absent, other) | (other, Patch::Absent) => Ok(other),
        _ => Err(ApiError::Validation(format!(
            "{} and {}: the same field twice; send one spelling",
            names.0, names.1
        ))),
    }
}

impl PatchTruck {
    pub fn validate(self) -> Result<TruckChanges, ApiError> {
        if let Some(field) = READ_ONLY.iter().find(|f| self.other.contains_key(**f)) {
            return Err(ApiError::validation(
                field,
                "is read-only (positions come from the vehicle; the factory and organization are set at creation)",
            ));
        }
        let driver = one_of(
            self.driver_id,
            self.driver_id_camel,
            ("driver_id", "driverId"),
        )?;
        let capacity_field = if self.capacity.is_absent() {
            "capacity_m3"
        } else {
            "capacity"
        };
        let capacity_value = one_of(self.capacity_m3, self.capacity, ("capacity_m3", "capacity"))?;
        let changes = TruckChanges {
            driver_id: match driver {
                Patch::Absent => None,
                Patch::Null => Some(None),
                Patch::Value(id) => Some(Some(id.into())),
            },
            capacity_m3: match capacity_value {
                Patch::Absent => None,
                Patch::Null => Some(None),
                Patch::Value(v) => Some(Some(capacity(capacity_field, v)?)),
            },
            name: patch::optional_text("name", self.name, MAX_TEXT)?,
            plate: match self.license {
                Patch::Absent => None,
                Patch::Null => return Err(ApiError::validation("license", "must not be null")),
                Patch::Value(v) => Some(Plate::parse("license", &v)?),
            },
            country: match self.country {
                Patch::Absent => None,
                Patch::Null => return Err(ApiError::validation("country", "must not be null")),
                Patch::Value(c) => Some(c),
            },
            notes: patch::optional_text("notes", self.notes, MAX_NOTE)?,
        };
        let empty = changes.driver_id.is_none()
            && changes.capacity_m3.is_none()
            && changes.name.is_none()
            && changes.plate.is_none()
            && changes.country.is_none()
            && changes.notes.is_none();
        if empty {
            return Err(ApiError::Validation(
                "the body needs at least one of driver_id, name, license, country, capacity_m3, notes".into(),
            ));
        }
        Ok(changes)
    }
}

impl TruckChanges {
    /// Applies the changes (the store checks the driver and moves the plate).
    pub fn apply(&self, truck: &mut TruckRecord, now: Timestamp) {
        assign(&mut truck.driver_id, &self.driver_id);
        assign(&mut truck.capacity_m3, &self.capacity_m3);
        assign(&mut truck.name, &self.name);
        if let Some(plate) = &self.plate {
            truck.license = plate.display.clone();
            truck.plate_key = plate.normalized.clone();
        }
        assign(&mut truck.country, &self.country);
        assign(&mut truck.notes, &self.notes);
        truck.updated_at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plates_normalize_case_spaces_and_hyphens() {
        for sent in ["abc-123", "ABC 123", " abc123 ", "A-B-C-1-2-3", "Abc  123"] {
            assert_eq!(
                Plate::parse("license", sent).unwrap().normalized,
                "ABC123",
                "{sent}"
            );
        }
        assert_eq!(
            Plate::parse("license", "  abc   123 ").unwrap().display,
            "abc 123"
        );
        assert_eq!(
            Plate::parse("license", "åäö-12").unwrap().normalized,
            "ÅÄÖ12"
        );
        for bad in [
            "",
            " - ",
            "A",
            "ABC.123",
            "ABCDEFGHIJKLM",
            "ABC_123",
            &"A".repeat(21),
            "ABC\t123",
            "ΑΒΓ123",
        ] {
            let e = Plate::parse("license", bad).unwrap_err();
            assert!(e.to_string().starts_with("license:"), "{bad}: {e}");
        }
    }

    fn patch(json: serde_json::Value) -> Result<TruckChanges, ApiError> {
        crate::http::body::parse::<PatchTruck>(json.to_string().as_bytes())?.validate()
    }

    #[test]
    fn patch_takes_one_spelling_per_field() {
        let driver = Uuid::now_v7();
        assert_eq!(
            patch(serde_json::json!({"driverId": driver}))
                .unwrap()
                .driver_id,
            Some(Some(driver))
        );
        assert_eq!(
            patch(serde_json::json!({"driver_id": null}))
                .unwrap()
                .driver_id,
            Some(None)
        );
        for twice in [
            serde_json::json!({"driver_id": driver, "driverId": driver}),
            serde_json::json!({"capacity": 5, "capacity_m3": 5}),
        ] {
            let e = patch(twice).unwrap_err();
            assert_eq!(e.code(), "validation_error");
            assert!(e.to_string().contains("send one spelling"), "{e}");
        }
        let e = patch(serde_json::json!({"capacity": 100.5})).unwrap_err();
        assert!(e.to_string().starts_with("capacity:"), "{e}");
    }

    #[test]
    fn patch_refuses_read_only_fields_by_name() {
        for field in ["coordinates", "position_updated_at", "factoryId"] {
            let e = patch(serde_json::json!({"name": "x", field: null})).unwrap_err();
            assert!(e.to_string().starts_with(field), "{e}");
        }
        assert!(patch(serde_json::json!({"name": "x", "unknown": 1})).is_ok());
        assert!(
            patch(serde_json::json!({"unknown": 1})).is_err(),
            "no field to change"
        );
    }
}
