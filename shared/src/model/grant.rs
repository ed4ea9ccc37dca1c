//! Organization access grants: a granter lets a partner (grantee, e.g. a
//! haulier) see its sites.

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
    /// `read`, plus what surplus operations allow a full partner.
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
