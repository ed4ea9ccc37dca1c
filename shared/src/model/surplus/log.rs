//! A load's log: one entry per status it took.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::SurplusStatus;
use crate::model::time::Timestamp;

/// A surplus log entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    pub id: Uuid,
    pub created_at: Timestamp,
    pub status_from: Option<SurplusStatus>,
    pub status_to: SurplusStatus,
    pub message: String,
    /// The person who made the change; null for changes made with an API
    /// key (keys are the organization's, not a person's).
    pub user_id: Option<Uuid>,
}

impl LogEntry {
    pub fn new(from: Option<SurplusStatus>, to: SurplusStatus, at: Timestamp) -> Self {
        LogEntry {
            id: Uuid::now_v7(),
            created_at: at,
            status_from: from,
            status_to: to,
            message: Self::message(from, to),
            user_id: None,
        }
    }

    pub(in crate::model) fn message(from: Option<SurplusStatus>, to: SurplusStatus) -> String {
        match from {
            None => format!("created as {}", to.as_str()),
            Some(from) => format!("status changed from {} to {}", from.as_str(), to.as_str()),
        }
    }
}
