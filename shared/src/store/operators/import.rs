//! Bulk loading for operators and benchmarks: many records written with
//! BatchWriteItem as the same items the store's own writes produce, without
//! the per-record checks and transactions of the API path.

use crate::error::ApiResult;
use crate::model::surplus::{LogEntry, SurplusRecord};
use crate::store::engine::batch::put_all;
use crate::store::records::geo;
use crate::store::records::org_records::{Record, Records, item};
use crate::store::records::surpluses::{Surpluses, log_record};

impl Surpluses<'_> {
    /// Writes loads as created (each with its first log entry), 25 items a
    /// call, then adds the delivered ones to their days' figures. The
    /// caller vouches for their sites, destinations and trucks.
    pub async fn import(&self, loads: &[SurplusRecord]) -> ApiResult<()> {
        let mut items = Vec::with_capacity(loads.len() * 2);
        for load in loads {
            items.push(item(load)?);
            items.push(log_record(
                load,
                &LogEntry::new(None, load.status, load.created_at),
            )?);
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
