//! Sparse indexes by the hour on `gsi1` (`<KIND>#<yyyy-mm-dd-hh>#SHARD<nn>`):
//! what a sweeper must finish carries one while it waits (an outbox record
//! not yet dispatched, a staged file not yet in place) and drops it when
//! done. Each hour is spread over `HOUR_SHARDS` partitions by the item's
//! own name (`shard_of`), so that no one partition takes every write of
//! the platform's hour; the sweeper reads them all, and the hour's one
//! partition of before the shards (`<KIND>#<yyyy-mm-dd-hh>`) beside them.

use futures::{StreamExt, TryStreamExt};

use crate::error::ApiResult;
use crate::model::Timestamp;
use crate::store::engine::client::Store;
use crate::store::engine::item::{Item, s};
use crate::store::engine::keys::HOUR_SHARDS;
use crate::store::engine::query::query_all;

/// The shard of the hour an item named `name` (its id, its path) is
/// indexed under: FNV-1a of the name, modulo `HOUR_SHARDS`.
pub(crate) fn shard_of(name: &[u8]) -> u32 {
    let hash = name.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    });
    u32::try_from(hash % u64::from(HOUR_SHARDS)).unwrap_or(0)
}

/// Queries of the sweep at once, at most.
const AT_ONCE: usize = 32;

/// The items of the index whose hour partitions `pk_of` names (each
/// shard's, and the hour's of before the shards), written in the last
/// `hours` hours and at least `settle` ago (their `gsi1sk` starts with
/// the time they were written): one Query per partition, `AT_ONCE` at a
/// time. The index is eventually consistent, which suits a sweeper.
pub(crate) async fn waiting(
    store: &Store,
    pk_of: fn(chrono::DateTime<chrono::Utc>, Option<u32>) -> String,
    hours: u32,
    settle: chrono::TimeDelta,
) -> ApiResult<Vec<Item>> {
    let now = crate::clock::now();
    let before = Timestamp::from(now - settle).to_string();
    let shards = std::iter::once(None).chain((0..HOUR_SHARDS).map(Some));
    let partitions: Vec<String> = (0..hours)
        .flat_map(|back| {
            let hour = now - chrono::TimeDelta::hours(i64::from(back));
            shards.clone().map(move |shard| pk_of(hour, shard))
        })
        .collect();
    let queries = partitions.into_iter().map(|pk| {
        let query = store
            .db
            .query()
            .table_name(store.table())
            .index_name("gsi1")
            .key_condition_expression("gsi1pk = :pk AND gsi1sk < :before")
            .expression_attribute_values(":pk", s(pk))
            .expression_attribute_values(":before", s(before.clone()));
        query_all(query)
    });
    let found: Vec<Vec<Item>> = futures::stream::iter(queries)
        .buffer_unordered(AT_ONCE)
        .try_collect()
        .await?;
    Ok(found.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_spread_over_every_shard() {
        let mut seen = [0u32; HOUR_SHARDS as usize];
        for n in 0..1600 {
            seen[shard_of(format!("waybills/org/{n}.png").as_bytes()) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (50..=150).contains(&n)), "{seen:?}");
        assert_eq!(shard_of(b"same"), shard_of(b"same"));
    }
}
