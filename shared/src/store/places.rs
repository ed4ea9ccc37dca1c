//! Nearby search over the geo index (`store/geo.rs`): the cells that cover
//! the search circle, in each the organization's own entries and the public
//! receiving points, one Query per cell and scope, in parallel; then exact
//! distances, nearest first. The work grows with the cells read, never with
//! the table.

use std::collections::HashMap;

use futures::{StreamExt, TryStreamExt};
use uuid::Uuid;

use super::geo::{GeoItem, PUBLIC, cell_pk};
use super::item::{from_item, s};
use super::{Store, query_counted};
use crate::error::ApiResult;
use crate::model::geo::{self, Coordinates};
use crate::model::place::{NearbyQuery, Place, PlaceKind};

pub struct Places<'a>(pub(super) &'a Store);

/// Queries of one search in flight at once.
const PARALLEL: usize = 16;

impl Places<'_> {
    /// The places of `query` that `org` may see: its own receiving points,
    /// sites and factories, and every organization's public receiving
    /// points; archived records have no index entries.
    pub async fn nearby(&self, org: Uuid, query: &NearbyQuery) -> ApiResult<Vec<Place>> {
        let cover = geo::cover(query.center, query.radius_km);
        // One kind is a key condition; more are filtered here.
        let own_prefix = match query.kinds.as_slice() {
            [one] => format!("{}#", one.tag()),
            _ => String::new(),
        };
        let scope = org.to_string();
        let public = query.kinds.contains(&PlaceKind::ReceivingPoint);
        let mut partitions = Vec::new();
        for cell in &cover.cells {
            partitions.push((cell_pk(&scope, cover.precision, cell), own_prefix.clone()));
            if public {
                let prefix = format!("{}#", PlaceKind::ReceivingPoint.tag());
                partitions.push((cell_pk(PUBLIC, cover.precision, cell), prefix));
            }
        }
        let queried = partitions.len();
        let cells: Vec<(Vec<GeoItem>, usize)> = futures::stream::iter(partitions)
            .map(|(pk, prefix)| self.cell(pk, prefix))
            .buffer_unordered(PARALLEL)
            .try_collect()
            .await?;

        let mut items_read = 0;
        let mut found: HashMap<Uuid, Place> = HashMap::new();
        for (entries, read) in cells {
            items_read += read;
            for entry in entries {
                let Some(kind) = PlaceKind::from_tag(&entry.kind) else {
                    continue;
                };
                let at = Coordinates {
                    lat: entry.lat,
                    lng: entry.lng,
                };
                if !query.kinds.contains(&kind) || query.center.distance_km(&at) > query.radius_km {
                    continue;
                }
                let own = entry.org_id == org;
                found.entry(entry.id).or_insert_with(|| {
                    Place::new(kind, entry.id, entry.name, at, query.center, own)
                });
            }
        }
        tracing::info!(
            items_read,
            queries = queried,
            precision = cover.precision,
            "geo cells read"
        );
        let mut places: Vec<Place> = found.into_values().collect();
        places.sort_by(|a, b| {
            a.distance_km
                .total_cmp(&b.distance_km)
                .then(a.id.cmp(&b.id))
        });
        places.truncate(query.limit);
        Ok(places)
    }

    /// The entries of one cell partition whose sort key starts with
    /// `prefix` (any when empty), and the items read: every entry, page
    /// after page. A `PUBLIC` cell is everyone's and may hold thousands
    /// (200 an organization); its entries are ordered by id, so a read that
    /// stopped early would hide the newest points from every search.
    async fn cell(&self, pk: String, prefix: String) -> ApiResult<(Vec<GeoItem>, usize)> {
        let store = self.0;
        let request = if prefix.is_empty() {
            store
                .db
                .query()
                .table_name(store.table())
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(pk))
                .consistent_read(true)
        } else {
            store.prefix_query(pk, &prefix)
        };
        let (items, read) = query_counted(request).await?;
        let entries = items
            .into_iter()
            .map(from_item)
            .collect::<ApiResult<Vec<GeoItem>>>()?;
        Ok((entries, read))
    }
}
