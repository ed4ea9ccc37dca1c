//! Keyset pages of an organization's loads over three keys, each spread
//! like the loads over the organization's shards (plus the key of the
//! loads from before the spread: `keys::all_shards`): its partitions (all
//! loads), `gsi1` (one status group) and `gsi2` (one origin site). A page
//! reads every partition of its key at once and merges them in order
//! (`read_page`), so it is one round trip however the loads spread.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use uuid::Uuid;

use crate::error::{ApiResult, codes};
use crate::model::surplus::{StatusGroup, SurplusRecord};
use crate::store::engine::calls::CallCounter;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{Item, from_item, get_s, s};
use crate::store::engine::keys::{self, SURPLUS_PREFIX};
use crate::store::engine::query::project;
use crate::store::records::org_records::Record;

use super::Surpluses;

/// Where a keyset page starts: the key attributes of the last row shown.
pub type Position = BTreeMap<String, String>;

/// A page of loads and where the next one starts.
pub struct Page {
    pub rows: Vec<SurplusRecord>,
    pub next: Option<Position>,
    /// The index the list was read from (a position names its keys).
    index: Option<&'static str>,
}

impl Page {
    /// The page cut to its first `rows` (at least one, so a list always
    /// moves on), the next page starting after the last one kept: for an
    /// answer that holds fewer rows than were read (`payload::fitting`).
    pub fn cut(&mut self, rows: usize) {
        let rows = rows.max(1);
        if rows < self.rows.len() {
            self.rows.truncate(rows);
            self.next = self.rows.last().map(|last| position(last, self.index));
        }
    }
}

impl Surpluses<'_> {
    /// One page of the organization's loads, newest first: all of them
    /// (its partitions), one status group (`gsi1`) or one origin site
    /// (`gsi2`, filtered by the group when one is given). Reads until the
    /// page is full or the loads end, so a filter never shortens a page.
    pub async fn list(
        &self,
        org: Uuid,
        group: Option<StatusGroup>,
        site: Option<Uuid>,
        start: Option<Position>,
        limit: usize,
    ) -> ApiResult<Page> {
        let store = self.0;
        let (list, drops) = match (group, site) {
            (group, Some(site)) => (
                List::newest_first(Some("gsi2"), |shard| {
                    keys::surplus_site_pk(org, site, shard)
                }),
                if group.is_some() {
                    Drops::Many
                } else {
                    Drops::Nothing
                },
            ),
            (Some(group), None) => (
                List::newest_first(Some("gsi1"), |shard| {
                    keys::surplus_group_pk(org, group.as_str(), shard)
                }),
                Drops::Nothing,
            ),
            (None, None) => (
                List::newest_first(None, |shard| keys::org_shard_pk(org, shard)),
                Drops::Few,
            ),
        };
        list.page(store, start, limit, drops, |query, shard| {
            match (group, site) {
                // A site's loads of one group: the group's key of the same
                // shard (a load's keys all follow its id).
                (Some(group), Some(_)) => query
                    .filter_expression("gsi1pk = :group")
                    .expression_attribute_values(
                        ":group",
                        s(keys::surplus_group_pk(org, group.as_str(), shard)),
                    ),
                (None, None) => query
                    .filter_expression("attribute_not_exists(archived_at)")
                    .consistent_read(true),
                _ => query,
            }
        })
        .await
    }
}

/// A keyset list of loads: the partitions of one key (the table's or an
/// index's), each ordered by the key's sort attribute, read one way.
pub(in crate::store) struct List {
    /// The index (`None`: the table).
    index: Option<&'static str>,
    /// Each partition's key value, in `keys::all_shards` order.
    partitions: Vec<String>,
    /// Oldest first within `window` (low, high), or newest first.
    window: Option<(String, String)>,
}

impl List {
    /// Newest first, over the partitions `pk` names for each shard.
    pub(in crate::store) fn newest_first(
        index: Option<&'static str>,
        pk: impl Fn(Option<u32>) -> String,
    ) -> Self {
        Self {
            index,
            partitions: keys::all_shards().map(pk).collect(),
            window: None,
        }
    }

    /// Oldest first within `(low, high)` of the sort attribute, over one
    /// partition of `index` (not spread) or those `pk` names for each
    /// shard.
    pub(in crate::store) fn oldest_first(
        index: &'static str,
        partitions: Vec<String>,
        window: (String, String),
    ) -> Self {
        Self {
            index: Some(index),
            partitions,
            window: Some(window),
        }
    }

    /// One page from `start` on: each partition's query with what `more`
    /// adds given its shard (a filter), read and merged by `read_page`.
    pub(in crate::store) async fn page(
        &self,
        store: &Store,
        start: Option<Position>,
        limit: usize,
        drops: Drops,
        more: impl Fn(QueryFluentBuilder, Option<u32>) -> QueryFluentBuilder,
    ) -> ApiResult<Page> {
        let from = self.start(start.as_ref())?;
        let queries = self.queries(store, from.as_deref(), more);
        read_page(self, queries, from, limit, drops).await
    }

    fn order(&self) -> String {
        match self.index {
            Some(index) => format!("{index}sk"),
            None => keys::SK.to_owned(),
        }
    }

    fn descending(&self) -> bool {
        self.window.is_none()
    }

    /// The sort attribute's value of the row a page starts after; 422
    /// `invalid_cursor` when the position has none.
    fn start(&self, start: Option<&Position>) -> ApiResult<Option<String>> {
        start
            .map(|position| {
                position.get(&self.order()).cloned().ok_or_else(|| {
                    codes::INVALID_CURSOR.with(
                        "cursor: is not a cursor of this list; pass meta.next_cursor unchanged",
                    )
                })
            })
            .transpose()
    }

    /// A query of each partition from `from` on (the row there may be
    /// included: `read_page` drops it), with what `more` adds (a filter),
    /// given the partition's shard.
    fn queries(
        &self,
        store: &Store,
        from: Option<&str>,
        more: impl Fn(QueryFluentBuilder, Option<u32>) -> QueryFluentBuilder,
    ) -> Vec<QueryFluentBuilder> {
        let (pk, order) = match self.index {
            Some(index) => (format!("{index}pk"), self.order()),
            None => (keys::PK.to_owned(), keys::SK.to_owned()),
        };
        let range = match (&self.window, from, self.index) {
            (Some(_), _, _) => format!("{order} BETWEEN :low AND :high"),
            (None, Some(_), Some(_)) => format!("{order} < :high"),
            (None, Some(_), None) => format!("{order} BETWEEN :low AND :high"),
            (None, None, Some(_)) => String::new(),
            (None, None, None) => format!("begins_with({order}, :low)"),
        };
        let (low, high) = match (&self.window, from) {
            (Some((low, high)), from) => (Some(from.unwrap_or(low).to_owned()), Some(high.clone())),
            (None, from) => (
                self.index.is_none().then(|| SURPLUS_PREFIX.to_owned()),
                from.map(str::to_owned),
            ),
        };
        self.partitions
            .iter()
            .zip(keys::all_shards())
            .map(|(partition, shard)| {
                let mut query = store.db.query().table_name(store.table());
                if let Some(index) = self.index {
                    query = query.index_name(index);
                }
                let condition = match range.as_str() {
                    "" => format!("{pk} = :pk"),
                    range => format!("{pk} = :pk AND {range}"),
                };
                query = query
                    .key_condition_expression(condition)
                    .expression_attribute_values(":pk", s(partition))
                    .scan_index_forward(!self.descending());
                if let Some(low) = low.as_ref().filter(|_| range.contains(":low")) {
                    query = query.expression_attribute_values(":low", s(low));
                }
                if let Some(high) = high.as_ref().filter(|_| range.contains(":high")) {
                    query = query.expression_attribute_values(":high", s(high));
                }
                more(query, shard)
            })
            .collect()
    }
}

/// What a page query's filter drops of the items it reads, which sets how
/// far the query reads ahead: DynamoDB applies `Limit` before the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::store) enum Drops {
    /// No filter: read exactly what the page needs.
    Nothing,
    /// Archived loads in the organization's partition: rare, so read what
    /// the page needs and read again only on the page that had some.
    Few,
    /// Another status group's loads of a site: read at least 100 at a
    /// time (`MANY_AHEAD`, over all the partitions).
    Many,
}

/// What a read whose filter drops many rows reads at least, a round.
const MANY_AHEAD: usize = 100;

/// One partition's read so far: where it goes on, how far it got in the
/// list's order, whether it ended.
struct Partition {
    query: QueryFluentBuilder,
    from: Option<Item>,
    reached: Option<String>,
    ended: bool,
}

/// One keyset page of `list` from its partitions' `queries` (from `start`
/// on, the row there dropped): reads them at once, each for its share of
/// the page and some more (the loads spread evenly over the shards), then
/// again only those whose unread rows could still belong to the page, until
/// `limit` rows and one more are known in order, or the loads end. So a
/// filter (`drops`) never shortens a page, and a page is one round trip
/// unless a partition held more than its share. The next page starts
/// after the last row shown, in the list's key.
async fn read_page(
    list: &List,
    queries: Vec<QueryFluentBuilder>,
    start: Option<String>,
    limit: usize,
    drops: Drops,
) -> ApiResult<Page> {
    let order = list.order();
    let descending = list.descending();
    // Whether sort value `a` comes before `b` in the list's order.
    let before = |a: &str, b: &str| if descending { a > b } else { a < b };
    let wanted = limit + 1;
    // The partitions the rows spread over (the shards; the partition of
    // the loads from before them is read beside, for its few).
    let spread = if queries.len() > 1 {
        keys::RECORD_SHARDS as usize
    } else {
        1
    };
    // A shard's share of the page, and a margin of about one and a half
    // standard deviations of how the page's rows fall over the shards: a
    // page of 100 reads 140 rows, and one in about 25 a second time.
    let share = match spread {
        1 => wanted,
        spread => {
            let share = wanted.div_ceil(spread);
            share + (3 * share.isqrt()).div_ceil(2) + 1
        }
    };
    // A read whose filter drops many rows reads ahead: 100 rows a round
    // over all the partitions.
    let ahead = match drops {
        Drops::Nothing | Drops::Few => 1,
        Drops::Many => MANY_AHEAD.div_ceil(spread),
    };
    let mut partitions: Vec<Partition> = queries
        .into_iter()
        .map(|query| Partition {
            query: project_with::<SurplusRecord>(query, &order),
            from: None,
            reached: None,
            ended: false,
        })
        .collect();
    let mut rows: Vec<(String, SurplusRecord)> = Vec::new();
    loop {
        // The last row the page needs, once known: a partition that read
        // past it has nothing more for this page.
        let last = rows.get(wanted - 1).map(|(at, _)| at.clone());
        let open: Vec<usize> = (0..partitions.len())
            .filter(|&i| {
                let partition = &partitions[i];
                !partition.ended
                    && match (&last, &partition.reached) {
                        (Some(last), Some(reached)) => before(reached, last),
                        _ => true,
                    }
            })
            .collect();
        if open.is_empty() {
            break;
        }
        let reads = open.iter().map(|&i| {
            let partition = &partitions[i];
            // Its share first; then what it could still add: the page
            // less the rows known to come before where it got.
            let read = match &partition.reached {
                None => share,
                Some(reached) => {
                    let known = rows.iter().filter(|(at, _)| before(at, reached)).count();
                    wanted.saturating_sub(known).max(1)
                }
            };
            let read = read.max(ahead);
            partition
                .query
                .clone()
                .limit(i32::try_from(read).unwrap_or(i32::MAX))
                .set_exclusive_start_key(partition.from.clone())
                .send()
        });
        let pages = CallCounter::together(futures::future::try_join_all(reads))
            .await
            .map_err(sdk_error)?;
        for (i, page) in open.into_iter().zip(pages) {
            for found in page.items.unwrap_or_default() {
                let at = get_s(&found, &order).unwrap_or_default().to_owned();
                if start.as_deref() != Some(at.as_str()) {
                    rows.push((at, from_item(found)?));
                }
            }
            let partition = &mut partitions[i];
            partition.reached = page
                .last_evaluated_key
                .as_ref()
                .and_then(|key| get_s(key, &order))
                .map(str::to_owned);
            partition.ended = page.last_evaluated_key.is_none();
            partition.from = page.last_evaluated_key;
        }
        rows.sort_by(|(a, _), (b, _)| if descending { b.cmp(a) } else { a.cmp(b) });
        rows.truncate(wanted);
    }
    let mut rows: Vec<SurplusRecord> = rows.into_iter().map(|(_, row)| row).collect();
    let next = if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(|last| position(last, list.index))
    } else {
        None
    };
    Ok(Page {
        rows,
        next,
        index: list.index,
    })
}

/// `project::<R>(query)`, with the list's sort attribute `order` too.
fn project_with<R: serde::de::DeserializeOwned>(
    query: QueryFluentBuilder,
    order: &str,
) -> QueryFluentBuilder {
    let query = project::<R>(query);
    match query.get_projection_expression().clone() {
        Some(projection) => query
            .projection_expression(format!("{projection}, #order"))
            .expression_attribute_names("#order", order),
        None => query,
    }
}

/// The key attributes of `load` in the list's key (`index`: none for the
/// partition).
fn position(load: &SurplusRecord, index: Option<&str>) -> Position {
    let mut keys = Position::from([
        (keys::PK.to_owned(), keys::record_pk(load.org_id, load.id)),
        (keys::SK.to_owned(), keys::surplus_sk(load.id)),
    ]);
    if let Some(index) = index {
        for (name, value) in load.index() {
            if name.starts_with(index) {
                keys.insert(name.to_owned(), value);
            }
        }
    }
    keys
}
