//! Organization: the record, its create body and its PATCH body.

use super::time::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::id::Id;

use super::patch::{self, Patch, assign};
use super::validate;
use crate::error::ApiError;

/// Longest organization name and longest other organization string.
pub const MAX_TEXT: usize = 500;

pub const STATUS_ACTIVE: &str = "active";
/// A deactivated (soft-deleted) organization: 404 `org_not_found` to the
/// API, its keys refused with 403 `org_inactive`.
pub const STATUS_DELETED: &str = "deleted";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Organization {
    pub id: Uuid,
    pub name: String,
    pub status: String,
    pub parent_id: Option<Uuid>,
    pub children: Vec<ChildOrg>,
    pub business_code: Option<String>,
    pub street_address: String,
    pub postal_code: String,
    pub city: String,
    pub invoice_email: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A direct sub-organization as listed in `children`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ChildOrg {
    pub id: Uuid,
    pub name: String,
    pub status: String,
}

/// Uniqueness form of a name: trimmed, inner whitespace collapsed, lowercase.
pub fn name_key(name: &str) -> String {
    name.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// POST /api/v1/orgs body.
#[derive(Debug, Deserialize)]
pub struct CreateOrg {
    pub name: String,
    pub parent_id: Option<Id>,
    pub business_code: Option<String>,
    pub street_address: Option<String>,
    pub postal_code: Option<String>,
    pub city: Option<String>,
    pub invoice_email: Option<String>,
}

/// A validated new organization.
#[derive(Clone, Debug)]
pub struct NewOrg {
    pub name: String,
    pub business_code: Option<String>,
    pub street_address: String,
    pub postal_code: String,
    pub city: String,
    pub invoice_email: Option<String>,
}

impl CreateOrg {
    pub fn validate(self) -> Result<NewOrg, ApiError> {
        let text = |field: &str, value: Option<String>| -> Result<String, ApiError> {
            Ok(validate::optional_text(field, value.as_deref(), MAX_TEXT)?.unwrap_or_default())
        };
        Ok(NewOrg {
            name: validate::required_text("name", &self.name, MAX_TEXT)?,
            business_code: validate::optional_text(
                "business_code",
                self.business_code.as_deref(),
                MAX_TEXT,
            )?,
            street_address: text("street_address", self.street_address)?,
            postal_code: text("postal_code", self.postal_code)?,
            city: text("city", self.city)?,
            invoice_email: self
                .invoice_email
                .map(|v| validate::email("invoice_email", &v, MAX_TEXT))
                .transpose()?,
        })
    }
}

/// PATCH /api/v1/orgs/{orgId} body. Admin fields (`status`, `parent_id`,
/// ...) and unknown fields are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PatchOrg {
    pub name: Patch<String>,
    pub business_code: Patch<String>,
    pub street_address: Patch<String>,
    pub postal_code: Patch<String>,
    pub city: Patch<String>,
    pub invoice_email: Patch<String>,
}

/// Validated changes; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OrgChanges {
    pub name: Option<String>,
    pub business_code: Option<Option<String>>,
    pub street_address: Option<String>,
    pub postal_code: Option<String>,
    pub city: Option<String>,
    pub invoice_email: Option<Option<String>>,
}

impl PatchOrg {
    pub fn validate(self) -> Result<OrgChanges, ApiError> {
        let fields = [
            &self.name,
            &self.business_code,
            &self.street_address,
            &self.postal_code,
            &self.city,
            &self.invoice_email,
        ];
        if fields.iter().all(|f| f.is_absent()) {
            return Err(ApiError::Validation(
                "the body needs at least one of name, business_code, street_address, postal_code, city, invoice_email"
                    .into(),
            ));
        }
        // Address strings are not nullable: null clears them to "".
        let address = |field: &str, value: Patch<String>| -> Result<Option<String>, ApiError> {
            match value {
                Patch::Absent => Ok(None),
                Patch::Null => Ok(Some(String::new())),
                Patch::Value(v) => {
                    validate::max_len(field, &v, MAX_TEXT)?;
                    Ok(Some(v.trim().to_owned()))
                }
            }
        };
        Ok(OrgChanges {
            name: patch::required_text("name", self.name, MAX_TEXT)?,
            business_code: patch::optional_text("business_code", self.business_code, MAX_TEXT)?,
            street_address: address("street_address", self.street_address)?,
            postal_code: address("postal_code", self.postal_code)?,
            city: address("city", self.city)?,
            invoice_email: match self.invoice_email {
                Patch::Absent => None,
                Patch::Null => Some(None),
                Patch::Value(v) => Some(Some(validate::email("invoice_email", &v, MAX_TEXT)?)),
            },
        })
    }
}

impl Organization {
    /// The record after `changes` (the store writes the same).
    pub fn apply(&mut self, changes: &OrgChanges, at: Timestamp) {
        assign(&mut self.name, &changes.name);
        assign(&mut self.business_code, &changes.business_code);
        assign(&mut self.street_address, &changes.street_address);
        assign(&mut self.postal_code, &changes.postal_code);
        assign(&mut self.city, &changes.city);
        assign(&mut self.invoice_email, &changes.invoice_email);
        self.updated_at = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(json: &str) -> Result<OrgChanges, ApiError> {
        serde_json::from_str::<PatchOrg>(json).unwrap().validate()
    }

    #[test]
    fn name_keys_ignore_case_and_spacing() {
        assert_eq!(name_key("  Acme   Concrete Oy "), "acme concrete oy");
        assert_eq!(name_key("ÄÖ"), "äö");
    }

    #[test]
    fn patch_needs_a_writable_field() {
        assert!(matches!(patch("{}"), Err(ApiError::Validation(_))));
        assert!(matches!(
            patch(r#"{"status": "deleted", "parent_id": null}"#),
            Err(ApiError::Validation(_))
        ));
    }

    #[test]
    fn patch_trims_and_bounds() {
        let c = patch(r#"{"name": "  New  ", "city": " Oulu "}"#).unwrap();
        assert_eq!(c.name.as_deref(), Some("New"));
        assert_eq!(c.city.as_deref(), Some("Oulu"));
        assert!(
            patch(r#"{"name": "   "}"#)
                .unwrap_err()
                .to_string()
                .starts_with("name:")
        );
        assert!(patch(r#"{"name": null}"#).is_err());
        let long = format!(r#"{{"postal_code": "{}"}}"#, "1".repeat(501));
        assert!(
            patch(&long)
                .unwrap_err()
                .to_string()
                .starts_with("postal_code:")
        );
    }

    #[test]
    fn patch_email_is_checked_and_nullable() {
        assert!(
            patch(r#"{"invoice_email": "nope"}"#)
                .unwrap_err()
                .to_string()
                .starts_with("invoice_email:")
        );
        assert_eq!(
            patch(r#"{"invoice_email": null}"#).unwrap().invoice_email,
            Some(None)
        );
        assert_eq!(
            patch(r#"{"business_code": null}"#).unwrap().business_code,
            Some(None)
        );
    }

    #[test]
    fn create_requires_a_name() {
        let body: CreateOrg =
            serde_json::from_str(r#"{"name": " Child ", "invoice_email": "a@b.fi"}"#).unwrap();
        let new = body.validate().unwrap();
        assert_eq!(new.name, "Child");
        assert_eq!(new.street_address, "");
        let body: CreateOrg = serde_json::from_str(r#"{"name": ""}"#).unwrap();
        assert!(body.validate().is_err());
    }
}
