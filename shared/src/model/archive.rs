//! The archive state machine shared by sites, receiving points and
//! factories (contract: "Archivable records").

use super::time::Timestamp;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Active,
    Archived,
}

/// `status` query of the archivable lists: `active` (default) or `all`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusFilter {
    #[default]
    Active,
    All,
}

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    pub status: StatusFilter,
}

impl ListQuery {
    /// The list `list` with this filter, as its cursors name it.
    pub fn of(&self, list: &str) -> String {
        let status = match self.status {
            StatusFilter::Active => "active",
            StatusFilter::All => "all",
        };
        format!("{list}?status={status}")
    }
}

pub fn status(archived_at: Option<Timestamp>) -> Status {
    if archived_at.is_some() {
        Status::Archived
    } else {
        Status::Active
    }
}

/// DELETE: active -> archived; 409 `already_archived` otherwise.
pub fn archive(archived_at: &mut Option<Timestamp>, now: Timestamp) -> Result<(), ApiError> {
    if archived_at.is_some() {
        return Err(ApiError::already_archived());
    }
    *archived_at = Some(now);
    Ok(())
}

/// POST .../restore: archived -> active; 409 `not_archived` otherwise.
pub fn restore(archived_at: &mut Option<Timestamp>) -> Result<(), ApiError> {
    if archived_at.is_none() {
        return Err(ApiError::not_archived());
    }
    *archived_at = None;
    Ok(())
}

/// PATCH: only on active records; 409 `record_archived` otherwise.
pub fn ensure_editable(archived_at: Option<Timestamp>) -> Result<(), ApiError> {
    if archived_at.is_some() {
        Err(ApiError::record_archived())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_table() {
        let now = Timestamp::now();
        let mut at = None;
        archive(&mut at, now).unwrap();
        assert_eq!(status(at), Status::Archived);
        assert_eq!(
            archive(&mut at, now).unwrap_err().code(),
            "already_archived"
        );
        assert_eq!(ensure_editable(at).unwrap_err().code(), "record_archived");
        restore(&mut at).unwrap();
        assert_eq!(status(at), Status::Active);
        assert_eq!(restore(&mut at).unwrap_err().code(), "not_archived");
        assert!(ensure_editable(at).is_ok());
    }

    #[test]
    fn list_query() {
        let q: ListQuery = crate::http::query::parse("").unwrap();
        assert_eq!(q.status, StatusFilter::Active);
        let q: ListQuery = crate::http::query::parse("status=all").unwrap();
        assert_eq!(q.status, StatusFilter::All);
        let e = crate::http::query::parse::<ListQuery>("status=archived").unwrap_err();
        assert!(e.to_string().starts_with("status:"));
    }
}
