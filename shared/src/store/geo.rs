//! Geo index entries: every record with coordinates has one entry per index
//! precision in its organization's cells (and, for public receiving points,
//! in the `PUBLIC` cells), written in the same transaction as the record.

use aws_sdk_dynamodb::types::{Delete, TransactWriteItem};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::item::{Item, key, to_item};
use super::tx::put;
use crate::error::{ApiError, ApiResult};
use crate::model::geo::{Coordinates, INDEX_PRECISIONS};
use crate::model::place::PlaceKind;

/// Scope of the cells holding public receiving points of every organization.
pub const PUBLIC: &str = "PUBLIC";

/// What a record puts in the index.
#[derive(Clone, Debug, PartialEq)]
pub struct GeoEntry {
    pub kind: PlaceKind,
    pub id: Uuid,
    pub org_id: Uuid,
    pub name: String,
    pub coordinates: Coordinates,
    /// Also indexed under `PUBLIC`.
    pub public: bool,
}

/// An index entry as stored (`kind` is the tag: `RP`, `SITE`, `FACTORY`).
#[derive(Serialize, Deserialize)]
pub(crate) struct GeoItem {
    pub pk: String,
    pub sk: String,
    pub kind: String,
    pub id: Uuid,
    pub org_id: Uuid,
    pub name: String,
    pub lat: f64,
    pub lng: f64,
}

pub fn cell_pk(scope: &str, precision: usize, cell: &str) -> String {
    format!("GEO#{scope}#{precision}#{cell}")
}

impl GeoEntry {
    fn keys(&self) -> Vec<(String, String)> {
        let sk = format!("{}#{}", self.kind.tag(), self.id);
        let org = self.org_id.to_string();
        let mut scopes = vec![org.as_str()];
        if self.public {
            scopes.push(PUBLIC);
        }
        let mut keys = Vec::new();
        for scope in scopes {
            for precision in INDEX_PRECISIONS {
                keys.push((
                    cell_pk(scope, precision, &self.coordinates.geohash(precision)),
                    sk.clone(),
                ));
            }
        }
        keys
    }
}

/// Transaction actions that move a record's index entries from `old` to `new`.
pub(crate) fn changes(
    table: &str,
    old: &[GeoEntry],
    new: &[GeoEntry],
) -> ApiResult<Vec<TransactWriteItem>> {
    let new_keys: Vec<(String, String)> = new.iter().flat_map(GeoEntry::keys).collect();
    let mut actions = Vec::new();
    for (pk, sk) in old.iter().flat_map(GeoEntry::keys) {
        if !new_keys.contains(&(pk.clone(), sk.clone())) {
            let delete = Delete::builder()
                .table_name(table)
                .set_key(Some(key(pk, sk)))
                .build()
                .map_err(ApiError::internal)?;
            actions.push(TransactWriteItem::builder().delete(delete).build());
        }
    }
    if old != new {
        for item in items(new)? {
            actions.push(put(table, item, None)?);
        }
    }
    Ok(actions)
}

/// The stored items of `entries`, at every precision and scope.
pub(crate) fn items(entries: &[GeoEntry]) -> ApiResult<Vec<Item>> {
    let mut items = Vec::new();
    for entry in entries {
        for (pk, sk) in entry.keys() {
            items.push(to_item(&GeoItem {
                pk,
                sk,
                kind: entry.kind.tag().to_owned(),
                id: entry.id,
                org_id: entry.org_id,
                name: entry.name.clone(),
                lat: entry.coordinates.lat,
                lng: entry.coordinates.lng,
            })?);
        }
    }
    Ok(items)
}
