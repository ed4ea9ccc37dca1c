//! Daily figures of delivered loads (`ROLLUP#<org>` /
//! `DAY#<yyyy-mm-dd>#S<shard>`: `loads`, `litres`), per organization and
//! UTC day of `created_at`, spread over `DAY_SHARDS` items a day by the
//! load's id. Every write that moves a load into or out of them (a
//! delivery, a volume edit of a delivered load, an archive) adds the
//! difference to its load's item in its own transaction, so a summary
//! reads a few small items per day of its window whatever the number of
//! loads, and two deliveries of one day rarely meet on one item. Items of
//! before the shards (`DAY#<yyyy-mm-dd>`) are read and added in.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};
use chrono::NaiveDate;
use serde::Deserialize;
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::model::surplus::{SurplusRecord, SurplusStatus};
use crate::model::volume::Litres;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item;
use crate::store::engine::item::{get_s, key, n};
use crate::store::engine::keys::{self, DAY_PREFIX};
use crate::store::engine::query::{query_all, query_records};
use crate::store::exactly_once::hourly;

/// One day's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DayFigures {
    pub loads: u64,
    pub litres: Litres,
}

/// A day's counters as a summary reads them (counters never go below
/// zero: a negative one does not decode).
#[derive(Deserialize)]
struct Counters {
    #[serde(default)]
    loads: u64,
    #[serde(default)]
    litres: u64,
}

/// Changes of figures, per organization, day and shard: (loads, litres).
type Deltas = BTreeMap<Day, (i64, i64)>;

/// A rollup item: the organization, the day and its shard.
type Day = (Uuid, NaiveDate, u32);

/// What a load counts for: delivered and not archived.
fn counted(load: &SurplusRecord) -> Option<(Day, i64)> {
    (load.status == SurplusStatus::Delivered && load.archived_at.is_none()).then(|| {
        let day = load.created_at.as_datetime().date_naive();
        let shard = hourly::shard_of(load.id.as_bytes()) % keys::DAY_SHARDS;
        ((load.org_id, day, shard), load.litres().0 as i64)
    })
}

fn deltas<'a>(
    before: impl IntoIterator<Item = &'a SurplusRecord>,
    after: impl IntoIterator<Item = &'a SurplusRecord>,
) -> Deltas {
    let mut deltas = Deltas::new();
    for (loads, sign) in [
        (before.into_iter().collect::<Vec<_>>(), -1),
        (after.into_iter().collect(), 1),
    ] {
        for (day, litres) in loads.into_iter().filter_map(counted) {
            let entry = deltas.entry(day).or_default();
            entry.0 += sign;
            entry.1 += sign * litres;
        }
    }
    deltas.retain(|_, change| *change != (0, 0));
    deltas
}

fn update(table: &str, (org, day, shard): Day, (loads, litres): (i64, i64)) -> ApiResult<Update> {
    Update::builder()
        .table_name(table)
        .set_key(Some(key(
            keys::rollup_pk(org),
            keys::day_rollup_shard_sk(day, shard),
        )))
        .update_expression("ADD loads :loads, litres :litres")
        .expression_attribute_values(":loads", n(loads))
        .expression_attribute_values(":litres", n(litres))
        .build()
        .map_err(ApiError::internal)
}

/// The transaction actions that move the figures from what `before`
/// counted (nothing for a new load) to what `after` counts.
pub(crate) fn changes(
    table: &str,
    before: Option<&SurplusRecord>,
    after: &SurplusRecord,
) -> ApiResult<Vec<TransactWriteItem>> {
    deltas(before, Some(after))
        .into_iter()
        .map(|(day, change)| {
            Ok(TransactWriteItem::builder()
                .update(update(table, day, change)?)
                .build())
        })
        .collect()
}

pub struct Rollups<'a>(pub(in crate::store) &'a Store);

impl Rollups<'_> {
    /// The days of `org` from `from` to `to` (both included) that have
    /// figures: one Query, a few small items per day (its shards).
    pub async fn days(
        &self,
        org: Uuid,
        from: NaiveDate,
        to: NaiveDate,
    ) -> ApiResult<BTreeMap<NaiveDate, DayFigures>> {
        let mut days = BTreeMap::new();
        for item in query_all(self.window(org, from, to)).await? {
            let day = get_s(&item, keys::SK)
                .and_then(|sk| sk.strip_prefix(DAY_PREFIX))
                .and_then(|d| NaiveDate::parse_from_str(d.get(..10)?, "%Y-%m-%d").ok())
                .ok_or_else(|| ApiError::internal("rollup item without a day"))?;
            let figures: &mut DayFigures = days.entry(day).or_default();
            figures.loads += count(&item, "loads")?;
            figures.litres = Litres(figures.litres.0 + count(&item, "litres")?);
        }
        Ok(days)
    }

    /// The figures of `org` from `from` to `to` (both included) added up,
    /// and the items read: the same Query, reading only the counters.
    pub async fn totals(
        &self,
        org: Uuid,
        from: NaiveDate,
        to: NaiveDate,
    ) -> ApiResult<(DayFigures, usize)> {
        let days: Vec<Counters> = query_records(self.window(org, from, to)).await?;
        let total = days
            .iter()
            .fold(DayFigures::default(), |total, day| DayFigures {
                loads: total.loads + day.loads,
                litres: Litres(total.litres.0 + day.litres),
            });
        Ok((total, days.len()))
    }

    /// The day items of `org` from `from` to `to`, both included (every
    /// shard of `to`: they sort after its day's own key).
    fn window(
        &self,
        org: Uuid,
        from: NaiveDate,
        to: NaiveDate,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        let store = self.0;
        store
            .db
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", item::s(keys::rollup_pk(org)))
            .expression_attribute_values(":from", item::s(keys::day_rollup_sk(from)))
            .expression_attribute_values(":to", item::s(format!("{}#~", keys::day_rollup_sk(to))))
            .consistent_read(true)
    }

    /// Adds what `loads` (new to the store, written outside a transaction
    /// by the bulk import) count for.
    pub(crate) async fn add(&self, loads: &[SurplusRecord]) -> ApiResult<()> {
        let store = self.0;
        for (day, change) in deltas(None, loads) {
            let update = update(store.table(), day, change)?;
            store
                .db
                .update_item()
                .table_name(update.table_name())
                .set_key(Some(update.key().clone()))
                .update_expression(update.update_expression())
                .set_expression_attribute_values(update.expression_attribute_values().cloned())
                .send()
                .await
                .map_err(sdk_error)?;
        }
        Ok(())
    }
}

/// A counter that never went below zero.
fn count(item: &item::Item, name: &str) -> ApiResult<u64> {
    let value = item::get_i64(item, name).unwrap_or(0);
    u64::try_from(value)
        .map_err(|_| ApiError::internal(format!("rollup {name} below zero: {value}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Timestamp;
    use crate::model::surplus::CreateSurplus;

    fn load(created: &str, m3: f64) -> SurplusRecord {
        let body: CreateSurplus = serde_json::from_value(serde_json::json!({
            "site_id": Uuid::nil(), "volume_m3": m3
        }))
        .unwrap();
        let at: Timestamp = serde_json::from_value(serde_json::json!(created)).unwrap();
        body.validate(Uuid::nil(), at).unwrap()
    }

    #[test]
    fn only_delivered_loads_move_the_figures() {
        let new = load("2026-03-01T23:59:59.999Z", 2.5);
        assert!(deltas(None, Some(&new)).is_empty());
        let mut delivered = new.clone();
        delivered.status = SurplusStatus::Delivered;
        let date = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        // The load's own shard, every time.
        let shard = hourly::shard_of(new.id.as_bytes()) % keys::DAY_SHARDS;
        let day = (Uuid::nil(), date, shard);
        assert_eq!(
            deltas(Some(&new), Some(&delivered)),
            Deltas::from([(day, (1, 2500))])
        );
        let mut edited = delivered.clone();
        edited.volume_m3 = 3.0;
        assert_eq!(
            deltas(Some(&delivered), Some(&edited)),
            Deltas::from([(day, (0, 500))])
        );
        let mut archived = edited.clone();
        archived.archived_at = Some(Timestamp::now());
        assert_eq!(
            deltas(Some(&edited), Some(&archived)),
            Deltas::from([(day, (-1, -3000))])
        );
        assert!(deltas(Some(&edited), Some(&edited)).is_empty());
    }

    #[test]
    fn loads_of_a_day_spread_over_its_shards() {
        let shards: std::collections::BTreeSet<u32> = (0..256)
            .map(|_| {
                let mut delivered = load("2026-03-01T12:00:00Z", 1.0);
                delivered.status = SurplusStatus::Delivered;
                counted(&delivered).unwrap().0.2
            })
            .collect();
        assert_eq!(shards.len(), keys::DAY_SHARDS as usize, "{shards:?}");
        assert_eq!(
            keys::day_rollup_shard_sk(NaiveDate::from_ymd_opt(2026, 3, 1).unwrap(), 7),
            "DAY#2026-03-01#S7"
        );
    }
}
