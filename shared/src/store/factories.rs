//! Factories in the organization partition (`ORG#<org>` / `FACTORY#<id>`).

use uuid::Uuid;

use super::geo::GeoEntry;
use super::records::Record;
use crate::error::ApiError;
use crate::model::factory::FactoryRecord;

impl Record for FactoryRecord {
    const PREFIX: &'static str = "FACTORY#";

    fn not_found() -> ApiError {
        ApiError::NotFound { code: "factory_not_found", message: "factory not found" }
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
                kind: "FACTORY",
                id: self.id,
                org_id: self.org_id,
                name: self.name.clone(),
                coordinates,
                public: false,
            }],
            _ => Vec::new(),
        }
    }
}
