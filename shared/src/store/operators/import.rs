//! Bulk loading for operators and benchmarks: many records written with
//! BatchWriteItem as the same items the store's own writes produce, without
//! the per-record checks and transactions of the API path.

use crate::error::ApiResult;
use crate::model::surplus::SurplusRecord;
use crate::store::engine::batch::put_all;
use crate::store::records::geo;
use crate::store::records::org_records::{Record, Records, item};
use crate::store::records::surpluses::Surpluses;

impl Surpluses<'_> {
    /// Writes loads as created, 25 items a call, each with its first log
    /// entry ("created as" its status) kept on it as the API keeps it, then
    /// adds the delivered ones to their days' figures. The caller vouches
    /// for their sites, destinations and trucks.
    pub async fn import(&self, loads: &[SurplusRecord]) -> ApiResult<()> {
        let mut items = Vec::with_capacity(loads.len());
        for load in loads {
            let mut load = load.clone();
            load.keep_created_entry();
            items.push(item(&load)?);
        }
        put_all(self.0, items).await?;
        self.0.rollups().add(loads).await
    }
}

impl<R: Record> Records<'_, R> {
    /// Writes records as created, with their geo index entries, 25 items a
    /// call. The caller vouches for their parents (a receiving point's
    /// site).
    pub async fn import(&self, records: &[R]) -> ApiResult<()> {
        let mut items = Vec::with_capacity(records.len() * 4);
        for record in records {
            items.push(item(record)?);
            items.extend(geo::items(&record.geo())?);
        }
        put_all(self.store, items).await
    }
}
