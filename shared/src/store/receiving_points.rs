//! Receiving points in the organization partition (`ORG#<org>` / `RP#<id>`).
//! Public points are also indexed in the `PUBLIC` geo cells.

use uuid::Uuid;

use super::geo::GeoEntry;
use super::records::Record;
use crate::error::ApiError;
use crate::model::receiving_point::ReceivingPointRecord;

impl Record for ReceivingPointRecord {
    const PREFIX: &'static str = "RP#";

    fn not_found() -> ApiError {
        ApiError::NotFound { code: "receiving_point_not_found", message: "receiving point not found" }
    }
    fn id(&self) -> Uuid {
        self.id
    }
    fn org_id(&self) -> Uuid {
        self.org_id
    }
    fn version(&self) -> u64 {
        self.version
    }
    fn set_version(&mut self, version: u64) {
        self.version = version;
    }
    fn archived_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        self.archived_at
    }
    fn set_archived(&mut self, archived_at: Option<chrono::DateTime<chrono::Utc>>, now: chrono::DateTime<chrono::Utc>) {
        self.archived_at = archived_at;
        self.updated_at = now;
    }
    fn geo(&self) -> Vec<GeoEntry> {
        match (self.archived_at, self.coordinates) {
            (None, Some(coordinates)) => vec![GeoEntry {
                kind: "RP",
                id: self.id,
                org_id: self.org_id,
                name: self.name.clone(),
                coordinates,
                public: self.is_public,
            }],
            _ => Vec::new(),
        }
    }
}
