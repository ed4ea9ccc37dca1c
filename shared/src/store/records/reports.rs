//! Report reads: the summary from the daily figures (`rollups`), the
//! month-end rows from the delivered-loads index (`gsi1`, oldest first)
//! with the names of their sites, receiving points and trucks, and the
//! loads billed to an organization from the billing index (`gsi3`).

use std::collections::HashMap;

use uuid::Uuid;

use crate::error::ApiResult;
use crate::model::Timestamp;
use crate::model::receiving_point::ReceivingPointRecord;
use crate::model::report::{LoadRow, RowNames, Window};
use crate::model::site::SiteRecord;
use crate::model::surplus::{StatusGroup, SurplusRecord};
use crate::model::truck::TruckRecord;
use crate::model::volume::Litres;
use crate::store::engine::batch::get_all;
use crate::store::engine::client::Store;
use crate::store::engine::item::{Item, from_item, get_s, s};
use crate::store::engine::keys;
use crate::store::engine::query::query_all;
use crate::store::records::org_records::{record_key, sk};
use crate::store::records::surpluses::{Drops, List, Page, Position};

pub struct Reports<'a>(pub(in crate::store) &'a Store);

impl Reports<'_> {
    /// Delivered loads of `org` and the litres they hold, created within
    /// `window`: one item read per day with figures.
    pub async fn delivered(&self, org: Uuid, window: Window) -> ApiResult<(u64, Litres)> {
        let (total, days) = self.0.rollups().totals(org, window.from, window.to).await?;
        tracing::info!(items_read = days, "daily figures read");
        Ok((total.loads, total.litres))
    }

    /// One page of the delivered loads of `org` created within `window`,
    /// oldest first.
    pub async fn delivered_page(
        &self,
        org: Uuid,
        window: Window,
        start: Option<Position>,
        limit: usize,
    ) -> ApiResult<Page> {
        let delivered = keys::all_shards()
            .map(|shard| keys::surplus_group_pk(org, StatusGroup::Delivered.as_str(), shard))
            .collect();
        List::oldest_first("gsi1", delivered, window.bounds())
            .page(self.0, start, limit, Drops::Nothing, |query, _| query)
            .await
    }

    /// A Query of `index` partition `pk` whose sort keys (timestamps first)
    /// fall within `window`, oldest first.
    fn window_query(
        &self,
        index: &str,
        pk: String,
        window: Window,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        let store = self.0;
        let (low, high) = window.bounds();
        store
            .db
            .query()
            .table_name(store.table())
            .index_name(index)
            .key_condition_expression(format!(
                "{index}pk = :pk AND {index}sk BETWEEN :low AND :high"
            ))
            .expression_attribute_values(":pk", s(pk))
            .expression_attribute_values(":low", s(low))
            .expression_attribute_values(":high", s(high))
    }

    /// The month-end rows of `loads`: their site, receiving point and
    /// truck names read in one batch (archived and retired ones included).
    pub async fn rows(&self, loads: &[SurplusRecord]) -> ApiResult<Vec<LoadRow>> {
        // Each record in the partition its id names; its sort key (its
        // kind and id) says which it is.
        let mut wanted: HashMap<String, Item> = HashMap::new();
        let mut want = |found: Item| {
            if let Some(sk) = get_s(&found, keys::SK) {
                wanted.insert(sk.to_owned(), found);
            }
        };
        for load in loads {
            want(record_key::<SiteRecord>(load.org_id, load.site_id));
            if let (Some(point), Some(owner)) = (load.to_receiving_point_id, load.to_org_id) {
                want(record_key::<ReceivingPointRecord>(owner, point));
            }
            if let (Some(truck), Some(owner)) = (load.truck_id, load.truck_org_id) {
                want(record_key::<TruckRecord>(owner, truck));
            }
        }
        let names: HashMap<String, String> = get_all(self.0, wanted.into_values().collect())
            .await?
            .into_iter()
            .filter_map(|item| {
                let name = get_s(&item, "name")
                    .or_else(|| get_s(&item, "license"))?
                    .to_owned();
                Some((get_s(&item, keys::SK)?.to_owned(), name))
            })
            .collect();
        let name = |sk: String| -> Option<&str> { names.get(&sk).map(String::as_str) };
        Ok(loads
            .iter()
            .map(|load| {
                let license = load.truck_id.and_then(|t| name(sk::<TruckRecord>(t)));
                LoadRow::new(
                    load,
                    RowNames {
                        site: name(sk::<SiteRecord>(load.site_id)),
                        receiving_point: load
                            .to_receiving_point_id
                            .and_then(|p| name(sk::<ReceivingPointRecord>(p))),
                        truck_license: license,
                    },
                )
            })
            .collect())
    }

    /// One page of the loads whose additive `org` is billed for, billed
    /// within `window`, oldest first (the billing index, `gsi3`).
    pub async fn billed_page(
        &self,
        org: Uuid,
        window: Window,
        start: Option<Position>,
        limit: usize,
    ) -> ApiResult<Page> {
        List::oldest_first("gsi3", vec![keys::billing_pk(org)], window.bounds())
            .page(self.0, start, limit, Drops::Nothing, |query, _| query)
            .await
    }

    /// The loads whose additive `org` is billed for, billed within
    /// `window`: (billing time, litres) each.
    pub async fn billed(&self, org: Uuid, window: Window) -> ApiResult<Vec<(Timestamp, Litres)>> {
        let query = self
            .window_query("gsi3", keys::billing_pk(org), window)
            .projection_expression("gsi3sk, volume_m3");
        query_all(query)
            .await?
            .into_iter()
            .map(|item| {
                #[derive(serde::Deserialize)]
                struct Billed {
                    gsi3sk: String,
                    volume_m3: f64,
                }
                let billed: Billed = from_item(item)?;
                let at = billed.gsi3sk.split('#').next().unwrap_or_default();
                let at: Timestamp = serde_json::from_value(serde_json::Value::from(at))
                    .map_err(crate::error::ApiError::internal)?;
                Ok((at, Litres::from_m3(billed.volume_m3)))
            })
            .collect()
    }
}
