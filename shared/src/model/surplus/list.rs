//! The query of `GET /api/v1/surpluses`: its status filter, page size
//! and the filters a cursor is bound to.

use serde::Deserialize;

use super::StatusGroup;
use crate::error::ApiError;
use crate::model::id::Id;

/// `status` filter of the list: `open`, `delivered`, `expired` or `all`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListStatus {
    Open,
    Delivered,
    Expired,
    #[default]
    All,
}

impl ListStatus {
    pub fn group(self) -> Option<StatusGroup> {
        match self {
            ListStatus::Open => Some(StatusGroup::Open),
            ListStatus::Delivered => Some(StatusGroup::Delivered),
            ListStatus::Expired => Some(StatusGroup::Expired),
            ListStatus::All => None,
        }
    }
}

pub const DEFAULT_PAGE: u32 = 50;
pub const MAX_PAGE: u32 = 100;

/// GET /api/v1/surpluses query.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ListSurpluses {
    pub status: ListStatus,
    pub site_id: Option<Id>,
    pub limit: Option<u32>,
    pub cursor: Option<String>,
}

impl ListSurpluses {
    pub fn limit(&self) -> Result<u32, ApiError> {
        match self.limit {
            None => Ok(DEFAULT_PAGE),
            Some(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
            Some(_) => Err(ApiError::validation(
                "limit",
                format!("must be an integer from 1 to {MAX_PAGE}"),
            )),
        }
    }

    /// The filters a cursor is bound to.
    pub fn filters(&self) -> String {
        format!(
            "status={}&site_id={}",
            self.group_name(),
            self.site_id.map(|s| s.0.to_string()).unwrap_or_default()
        )
    }

    fn group_name(&self) -> &'static str {
        self.status.group().map_or("all", StatusGroup::as_str)
    }
}
