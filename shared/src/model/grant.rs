//! Organization access grants: a granter lets a partner (grantee) see its
//! sites and, with `full`, operate with its fleet: the grantee's loads may
//! name the granter's trucks and bill the granter's additive to them. Only
//! the granter's own act opens its trucks, drivers and bill to another
//! organization.

use super::time::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::id::Id;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantScope {
    /// Read the granter's sites by id (and their people).
    #[default]
    Read,
    /// `read`, plus: the grantee's loads may name the granter's trucks in
    /// service (and so their drivers) and bill the granter for additive
    /// carried by them (`additive_billed_to: truck`).
    Full,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    pub id: Uuid,
    pub granter_org_id: Uuid,
    pub grantee_org_id: Uuid,
    pub scope: GrantScope,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// POST /api/v1/org-access-grants body.
#[derive(Debug, Deserialize)]
pub struct CreateGrant {
    pub grantee_org_id: Id,
    pub scope: Option<GrantScope>,
}
