//! Site (worksite): the stored record, its two views (list row and single
//! read), and its create and PATCH bodies.

use std::collections::BTreeMap;

use super::time::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::id::Id;

use super::archive::{self, Status};
use super::geo::Coordinates;
use super::patch::{self, Patch, assign};
use super::validate;
use crate::error::ApiError;

/// Longest accepted string field.
pub const MAX_TEXT: usize = 500;
/// `metadata` limits: entries, key length, value length.
pub const MAX_METADATA_ENTRIES: usize = 50;
pub const MAX_METADATA_KEY: usize = 100;
pub const MAX_METADATA_VALUE: usize = 1000;
/// Role of the site's contact person in `members`.
pub const CONTACT_ROLE: &str = "site_contact";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteRole {
    ConstructionSite,
    ReceptionSite,
}

pub type Metadata = BTreeMap<String, String>;

/// The stored site.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SiteRecord {
    pub id: Uuid,
    pub org_id: Uuid,
    pub name: String,
    pub street_address: Option<String>,
    pub postal_code: Option<String>,
    pub city: Option<String>,
    pub coordinates: Option<Coordinates>,
    pub construction_id: Option<String>,
    pub external_id: Option<String>,
    #[serde(default)]
    pub metadata: Metadata,
    pub contact_first_name: Option<String>,
    pub contact_last_name: Option<String>,
    pub contact_phone: Option<String>,
    pub info: Option<String>,
    pub site_role: Option<SiteRole>,
    pub site_type: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<Timestamp>,
    #[serde(default)]
    pub version: u64,
}

/// A person at the worksite: the site's contact person (`member_id` null,
/// role `site_contact`), or an active member of the organization who works
/// there (`member_id` the member's id, role the membership's). No e-mail,
/// ever.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SitePerson {
    pub member_id: Option<Uuid>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub phone: Option<String>,
    pub role: String,
}

/// A site as responses show it. `members` and `metadata` only in the
/// single read (and the answers of writes, which return the single view).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Site {
    pub id: Uuid,
    pub name: String,
    pub status: Status,
    pub city: Option<String>,
    pub coordinates: Option<Coordinates>,
    pub street_address: Option<String>,
    pub postal_code: Option<String>,
    pub construction_id: Option<String>,
    pub external_id: Option<String>,
    pub info: Option<String>,
    pub site_role: Option<SiteRole>,
    #[serde(rename = "type")]
    pub site_type: Option<String>,
    pub customer_id: Uuid,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<SitePerson>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl SiteRecord {
    /// The site's people: its contact person, when one is recorded, then
    /// `members`, the members who work there.
    pub fn people(&self, members: Vec<SitePerson>) -> Vec<SitePerson> {
        let any = self.contact_first_name.is_some()
            || self.contact_last_name.is_some()
            || self.contact_phone.is_some();
        let contact = any.then(|| SitePerson {
            member_id: None,
            first_name: self.contact_first_name.clone(),
            last_name: self.contact_last_name.clone(),
            phone: self.contact_phone.clone(),
            role: CONTACT_ROLE.into(),
        });
        contact.into_iter().chain(members).collect()
    }

    /// The list row.
    pub fn row(&self) -> Site {
        Site {
            id: self.id,
            name: self.name.clone(),
            status: archive::status(self.archived_at),
            city: self.city.clone(),
            coordinates: self.coordinates,
            street_address: self.street_address.clone(),
            postal_code: self.postal_code.clone(),
            construction_id: self.construction_id.clone(),
            external_id: self.external_id.clone(),
            info: self.info.clone(),
            site_role: self.site_role,
            site_type: self.site_type.clone(),
            customer_id: self.org_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
            members: None,
            metadata: None,
        }
    }

    /// The single read: the row plus its people (`members`: the contact
    /// person, then `members`, who work there) and `metadata`.
    pub fn detail(&self, members: Vec<SitePerson>) -> Site {
        Site {
            members: Some(self.people(members)),
            metadata: Some(self.metadata.clone()),
            ..self.row()
        }
    }
}

fn metadata(value: Metadata) -> Result<Metadata, ApiError> {
    if value.len() > MAX_METADATA_ENTRIES {
        return Err(ApiError::validation(
            "metadata",
            format!("holds at most {MAX_METADATA_ENTRIES} entries"),
        ));
    }
    for (key, entry) in &value {
        if key.is_empty() || key.chars().count() > MAX_METADATA_KEY {
            return Err(ApiError::validation(
                "metadata",
                format!("keys are 1 to {MAX_METADATA_KEY} characters"),
            ));
        }
        validate::max_len(&format!("metadata.{key}"), entry, MAX_METADATA_VALUE)?;
    }
    Ok(value)
}

fn customer(customer_id: Option<Uuid>, org: Uuid) -> Result<(), ApiError> {
    match customer_id {
        Some(id) if id != org => Err(ApiError::OrgIdMismatch(
            "customer_id must be the key's organization",
        )),
        _ => Ok(()),
    }
}

fn text(field: &str, value: Option<String>) -> Result<Option<String>, ApiError> {
    validate::optional_text(field, value.as_deref(), MAX_TEXT)
}

/// `contact_phone`: exactly an E.164 number, or null.
fn phone(value: Option<String>) -> Result<Option<String>, ApiError> {
    value
        .map(|v| validate::e164("contact_phone", &v))
        .transpose()
}

/// POST /api/v1/sites body.
#[derive(Debug, Deserialize)]
pub struct CreateSite {
    pub name: String,
    pub street_address: Option<String>,
    pub postal_code: Option<String>,
    pub city: Option<String>,
    pub lat: Option<f64>,
    pub lng: Option<f64>,
    pub construction_id: Option<String>,
    pub external_id: Option<String>,
    pub metadata: Option<Metadata>,
    pub contact_first_name: Option<String>,
    pub contact_last_name: Option<String>,
    pub contact_phone: Option<String>,
    pub info: Option<String>,
    pub site_role: Option<SiteRole>,
    #[serde(rename = "type")]
    pub site_type: Option<String>,
    pub customer_id: Option<Id>,
}

impl CreateSite {
    /// The new record of organization `org` (403 when `customer_id` differs).
    pub fn validate(self, org: Uuid, now: Timestamp) -> Result<SiteRecord, ApiError> {
        customer(self.customer_id.map(Uuid::from), org)?;
        Ok(SiteRecord {
            id: crate::model::id::spread_id(),
            org_id: org,
            name: validate::required_text("name", &self.name, MAX_TEXT)?,
            street_address: text("street_address", self.street_address)?,
            postal_code: text("postal_code", self.postal_code)?,
            city: text("city", self.city)?,
            coordinates: Coordinates::from_parts(self.lat, self.lng)?,
            construction_id: text("construction_id", self.construction_id)?,
            external_id: text("external_id", self.external_id)?,
            metadata: metadata(self.metadata.unwrap_or_default())?,
            contact_first_name: text("contact_first_name", self.contact_first_name)?,
            contact_last_name: text("contact_last_name", self.contact_last_name)?,
            contact_phone: phone(self.contact_phone)?,
            info: text("info", self.info)?,
            site_role: self.site_role,
            site_type: text("type", self.site_type)?,
            created_at: now,
            updated_at: now,
            archived_at: None,
            version: 0,
        })
    }
}

/// PATCH /api/v1/sites/{siteId} body: every field optional; `null` clears
/// an optional field; `metadata` replaces the whole object.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PatchSite {
    pub name: Patch<String>,
    pub street_address: Patch<String>,
    pub postal_code: Patch<String>,
    pub city: Patch<String>,
    pub lat: Patch<f64>,
    pub lng: Patch<f64>,
    pub construction_id: Patch<String>,
    pub external_id: Patch<String>,
    pub metadata: Patch<Metadata>,
    pub contact_first_name: Patch<String>,
    pub contact_last_name: Patch<String>,
    pub contact_phone: Patch<String>,
    pub info: Patch<String>,
    pub site_role: Patch<SiteRole>,
    #[serde(rename = "type")]
    pub site_type: Patch<String>,
    pub customer_id: Patch<Id>,
}

/// Validated site changes: `Some(new value)` for each field to change.
#[derive(Clone, Debug, Default)]
pub struct SiteChanges {
    name: Option<String>,
    street_address: Option<Option<String>>,
    postal_code: Option<Option<String>>,
    city: Option<Option<String>>,
    coordinates: Option<Option<Coordinates>>,
    construction_id: Option<Option<String>>,
    external_id: Option<Option<String>>,
    metadata: Option<Metadata>,
    contact_first_name: Option<Option<String>>,
    contact_last_name: Option<Option<String>>,
    contact_phone: Option<Option<String>>,
    info: Option<Option<String>>,
    site_role: Option<Option<SiteRole>>,
    site_type: Option<Option<String>>,
}

impl PatchSite {
    pub fn validate(self, org: Uuid) -> Result<SiteChanges, ApiError> {
        let customer_given = match self.customer_id {
            Patch::Absent => false,
            Patch::Null => return Err(ApiError::validation("customer_id", "cannot change")),
            Patch::Value(id) => {
                customer(Some(id.into()), org)?;
                true
            }
        };
        let changes = SiteChanges {
            name: patch::required_text("name", self.name, MAX_TEXT)?,
            street_address: patch::optional_text("street_address", self.street_address, MAX_TEXT)?,
            postal_code: patch::optional_text("postal_code", self.postal_code, MAX_TEXT)?,
            city: patch::optional_text("city", self.city, MAX_TEXT)?,
            coordinates: Coordinates::from_patch(self.lat, self.lng)?,
            construction_id: patch::optional_text(
                "construction_id",
                self.construction_id,
                MAX_TEXT,
            )?,
            external_id: patch::optional_text("external_id", self.external_id, MAX_TEXT)?,
            metadata: match self.metadata {
                Patch::Absent => None,
                Patch::Null => Some(Metadata::new()),
                Patch::Value(v) => Some(metadata(v)?),
            },
            contact_first_name: patch::optional_text(
                "contact_first_name",
                self.contact_first_name,
                MAX_TEXT,
            )?,
            contact_last_name: patch::optional_text(
                "contact_last_name",
                self.contact_last_name,
                MAX_TEXT,
            )?,
            contact_phone: match self.contact_phone {
                Patch::Absent => None,
                Patch::Null => Some(None),
                Patch::Value(v) => Some(phone(Some(v))?),
            },
            info: patch::optional_text("info", self.info, MAX_TEXT)?,
            site_role: match self.site_role {
                Patch::Absent => None,
                Patch::Null => Some(None),
                Patch::Value(v) => Some(Some(v)),
            },
            site_type: patch::optional_text("type", self.site_type, MAX_TEXT)?,
        };
        if !customer_given && changes.is_empty() {
            return Err(ApiError::Validation(
                "the body needs at least one field to change".into(),
            ));
        }
        Ok(changes)
    }
}

impl SiteChanges {
    fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.street_address.is_none()
            && self.postal_code.is_none()
            && self.city.is_none()
            && self.coordinates.is_none()
            && self.construction_id.is_none()
            && self.external_id.is_none()
            && self.metadata.is_none()
            && self.contact_first_name.is_none()
            && self.contact_last_name.is_none()
            && self.contact_phone.is_none()
            && self.info.is_none()
            && self.site_role.is_none()
            && self.site_type.is_none()
    }

    /// Applies the changes to an active site (409 `record_archived` otherwise).
    pub fn apply(&self, site: &mut SiteRecord, now: Timestamp) -> Result<(), ApiError> {
        archive::ensure_editable(site.archived_at)?;
        assign(&mut site.name, &self.name);
        assign(&mut site.street_address, &self.street_address);
        assign(&mut site.postal_code, &self.postal_code);
        assign(&mut site.city, &self.city);
        assign(&mut site.coordinates, &self.coordinates);
        assign(&mut site.construction_id, &self.construction_id);
        assign(&mut site.external_id, &self.external_id);
        assign(&mut site.metadata, &self.metadata);
        assign(&mut site.contact_first_name, &self.contact_first_name);
        assign(&mut site.contact_last_name, &self.contact_last_name);
        assign(&mut site.contact_phone, &self.contact_phone);
        assign(&mut site.info, &self.info);
        assign(&mut site.site_role, &self.site_role);
        assign(&mut site.site_type, &self.site_type);
        site.updated_at = now;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(json: serde_json::Value) -> Result<SiteRecord, ApiError> {
        crate::http::body::parse::<CreateSite>(json.to_string().as_bytes())?
            .validate(Uuid::nil(), Timestamp::now())
    }

    #[test]
    fn create_validates_every_optional_field() {
        let site = create(serde_json::json!({
            "name": " Pier ", "lat": 60.1, "lng": 24.9, "metadata": {"a": "b"}, "site_role": "reception_site",
            "type": "harbour", "contact_first_name": "Ann", "contact_phone": "+358401234567", "customer_id": Uuid::nil()
        }))
        .unwrap();
        assert_eq!(site.name, "Pier");
        assert_eq!(
            site.coordinates,
            Some(Coordinates {
                lat: 60.1,
                lng: 24.9
            })
        );
        assert_eq!(site.people(Vec::new())[0].role, CONTACT_ROLE);
        let detail = serde_json::to_value(site.detail(Vec::new())).unwrap();
        assert_eq!(detail["type"], "harbour");
        assert_eq!(detail["metadata"], serde_json::json!({"a": "b"}));
        assert!(detail["members"][0].get("email").is_none());
        let row = serde_json::to_value(site.row()).unwrap();
        assert!(row.get("members").is_none() && row.get("metadata").is_none());
    }

    #[test]
    fn create_rejects_bad_fields_naming_them() {
        let cases = [
            (serde_json::json!({"name": ""}), "name"),
            (
                serde_json::json!({"name": "x", "metadata": {"a": 1}}),
                "metadata.a",
            ),
            (
                serde_json::json!({"name": "x", "metadata": ["a"]}),
                "metadata",
            ),
            (
                serde_json::json!({"name": "x", "site_role": "castle"}),
                "site_role",
            ),
            (serde_json::json!({"name": "x", "lat": 1.0}), "lat and lng"),
            (
                serde_json::json!({"name": "x", "contact_phone": "123"}),
                "contact_phone",
            ),
        ];
        for (body, field) in cases {
            let e = create(body.clone()).unwrap_err();
            assert_eq!(e.code(), "validation_error", "{body}");
            assert!(e.to_string().starts_with(field), "{body}: {e}");
        }
        let e =
            create(serde_json::json!({"name": "x", "customer_id": Uuid::now_v7()})).unwrap_err();
        assert_eq!(e.code(), "org_id_mismatch");
    }

    #[test]
    fn patch_rules() {
        let patch = |json: serde_json::Value| {
            crate::http::body::parse::<PatchSite>(json.to_string().as_bytes())
                .and_then(|p| p.validate(Uuid::nil()))
        };
        assert!(patch(serde_json::json!({})).is_err());
        assert!(patch(serde_json::json!({"customer_id": Uuid::nil()})).is_ok());
        assert_eq!(
            patch(serde_json::json!({"customer_id": Uuid::now_v7()}))
                .unwrap_err()
                .code(),
            "org_id_mismatch"
        );
        assert!(patch(serde_json::json!({"lat": 1.0})).is_err());
        assert!(patch(serde_json::json!({"lat": null, "lng": null})).is_ok());
        let mut site =
            create(serde_json::json!({"name": "x", "metadata": {"a": "1", "b": "2"}})).unwrap();
        let changes = patch(serde_json::json!({"metadata": {"c": "3"}, "city": "Oulu"})).unwrap();
        changes.apply(&mut site, Timestamp::now()).unwrap();
        assert_eq!(site.metadata, Metadata::from([("c".into(), "3".into())]));
        site.archived_at = Some(Timestamp::now());
        assert_eq!(
            changes
                .apply(&mut site, Timestamp::now())
                .unwrap_err()
                .code(),
            "record_archived"
        );
    }
}
