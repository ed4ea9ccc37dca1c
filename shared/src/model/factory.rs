//! Factory (concrete plant): the stored record, its view and create body.

use super::time::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::archive::{self, Status};
use super::geo::Coordinates;
use super::validate;
use crate::error::ApiError;

pub const MAX_TEXT: usize = 500;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FactoryRecord {
    pub id: Uuid,
    pub org_id: Uuid,
    pub name: String,
    pub street_address: Option<String>,
    pub city: Option<String>,
    pub coordinates: Option<Coordinates>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<Timestamp>,
    #[serde(default)]
    pub version: u64,
}

/// A factory as responses show it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Factory {
    pub id: Uuid,
    pub org_id: Uuid,
    pub name: String,
    pub status: Status,
    pub street_address: Option<String>,
    pub city: Option<String>,
    pub coordinates: Option<Coordinates>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl FactoryRecord {
    pub fn view(&self) -> Factory {
        Factory {
            id: self.id,
            org_id: self.org_id,
            name: self.name.clone(),
            status: archive::status(self.archived_at),
            street_address: self.street_address.clone(),
            city: self.city.clone(),
            coordinates: self.coordinates,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// POST /api/v1/factories body.
#[derive(Debug, Deserialize)]
pub struct CreateFactory {
    pub name: String,
    pub street_address: Option<String>,
    pub city: Option<String>,
    pub lat: Option<f64>,
    pub lng: Option<f64>,
}

impl CreateFactory {
    pub fn validate(self, org: Uuid, now: Timestamp) -> Result<FactoryRecord, ApiError> {
        Ok(FactoryRecord {
            id: crate::model::id::spread_id(),
            org_id: org,
            name: validate::required_text("name", &self.name, MAX_TEXT)?,
            street_address: validate::optional_text(
                "street_address",
                self.street_address.as_deref(),
                MAX_TEXT,
            )?,
            city: validate::optional_text("city", self.city.as_deref(), MAX_TEXT)?,
            coordinates: Coordinates::from_parts(self.lat, self.lng)?,
            created_at: now,
            updated_at: now,
            archived_at: None,
            version: 0,
        })
    }
}
