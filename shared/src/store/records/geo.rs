//! Geo index entries: every record with coordinates has one entry per index
//! precision in its organization's cells (and, for public receiving points,
//! in the `PUBLIC` cells), written in the same transaction as the record.
//! The `PUBLIC` cells are everyone's: an organization has at most
//! `MAX_PUBLIC_PLACES` places there, counted on its item (`public_places`)
//! in the same transaction, and a deactivated organization's are removed.

use aws_sdk_dynamodb::types::{Delete, TransactWriteItem};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::codes;
use crate::error::{ApiError, ApiResult};
use crate::model::geo::{Coordinates, INDEX_PRECISIONS, PUBLIC_SORT_PRECISION};
use crate::model::place::PlaceKind;
use crate::store::engine::item::{Item, key, n, to_item};
use crate::store::engine::keys;
use crate::store::exactly_once::tx::put;

/// Scope of the cells holding public receiving points of every organization.
pub const PUBLIC: &str = "PUBLIC";

/// Places one organization may have in the `PUBLIC` cells (its public
/// receiving points with coordinates): every organization's nearby search
/// reads those cells.
pub const MAX_PUBLIC_PLACES: u32 = 200;

pub fn public_place_limit_reached() -> ApiError {
    codes::PUBLIC_PLACE_LIMIT_REACHED.with(format!(
            "this organization has {MAX_PUBLIC_PLACES} public receiving points with coordinates, the most it may have"
        ))
}

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
#[derive(Clone, Serialize, Deserialize)]
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

pub use crate::model::geo::PUBLIC_COPIES;

/// The partition of copy `copy` of a `PUBLIC` cell: the first is the
/// cell's own key (as tables from before the copies hold it), the others
/// the same with `#COPY<n>`.
pub fn public_cell_pk(copy: u32, precision: usize, cell: &str) -> String {
    let pk = cell_pk(PUBLIC, precision, cell);
    if copy == 0 {
        pk
    } else {
        format!("{pk}#COPY{copy}")
    }
}

/// Whether `pk` is the first copy of a `PUBLIC` cell (the one every table
/// has had).
pub fn is_first_copy(pk: &str) -> bool {
    is_public_cell(pk) && !pk.contains("#COPY")
}

/// Whether `pk` is a cell of the `PUBLIC` scope.
pub fn is_public_cell(pk: &str) -> bool {
    pk.strip_prefix("GEO#")
        .and_then(|rest| rest.strip_prefix(PUBLIC))
        .is_some_and(|rest| rest.starts_with('#'))
}

/// The sort key of an entry in a `PUBLIC` cell: its kind, then its
/// geohash at `PUBLIC_SORT_PRECISION`, then its id, so that a part of the
/// cell is one key range (`begins_with`) and a crowded cell can be read
/// nearest part first (`store::records::places`).
pub fn public_sk(kind: PlaceKind, coordinates: &Coordinates, id: Uuid) -> String {
    let hash = coordinates.geohash(PUBLIC_SORT_PRECISION);
    format!("{}#{hash}#{id}", kind.tag())
}

/// Whether `sk` is a sort key of a `PUBLIC` cell as `public_sk` writes it.
pub fn is_public_sk(sk: &str) -> bool {
    let mut parts = sk.split('#');
    let (Some(_tag), Some(hash), Some(id), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    hash.len() == PUBLIC_SORT_PRECISION && Uuid::try_parse(id).is_ok()
}

impl GeoEntry {
    fn keys(&self) -> Vec<(String, String)> {
        let own_sk = format!("{}#{}", self.kind.tag(), self.id);
        let public_sk = public_sk(self.kind, &self.coordinates, self.id);
        let org = self.org_id.to_string();
        let mut keys = Vec::new();
        for precision in INDEX_PRECISIONS {
            let cell = self.coordinates.geohash(precision);
            keys.push((cell_pk(&org, precision, &cell), own_sk.clone()));
            if self.public {
                for copy in 0..PUBLIC_COPIES {
                    keys.push((public_cell_pk(copy, precision, &cell), public_sk.clone()));
                }
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
pub fn items(entries: &[GeoEntry]) -> ApiResult<Vec<Item>> {
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

/// The change to `org`'s count of places in the `PUBLIC` cells when its
/// entries move from `old` to `new` (None when the count stays): the
/// update of its item, conditioned on the cap when the count grows.
pub(crate) fn public_count(
    table: &str,
    org: Uuid,
    old: &[GeoEntry],
    new: &[GeoEntry],
) -> ApiResult<Option<TransactWriteItem>> {
    let public = |entries: &[GeoEntry]| entries.iter().filter(|e| e.public).count() as i64;
    let delta = public(new) - public(old);
    if delta == 0 {
        return Ok(None);
    }
    let mut update = aws_sdk_dynamodb::types::Update::builder()
        .table_name(table)
        .set_key(Some(key(keys::org_pk(org), keys::ORG_SK)))
        .update_expression("ADD public_places :delta")
        .expression_attribute_values(":delta", n(delta));
    update = if delta > 0 {
        update
            .condition_expression("attribute_not_exists(public_places) OR public_places <= :room")
            .expression_attribute_values(":room", n(i64::from(MAX_PUBLIC_PLACES) - delta))
    } else {
        update
    };
    let update = update.build().map_err(ApiError::internal)?;
    Ok(Some(TransactWriteItem::builder().update(update).build()))
}

/// The keys of `entries` in the `PUBLIC` cells (for taking a deactivated
/// organization's public places out of everyone's search).
pub(crate) fn public_keys(entries: &[GeoEntry]) -> Vec<(String, String)> {
    entries
        .iter()
        .filter(|e| e.public)
        .flat_map(GeoEntry::keys)
        .filter(|(pk, _)| is_public_cell(pk))
        .collect()
}
