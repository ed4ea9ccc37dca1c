//! Sparse indexes by the hour on `gsi1` (`<KIND>#<yyyy-mm-dd-hh>`): what a
//! sweeper must finish carries one while it waits (an outbox record not
//! yet dispatched, a staged file not yet in place) and drops it when done.

use super::item::{Item, s};
use super::{Store, query_all};
use crate::error::ApiResult;
use crate::model::Timestamp;

/// The items of the index whose hour partition `pk_of` names, written in
/// the last `hours` hours and at least `settle` ago (their `gsi1sk` starts
/// with the time they were written): one Query per hour, in parallel. The
/// index is eventually consistent, which suits a sweeper.
pub(crate) async fn waiting(
    store: &Store,
    pk_of: fn(chrono::DateTime<chrono::Utc>) -> String,
    hours: u32,
    settle: chrono::TimeDelta,
) -> ApiResult<Vec<Item>> {
    let now = crate::clock::now();
    let before = Timestamp::from(now - settle).to_string();
    let queries = (0..hours).map(|back| {
        let hour = now - chrono::TimeDelta::hours(i64::from(back));
        let query = store
            .db
            .query()
            .table_name(store.table())
            .index_name("gsi1")
            .key_condition_expression("gsi1pk = :pk AND gsi1sk < :before")
            .expression_attribute_values(":pk", s(pk_of(hour)))
            .expression_attribute_values(":before", s(before.clone()));
        query_all(query)
    });
    let found = futures::future::try_join_all(queries).await?;
    Ok(found.into_iter().flatten().collect())
}
