//! Member: a person's membership in an organization (the contract's Member:
//! `id` is the profile id). The create body also makes the person's
//! profile (the auth user), with an optional e-mail and password; PATCH
//! changes the person (names, phone) and the membership (role, active).
//! Responses never carry e-mail, password or platform role.
//!
//! A membership may name the worksite its member works at (`site_id`, a
//! site of the same organization): the site's people are its active
//! members with their roles, and its contact person (see `model::site`).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::patch::{self, Patch};
use super::time::Timestamp;
use super::validate;
use crate::error::ApiError;

pub const MAX_NAME: usize = 200;
pub const MAX_EMAIL: usize = 254;
/// Password length bounds (characters): long enough to resist guessing,
/// short enough to bound the cost of hashing.
pub const MIN_PASSWORD: usize = 12;
pub const MAX_PASSWORD: usize = 128;

/// A membership's role. `org_admin` exists but is managed by the operator's
/// admin application: the API neither assigns it nor changes its holders.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    #[default]
    Member,
    Driver,
    SiteManager,
    FactoryManager,
    AdditiveSupplier,
    OrgAdmin,
}

impl Role {
    /// The role as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Driver => "driver",
            Role::SiteManager => "site_manager",
            Role::FactoryManager => "factory_manager",
            Role::AdditiveSupplier => "additive_supplier",
            Role::OrgAdmin => "org_admin",
        }
    }
}

/// A role the API may assign (everything but `org_admin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssignableRole {
    Member,
    Driver,
    SiteManager,
    FactoryManager,
    AdditiveSupplier,
}

impl From<AssignableRole> for Role {
    fn from(role: AssignableRole) -> Role {
        match role {
            AssignableRole::Member => Role::Member,
            AssignableRole::Driver => Role::Driver,
            AssignableRole::SiteManager => Role::SiteManager,
            AssignableRole::FactoryManager => Role::FactoryManager,
            AssignableRole::AdditiveSupplier => Role::AdditiveSupplier,
        }
    }
}

/// A member as responses show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub id: Uuid,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub role: Role,
    pub phone: Option<String>,
    pub active: bool,
    /// The worksite the member works at, or null.
    pub site_id: Option<Uuid>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// The sign-in of a new person: an e-mail and the password's argon2id hash.
#[derive(Clone, Debug)]
pub struct Login {
    pub email: String,
    pub password: String,
}

/// A validated new member.
#[derive(Clone, Debug)]
pub struct NewMember {
    pub first_name: String,
    pub last_name: String,
    pub phone: String,
    pub role: Role,
    pub site_id: Option<Uuid>,
    pub login: Option<Login>,
}

/// POST /api/v1/members body.
#[derive(Debug, Deserialize)]
pub struct CreateMember {
    pub first_name: String,
    pub last_name: String,
    pub phone: String,
    pub role: Option<AssignableRole>,
    pub site_id: Option<Uuid>,
    pub email: Option<String>,
    pub password: Option<String>,
}

fn name(field: &str, value: &str) -> Result<String, ApiError> {
    validate::required_text(field, value, MAX_NAME)
}

fn password(value: String) -> Result<String, ApiError> {
    let length = value.chars().count();
    if !(MIN_PASSWORD..=MAX_PASSWORD).contains(&length) {
        return Err(ApiError::validation(
            "password",
            format!("must be {MIN_PASSWORD} to {MAX_PASSWORD} characters"),
        ));
    }
    Ok(value)
}

impl CreateMember {
    pub fn validate(self) -> Result<NewMember, ApiError> {
        let login = match (self.email, self.password) {
            (None, None) => None,
            (Some(email), Some(pw)) => Some(Login {
                email: validate::email("email", &email, MAX_EMAIL)?,
                password: password(pw)?,
            }),
            _ => {
                return Err(ApiError::Validation(
                    "email and password: give both or neither".into(),
                ));
            }
        };
        Ok(NewMember {
            first_name: name("first_name", &self.first_name)?,
            last_name: name("last_name", &self.last_name)?,
            phone: validate::e164("phone", &self.phone)?,
            role: self.role.map(Role::from).unwrap_or_default(),
            site_id: self.site_id,
            login,
        })
    }
}

/// PATCH /api/v1/members/{memberId} body.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PatchMember {
    pub first_name: Patch<String>,
    pub last_name: Patch<String>,
    pub phone: Patch<String>,
    pub role: Patch<AssignableRole>,
    pub active: Patch<bool>,
    pub site_id: Patch<Uuid>,
}

/// Validated member changes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemberChanges {
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub phone: Option<String>,
    pub role: Option<Role>,
    pub active: Option<bool>,
    /// `Some(None)`: no longer at a site.
    pub site_id: Option<Option<Uuid>>,
}

impl PatchMember {
    pub fn validate(self) -> Result<MemberChanges, ApiError> {
        let changes = MemberChanges {
            first_name: patch::required_text("first_name", self.first_name, MAX_NAME)?,
            last_name: patch::required_text("last_name", self.last_name, MAX_NAME)?,
            phone: match self.phone {
                Patch::Absent => None,
                Patch::Null => return Err(ApiError::validation("phone", "must not be null")),
                Patch::Value(v) => Some(validate::e164("phone", &v)?),
            },
            // `role: null` resets to `member`.
            role: match self.role {
                Patch::Absent => None,
                Patch::Null => Some(Role::Member),
                Patch::Value(role) => Some(role.into()),
            },
            active: match self.active {
                Patch::Absent => None,
                Patch::Null => return Err(ApiError::validation("active", "must be true or false")),
                Patch::Value(v) => Some(v),
            },
            site_id: match self.site_id {
                Patch::Absent => None,
                Patch::Null => Some(None),
                Patch::Value(site) => Some(Some(site)),
            },
        };
        if changes == MemberChanges::default() {
            return Err(ApiError::Validation(
                "the body needs at least one of first_name, last_name, phone, role, active, site_id"
                    .into(),
            ));
        }
        Ok(changes)
    }
}

/// PUT /api/v1/members/{memberId}/role body.
#[derive(Debug, Deserialize)]
pub struct PutRole {
    pub role: AssignableRole,
}

/// `include_inactive` query of the member list: `true` or `false`.
#[derive(Debug, Default, Deserialize)]
pub struct ListMembers {
    #[serde(default)]
    pub include_inactive: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(json: serde_json::Value) -> Result<NewMember, ApiError> {
        crate::http::body::parse::<CreateMember>(json.to_string().as_bytes())?.validate()
    }

    #[test]
    fn create_rules() {
        let base = serde_json::json!({"first_name": " Ann ", "last_name": "Lee", "phone": "+358401234567"});
        let new = create(base.clone()).unwrap();
        assert_eq!((new.first_name.as_str(), new.role), ("Ann", Role::Member));
        let mut with_login = base.clone();
        with_login["email"] = "ann@example.com".into();
        with_login["password"] = "correct horse battery".into();
        assert!(create(with_login.clone()).unwrap().login.is_some());
        for (change, field) in [
            (
                serde_json::json!({"email": "ann@example.com"}),
                "email and password",
            ),
            (
                serde_json::json!({"password": "correct horse battery"}),
                "email and password",
            ),
            (
                serde_json::json!({"email": "ann@example.com", "password": "short"}),
                "password",
            ),
            (
                serde_json::json!({"email": "nope", "password": "correct horse battery"}),
                "email",
            ),
            (serde_json::json!({"role": "org_admin"}), "role"),
            (serde_json::json!({"phone": "0401234567"}), "phone"),
            (serde_json::json!({"first_name": " "}), "first_name"),
        ] {
            let mut body = base.clone();
            for (k, v) in change.as_object().unwrap() {
                body[k] = v.clone();
            }
            let e = create(body).unwrap_err();
            assert_eq!(e.code(), "validation_error");
            assert!(e.to_string().starts_with(field), "{field}: {e}");
        }
    }

    #[test]
    fn patch_rules() {
        let patch = |json: serde_json::Value| {
            crate::http::body::parse::<PatchMember>(json.to_string().as_bytes())
                .and_then(PatchMember::validate)
        };
        assert_eq!(
            patch(serde_json::json!({"role": null})).unwrap().role,
            Some(Role::Member)
        );
        assert_eq!(
            patch(serde_json::json!({"active": false})).unwrap().active,
            Some(false)
        );
        let site = Uuid::now_v7();
        assert_eq!(
            patch(serde_json::json!({"site_id": site})).unwrap().site_id,
            Some(Some(site))
        );
        assert_eq!(
            patch(serde_json::json!({"site_id": null})).unwrap().site_id,
            Some(None)
        );
        for bad in [
            serde_json::json!({}),
            serde_json::json!({"active": null}),
            serde_json::json!({"phone": null}),
            serde_json::json!({"role": "org_admin"}),
            serde_json::json!({"first_name": null}),
        ] {
            assert_eq!(
                patch(bad.clone()).unwrap_err().code(),
                "validation_error",
                "{bad}"
            );
        }
    }
}
