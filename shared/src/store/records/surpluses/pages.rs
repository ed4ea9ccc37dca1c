//! Keyset pages of an organization's loads over three keys: its
//! partition (all loads), `gsi1` (one status group) and `gsi2` (one
//! origin site).

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::error::ApiResult;
use crate::model::surplus::{StatusGroup, SurplusRecord};
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{Item, from_item, s};
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
}

impl Surpluses<'_> {
    /// One page of the organization's loads, newest first: all of them
    /// (its partition), one status group (`gsi1`) or one origin site
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
        let mut query = store
            .db
            .query()
            .table_name(store.table())
            .scan_index_forward(false);
        let (index, drops) = match (group, site) {
            (group, Some(site)) => {
                query = query
                    .index_name("gsi2")
                    .key_condition_expression("gsi2pk = :pk")
                    .expression_attribute_values(":pk", s(keys::surplus_site_pk(org, site)));
                if let Some(group) = group {
                    query = query
                        .filter_expression("gsi1pk = :group")
                        .expression_attribute_values(
                            ":group",
                            s(keys::surplus_group_pk(org, group.as_str())),
                        );
                }
                let drops = if group.is_some() {
                    Drops::Many
                } else {
                    Drops::Nothing
                };
                (Some("gsi2"), drops)
            }
            (Some(group), None) => {
                query = query
                    .index_name("gsi1")
                    .key_condition_expression("gsi1pk = :pk")
                    .expression_attribute_values(
                        ":pk",
                        s(keys::surplus_group_pk(org, group.as_str())),
                    );
                (Some("gsi1"), Drops::Nothing)
            }
            (None, None) => {
                query = query
                    .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                    .filter_expression("attribute_not_exists(archived_at)")
                    .expression_attribute_values(":pk", s(keys::org_pk(org)))
                    .expression_attribute_values(":prefix", s(SURPLUS_PREFIX))
                    .consistent_read(true);
                (None, Drops::Few)
            }
        };
        read_page(query, start, limit, drops, index).await
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
    /// Another status group's loads of a site: read at least 100 at a time.
    Many,
}

/// One keyset page of loads from `query` (newest or oldest first, as the
/// query says): reads until `limit` rows and one more are found or the
/// loads end, so a filter (`drops`) never shortens a page; the next page
/// starts after the last row shown, in the key of `index` (none for the
/// partition).
pub(in crate::store) async fn read_page(
    query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
    start: Option<Position>,
    limit: usize,
    drops: Drops,
    index: Option<&str>,
) -> ApiResult<Page> {
    let query = project::<SurplusRecord>(query);
    let mut rows: Vec<SurplusRecord> = Vec::new();
    let mut from: Option<Item> = start.map(|p| p.into_iter().map(|(k, v)| (k, s(v))).collect());
    loop {
        let wanted = limit + 1 - rows.len();
        let read = match drops {
            Drops::Nothing | Drops::Few => wanted,
            Drops::Many => wanted.max(100),
        };
        let page = query
            .clone()
            .limit(i32::try_from(read).unwrap_or(i32::MAX))
            .set_exclusive_start_key(from.take())
            .send()
            .await
            .map_err(sdk_error)?;
        for found in page.items.unwrap_or_default() {
            if rows.len() > limit {
                break;
            }
            rows.push(from_item(found)?);
        }
        match page.last_evaluated_key {
            Some(last) if rows.len() <= limit => from = Some(last),
            _ => break,
        }
    }
    let next = if rows.len() > limit {
        rows.truncate(limit);
        rows.last().map(|last| position(last, index))
    } else {
        None
    };
    Ok(Page { rows, next })
}

/// The key attributes of `load` in the list's key (`index`: none for the
/// partition).
fn position(load: &SurplusRecord, index: Option<&str>) -> Position {
    let mut keys = Position::from([
        (keys::PK.to_owned(), keys::org_pk(load.org_id)),
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
