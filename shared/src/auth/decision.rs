//! What an API key is as stored, and the authentication decision over it:
//! whether the key is valid (401 otherwise) and whether it may use a route
//! that needs a scope (403 otherwise), in the contract's order. The store
//! asks DynamoDB the same questions in the condition of the one write that
//! admits a request (`store::operators::api_keys`); when that write is refused, these
//! tell which answer applies.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::scope::{self, Scope};
use crate::error::ApiError;
use crate::model::Timestamp;

/// A key as stored: never the key itself, only its SHA-256.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ApiKeyRecord {
    pub key_id: Uuid,
    pub org_id: Uuid,
    pub key_hash: String,
    pub scopes: Vec<Scope>,
    pub label: Option<String>,
    /// The organization's public-API entitlement, kept in step by
    /// `ApiKeys::set_entitlement` so authentication needs no other read.
    pub public_api: bool,
    /// Whether the organization is active, kept in step by `Orgs::deactivate`
    /// for the same reason.
    #[serde(default = "active")]
    pub org_active: bool,
    pub created_at: Timestamp,
    /// Absent attributes, not NULL: conditions test `attribute_not_exists`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Timestamp>,
}

fn active() -> bool {
    true
}

impl ApiKeyRecord {
    /// 401 when the key is no longer valid at `now`: revoked, expired.
    pub fn rejection(&self, now: Timestamp) -> Option<ApiError> {
        if self.revoked_at.is_some() {
            Some(ApiError::ApiKeyRevoked)
        } else if self.expires_at.is_some_and(|at| at <= now) {
            Some(ApiError::ApiKeyExpired)
        } else {
            None
        }
    }

    /// 403 when the valid key may not use a route that needs `needed`: its
    /// organization is inactive, the scope is missing, the organization has
    /// no entitlement, or the deployment's versioned API is off.
    pub fn refusal(&self, needed: Scope, api_enabled: bool) -> Option<ApiError> {
        if !self.org_active {
            Some(ApiError::OrgInactive)
        } else if !scope::allows(&self.scopes, needed) {
            Some(ApiError::InsufficientScope(needed.as_str()))
        } else if !self.public_api {
            Some(ApiError::FeatureNotEnabled)
        } else if !api_enabled {
            Some(ApiError::PublicApiDisabled)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ApiKeyRecord {
        ApiKeyRecord {
            key_id: Uuid::nil(),
            org_id: Uuid::nil(),
            key_hash: String::new(),
            scopes: vec![Scope::ReadData],
            label: None,
            public_api: true,
            org_active: true,
            created_at: Timestamp::now(),
            expires_at: None,
            revoked_at: None,
        }
    }

    #[test]
    fn a_key_stored_before_org_active_existed_is_of_an_active_org() {
        let mut stored = serde_json::to_value(key()).unwrap();
        stored.as_object_mut().unwrap().remove("org_active");
        let read: ApiKeyRecord = serde_json::from_value(stored).unwrap();
        assert!(read.org_active);
        assert!(read.refusal(Scope::ReadData, true).is_none());
    }

    #[test]
    fn the_checks_come_in_the_contracts_order() {
        let now = Timestamp::now();
        let ok = key();
        assert!(ok.rejection(now).is_none());
        assert!(ok.refusal(Scope::ReadData, true).is_none());
        let code = |k: &ApiKeyRecord| {
            k.rejection(now)
                .or_else(|| k.refusal(Scope::WriteData, false))
                .map(|e| e.code())
        };
        let mut k = ok.clone();
        k.revoked_at = Some(now);
        k.org_active = false;
        assert_eq!(code(&k), Some("api_key_revoked"));
        let mut k = ok.clone();
        k.expires_at = Some(now);
        assert_eq!(code(&k), Some("api_key_expired"));
        let mut k = ok.clone();
        k.org_active = false;
        k.public_api = false;
        assert_eq!(code(&k), Some("org_inactive"));
        let mut k = ok.clone();
        k.public_api = false;
        assert_eq!(code(&k), Some("insufficient_scope"));
        k.scopes = vec![Scope::All];
        assert_eq!(code(&k), Some("feature_not_enabled"));
        k.public_api = true;
        assert_eq!(code(&k), Some("public_api_disabled"));
    }
}
