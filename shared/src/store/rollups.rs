//! Daily figures of delivered loads (`ROLLUP#<org>` / `DAY#<yyyy-mm-dd>`:
//! `loads`, `litres`), per organization and UTC day of `created_at`. Every
//! write that moves a load into or out of them (a delivery, a volume edit
//! of a delivered load, an archive) adds the difference in its own
//! transaction, so a summary reads one item per day of its window whatever
//! the number of loads.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};
use chrono::NaiveDate;
use serde::Deserialize;
use uuid::Uuid;

use super::item::{get_s, key, n};
use super::keys::{self, DAY_PREFIX};
use super::{Store, query_all, query_records, sdk_error};
use crate::error::{ApiError, ApiResult};
use crate::model::surplus::{SurplusRecord, SurplusStatus};
use crate::model::volume::Litres;

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

/// Changes of figures, per organization and day: (loads, litres).
type Deltas = BTreeMap<(Uuid, NaiveDate), (i64, i64)>;

/// What a load counts for: delivered and not archived.
fn counted(load: &SurplusRecord) -> Option<((Uuid, NaiveDate), i64)> {
    (load.status == SurplusStatus::Delivered && load.archived_at.is_none()).then(|| {
        let day = load.created_at.as_datetime().date_naive();
        ((load.org_id, day), load.litres().0 as i64)
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

fn update(
    table: &str,
    (org, day): (Uuid, NaiveDate),
    (loads, litres): (i64, i64),
) -> ApiResult<Update> {
    Update::builder()
        .table_name(table)
        .set_key(Some(key(keys::rollup_pk(org), keys::day_rollup_sk(day))))
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

pub struct Rollups<'a>(pub(super) &'a Store);

impl Rollups<'_> {
    /// The days of `org` from `from` to `to` (both included) that have
    /// figures: one Query, one small item per day.
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
                .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
                .ok_or_else(|| ApiError::internal("rollup item without a day"))?;
            let figures = DayFigures {
                loads: count(&item, "loads")?,
                litres: Litres(count(&item, "litres")?),
            };
            days.insert(day, figures);
        }
        Ok(days)
    }

    /// The figures of `org` from `from` to `to` (both included) added up,
    /// and the days read: the same Query, reading only the counters.
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

    /// The day items of `org` from `from` to `to`, both included.
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
            .expression_attribute_values(":pk", super::item::s(keys::rollup_pk(org)))
            .expression_attribute_values(":from", super::item::s(keys::day_rollup_sk(from)))
            .expression_attribute_values(":to", super::item::s(keys::day_rollup_sk(to)))
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
fn count(item: &super::item::Item, name: &str) -> ApiResult<u64> {
    let value = super::item::get_i64(item, name).unwrap_or(0);
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
        let day = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
        assert_eq!(
            deltas(Some(&new), Some(&delivered)),
            Deltas::from([((Uuid::nil(), day), (1, 2500))])
        );
        let mut edited = delivered.clone();
        edited.volume_m3 = 3.0;
        assert_eq!(
            deltas(Some(&delivered), Some(&edited)),
            Deltas::from([((Uuid::nil(), day), (0, 500))])
        );
        let mut archived = edited.clone();
        archived.archived_at = Some(Timestamp::now());
        assert_eq!(
            deltas(Some(&edited), Some(&archived)),
            Deltas::from([((Uuid::nil(), day), (-1, -3000))])
        );
        assert!(deltas(Some(&edited), Some(&edited)).is_empty());
    }
}
