//! Nearby search over the geo index (`store/records/geo.rs`): the cells that cover
//! the search circle; in each, the organization's own entries (read whole,
//! one Query per cell, in parallel), and the public receiving points of
//! every organization, read nearest first within a budget (`public`); then
//! exact distances, nearest first. The work grows with the cells read and
//! the answer asked for, never with the table or with what others publish.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};

use aws_sdk_dynamodb::types::{ConditionCheck, TransactWriteItem};

use futures::{StreamExt, TryStreamExt};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::model::geo::{self, Coordinates, Cover, PUBLIC_SORT_PRECISION};
use crate::model::place::{NearbyQuery, Place, PlaceKind};
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item;
use crate::store::engine::item::{Item, from_item, s};
use crate::store::engine::query;
use crate::store::engine::query::query_counted;
use crate::store::exactly_once::tx;
use crate::store::records::geo as entries;
use crate::store::records::geo::{GeoItem, PUBLIC, PUBLIC_COPIES, cell_pk, public_cell_pk};

pub struct Places<'a>(pub(in crate::store) &'a Store);

/// Queries of one search in flight at once.
const PARALLEL: usize = 16;

/// Entries a search reads from the `PUBLIC` cells at most, whatever others
/// publish: with names of at most 500 characters, well under 1 MB.
pub const PUBLIC_READ_BUDGET: usize = 1_000;
/// Queries of the `PUBLIC` cells a search makes at most.
pub const PUBLIC_QUERIES: usize = 160;
/// Entries one query of a part of a `PUBLIC` cell asks for (`page_of`): a
/// part that holds more is read by its 32 finer parts instead, nearest
/// first. Coarse parts are asked for few: their entries come in geohash
/// order, not nearest first.
const COARSE_PAGE: usize = 25;
const FINE_PAGE: usize = 100;
/// Parts this fine (about 150 m) or finer are asked for `FINE_PAGE`.
const FINE: usize = 7;

/// How many entries to ask of `part`.
fn page_of(part: &Part) -> usize {
    if part.hash.len() >= FINE || part.start.is_some() {
        FINE_PAGE
    } else {
        COARSE_PAGE
    }
}

/// The geohash in the sort key of `last`, the last entry a page read
/// (`RP#<geohash>#<id>`; empty when it is not there).
fn last_hash(last: &Item) -> String {
    last.get("sk")
        .and_then(|sk| sk.as_s().ok())
        .and_then(|sk| sk.split('#').nth(1))
        .unwrap_or_default()
        .to_owned()
}

/// The geohash alphabet: a part's 32 finer parts.
const BASE32: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

impl Places<'_> {
    /// The places of `query` that `org` may see: its own receiving points,
    /// sites and factories, and every organization's public receiving
    /// points; archived records have no index entries.
    pub async fn nearby(&self, org: Uuid, query: &NearbyQuery) -> ApiResult<Vec<Place>> {
        let cover = geo::cover(query.center, query.radius_km);
        let public = query.kinds.contains(&PlaceKind::ReceivingPoint);
        let (own, public) = futures::try_join!(self.own(org, &cover, query), async {
            if public {
                self.public(&cover, query).await
            } else {
                Ok((Vec::new(), PublicReading::default()))
            }
        })?;
        let (own, own_read) = own;
        let (public, reading) = public;
        tracing::info!(
            items_read = own_read + reading.items,
            public_items_read = reading.items,
            public_queries = reading.queries,
            public_budget_spent = reading.budget_spent,
            precision = cover.precision,
            "geo cells read"
        );
        let mut found: HashMap<Uuid, Place> = HashMap::new();
        for entry in own.into_iter().chain(public) {
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
            found
                .entry(entry.id)
                .or_insert_with(|| Place::new(kind, entry.id, entry.name, at, query.center, own));
        }
        let mut places: Vec<Place> = found.into_values().collect();
        places.sort_by(|a, b| {
            a.distance_km
                .total_cmp(&b.distance_km)
                .then(a.id.cmp(&b.id))
        });
        places.truncate(query.limit);
        Ok(places)
    }

    /// The organization's own entries in the cells of `cover` (one kind a
    /// key condition; more filtered later), and the items read: every
    /// entry, page after page (they are its own).
    async fn own(
        &self,
        org: Uuid,
        cover: &Cover,
        query: &NearbyQuery,
    ) -> ApiResult<(Vec<GeoItem>, usize)> {
        let prefix = match query.kinds.as_slice() {
            [one] => format!("{}#", one.tag()),
            _ => String::new(),
        };
        let scope = org.to_string();
        let pks: Vec<String> = (cover.cells.iter())
            .map(|cell| cell_pk(&scope, cover.precision, cell))
            .collect();
        let cells: Vec<(Vec<GeoItem>, usize)> = futures::stream::iter(pks)
            .map(|pk| self.cell(pk, prefix.clone()))
            .buffer_unordered(PARALLEL)
            .try_collect()
            .await?;
        let read = cells.iter().map(|(_, read)| read).sum();
        Ok((
            cells.into_iter().flat_map(|(items, _)| items).collect(),
            read,
        ))
    }

    /// The entries of one cell partition whose sort key starts with
    /// `prefix` (any when empty), and the items read: every entry, page
    /// after page.
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

    /// The public receiving points within the circle that a search needs:
    /// the parts of the `PUBLIC` cells of `cover` read nearest first (a
    /// cell's entries sort by their geohash, so a part is one key range),
    /// a part that holds more than a page read by its 32 finer parts, until
    /// the nearest part left is farther than `limit` points already found
    /// or than the radius. At most `PUBLIC_READ_BUDGET` entries in
    /// `PUBLIC_QUERIES` queries: in a place so crowded that the budget runs
    /// out first, the answer holds the nearest of the points read, which
    /// are those of the parts nearest the centre (`budget_spent` on the
    /// log line says so).
    async fn public(
        &self,
        cover: &Cover,
        query: &NearbyQuery,
    ) -> ApiResult<(Vec<GeoItem>, PublicReading)> {
        let center = query.center;
        // One copy of the cells for the whole search (its pages follow
        // their own key), chosen among those the deployment has filled.
        let copy = rand::random_range(0..self.0.public_copies());
        let mut parts: BinaryHeap<Part> = cover
            .cells
            .iter()
            .map(|cell| Part {
                pk: public_cell_pk(copy, cover.precision, cell),
                hash: cell.clone(),
                min_km: center.min_km_to_cell(cell),
                start: None,
            })
            .collect();
        let mut found: HashMap<Uuid, (f64, GeoItem)> = HashMap::new();
        let mut reading = PublicReading::default();
        loop {
            // The nearest parts that may still hold an answer, as one wave
            // (the first: every cell of the cover, as many as one search
            // reads at one precision).
            let mut wave = Vec::new();
            while wave.len() < geo::MAX_CELLS {
                let Some(part) = parts.peek() else { break };
                let settled =
                    found.values().filter(|(km, _)| *km <= part.min_km).count() >= query.limit;
                if part.min_km > query.radius_km || settled {
                    parts.clear();
                    break;
                }
                wave.extend(parts.pop());
            }
            if wave.is_empty() {
                break;
            }
            let left = PUBLIC_READ_BUDGET.saturating_sub(reading.items);
            if left == 0 || reading.queries + wave.len() > PUBLIC_QUERIES {
                reading.budget_spent = true;
                break;
            }
            let share = (left / wave.len()).max(1);
            reading.queries += wave.len();
            let read: Vec<(Part, Vec<GeoItem>, Option<Item>)> = futures::stream::iter(wave)
                .map(|part| {
                    let page = page_of(&part).min(share);
                    self.part(part, page)
                })
                .buffer_unordered(PARALLEL)
                .try_collect()
                .await?;
            for (part, entries, more) in read {
                reading.items += entries.len();
                for entry in entries {
                    let at = Coordinates {
                        lat: entry.lat,
                        lng: entry.lng,
                    };
                    let km = center.distance_km(&at);
                    if km <= query.radius_km {
                        found.insert(entry.id, (km, entry));
                    }
                }
                let Some(more) = more else { continue };
                if part.hash.len() < PUBLIC_SORT_PRECISION {
                    // More than a page: its finer parts, nearest first. The
                    // page read every entry before its last (entries sort
                    // by geohash): a part wholly before it is read already,
                    // the part that holds it goes on after it.
                    let last = last_hash(&more);
                    for c in BASE32 {
                        let hash = format!("{}{}", part.hash, char::from(*c));
                        let here = last.get(..hash.len()).unwrap_or_default();
                        let start = match hash.as_str().cmp(here) {
                            Ordering::Less => continue,
                            Ordering::Equal => Some(more.clone()),
                            Ordering::Greater => None,
                        };
                        let min_km = center.min_km_to_cell(&hash);
                        if min_km <= query.radius_km {
                            parts.push(Part {
                                pk: part.pk.clone(),
                                hash,
                                min_km,
                                start,
                            });
                        }
                    }
                } else {
                    // The finest part: its next page.
                    parts.push(Part {
                        start: Some(more),
                        ..part
                    });
                }
            }
        }
        Ok((found.into_values().map(|(_, e)| e).collect(), reading))
    }

    /// Brings a table's `PUBLIC` cells up to date, an operator's upgrade
    /// step (`admin reindex-places`): an entry from before the sort keys
    /// held the point's geohash (`geo::public_sk`) is put under its new key
    /// and its old one deleted; and each entry of a cell's first copy is
    /// written into the other copies where it is missing (tables from
    /// before the copies: `geo::PUBLIC_COPIES`), on the condition that the
    /// first copy still holds it as read, so that a point moved or removed
    /// meanwhile is never brought back. It reads the whole table (a Scan,
    /// never in a request's path), works on `PARALLEL` entries at once, and
    /// is safe to run again, or beside the API.
    pub async fn reindex_public(&self) -> ApiResult<Reindexed> {
        let store = self.0;
        let public = s(format!("GEO#{PUBLIC}#"));
        let items =
            query::scan_all(store, "begins_with(pk, :public)", &[(":public", public)]).await?;
        let entries = items
            .into_iter()
            .map(from_item)
            .collect::<ApiResult<Vec<GeoItem>>>()?;
        let present: HashSet<(String, String)> = entries
            .iter()
            .map(|e| (e.pk.clone(), e.sk.clone()))
            .collect();
        let present = &present;
        let done = futures::stream::iter(entries)
            .filter(|entry| std::future::ready(entries::is_first_copy(&entry.pk)))
            .map(|entry| self.upgrade(entry, present))
            .buffer_unordered(PARALLEL)
            .try_fold(Reindexed::default(), |mut done, one| async move {
                done.rewritten += one.rewritten;
                done.copied += one.copied;
                Ok(done)
            })
            .await?;
        Ok(done)
    }

    /// One first-copy entry brought up to date: its sort key, its copies.
    async fn upgrade(
        &self,
        mut entry: GeoItem,
        present: &HashSet<(String, String)>,
    ) -> ApiResult<Reindexed> {
        let store = self.0;
        let mut done = Reindexed::default();
        if !entries::is_public_sk(&entry.sk) {
            let Some(kind) = PlaceKind::from_tag(&entry.kind) else {
                return Ok(done);
            };
            let at = Coordinates {
                lat: entry.lat,
                lng: entry.lng,
            };
            let old = item::key(entry.pk.clone(), entry.sk.clone());
            entry.sk = entries::public_sk(kind, &at, entry.id);
            let put = tx::put(store.table(), item::to_item(&entry)?, None)?;
            let delete = tx::delete(store.table(), old, None)?;
            tx::transact(store, vec![put, delete], &[]).await?;
            done.rewritten = 1;
        }
        done.copied = self.copy(&entry, present).await?;
        Ok(done)
    }

    /// Writes first-copy `entry` into the copies of its cell that lack it,
    /// if the first copy still holds it as it was read: the copies written.
    async fn copy(&self, entry: &GeoItem, present: &HashSet<(String, String)>) -> ApiResult<usize> {
        let store = self.0;
        let Some(cell) = entry.pk.strip_prefix(&format!("GEO#{PUBLIC}#")) else {
            return Ok(0);
        };
        let Some((precision, cell)) = cell
            .split_once('#')
            .and_then(|(p, c)| Some((p.parse::<usize>().ok()?, c)))
        else {
            return Ok(0);
        };
        let mut actions = vec![still_there(store.table(), entry)?];
        for copy in 1..PUBLIC_COPIES {
            let pk = public_cell_pk(copy, precision, cell);
            if !present.contains(&(pk.clone(), entry.sk.clone())) {
                let item = item::to_item(&GeoItem {
                    pk,
                    ..entry.clone()
                })?;
                actions.push(tx::put(store.table(), item, None)?);
            }
        }
        let copies = actions.len() - 1;
        if copies == 0 {
            return Ok(0);
        }
        match tx::transact(store, actions, &[(0, tx::raced)]).await {
            Ok(()) => Ok(copies),
            // Moved, renamed or removed since the scan: its new entries
            // were written with their copies.
            Err(e) if tx::is_raced(&e) => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// One page (at most `limit` entries) of the receiving points of one
    /// part of a `PUBLIC` cell: the part, its entries, and where the next
    /// page starts if there may be more.
    async fn part(
        &self,
        part: Part,
        limit: usize,
    ) -> ApiResult<(Part, Vec<GeoItem>, Option<Item>)> {
        let store = self.0;
        let prefix = format!("{}#{}", PlaceKind::ReceivingPoint.tag(), part.hash);
        // Other organizations' published points: eventually consistent (half
        // the read units; a point published a moment ago may show on the
        // next search: docs/decisions/nearby-places.md, "Eventually consistent reads").
        let page = store
            .prefix_query(part.pk.clone(), &prefix)
            .consistent_read(false)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .set_exclusive_start_key(part.start.clone())
            .send()
            .await
            .map_err(sdk_error)?;
        let entries = page
            .items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect::<ApiResult<Vec<GeoItem>>>()?;
        Ok((part, entries, page.last_evaluated_key))
    }
}

/// What the search read of the `PUBLIC` cells.
#[derive(Clone, Copy, Debug, Default)]
struct PublicReading {
    items: usize,
    queries: usize,
    /// The budget ran out before the search was sure of its answer.
    budget_spent: bool,
}

/// A part of a `PUBLIC` cell still to read: the cell's partition, the
/// geohash its entries start with, the distance none of them is nearer
/// than, and where its next page starts.
#[derive(Debug)]
struct Part {
    pk: String,
    hash: String,
    min_km: f64,
    start: Option<Item>,
}

// Nearest first in a max-heap: the smaller distance is the greater part.
impl Ord for Part {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .min_km
            .total_cmp(&self.min_km)
            .then_with(|| other.hash.cmp(&self.hash))
    }
}

impl PartialOrd for Part {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Part {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Part {}

/// What `reindex_public` did: entries moved to their geohash sort keys,
/// and copies written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Reindexed {
    pub rewritten: usize,
    pub copied: usize,
}

/// A check that a first-copy entry is still there as it was read.
fn still_there(table: &str, entry: &GeoItem) -> ApiResult<TransactWriteItem> {
    let check = ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(item::key(entry.pk.clone(), entry.sk.clone())))
        .condition_expression("#name = :name AND lat = :lat AND lng = :lng")
        .expression_attribute_names("#name", "name")
        .expression_attribute_values(":name", s(&entry.name))
        .expression_attribute_values(":lat", item::n(entry.lat))
        .expression_attribute_values(":lng", item::n(entry.lng))
        .build()
        .map_err(ApiError::internal)?;
    Ok(TransactWriteItem::builder().condition_check(check).build())
}
