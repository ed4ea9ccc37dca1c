//! Rate-limit counters: one item per API key holding one counter attribute
//! per fixed window (`c<window number>`). A request costs one conditional
//! UpdateItem and no read: it adds one to this window's counter unless the
//! counter reached the cap, returns the previous window's counter with it,
//! and drops the counter two windows back. Stale counters (after an idle
//! gap) are removed by a rare second write; TTL removes idle items.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use uuid::Uuid;

use super::item::{Item, get_u64, key, n};
use super::keys::{self, RATE_SK};
use super::{Store, sdk_error};
use crate::error::{ApiError, ApiResult};

pub struct RateLimits<'a>(pub(super) &'a Store);

/// Outcome of counting one request in window `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// Counted: `current` includes this request.
    Admitted { current: u32, previous: u32 },
    /// The window already holds `cap` requests; nothing was written.
    Full { previous: u32 },
}

fn counter(window: u64) -> String {
    format!("c{window}")
}

/// Counters of windows older than the previous one.
fn stale(item: &Item, window: u64) -> Vec<String> {
    item.keys()
        .filter(|name| {
            name.strip_prefix('c')
                .and_then(|w| w.parse::<u64>().ok())
                .is_some_and(|w| w + 1 < window)
        })
        .cloned()
        .collect()
}

impl RateLimits<'_> {
    /// Counts one request of `key_id` in fixed window number `window` unless
    /// that window already holds `cap`. `expires_at` (Unix seconds) is the
    /// item's TTL.
    pub async fn count(
        &self,
        key_id: Uuid,
        window: u64,
        cap: u32,
        expires_at: u64,
    ) -> ApiResult<Counted> {
        let store = self.0;
        let result = store
            .db
            .update_item()
            .table_name(store.table())
            .set_key(Some(key(keys::rate_pk(key_id), RATE_SK)))
            .update_expression("SET #ttl = :ttl ADD #now :one REMOVE #old")
            .condition_expression("attribute_not_exists(#now) OR #now < :cap")
            .expression_attribute_names("#now", counter(window))
            .expression_attribute_names("#old", counter(window.saturating_sub(2)))
            .expression_attribute_names("#ttl", keys::TTL)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":cap", n(cap))
            .expression_attribute_values(":ttl", n(expires_at))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let previous =
            |item: &Item| get_u64(item, &counter(window.saturating_sub(1))).unwrap_or(0) as u32;
        match result {
            Ok(out) => {
                let item = out.attributes.unwrap_or_default();
                let stale = stale(&item, window);
                if !stale.is_empty() {
                    self.remove(key_id, &stale).await?;
                }
                let current = get_u64(&item, &counter(window)).unwrap_or(1) as u32;
                Ok(Counted::Admitted {
                    current,
                    previous: previous(&item),
                })
            }
            Err(error) => match error.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(e) => Ok(Counted::Full {
                    previous: previous(&e.item.unwrap_or_default()),
                }),
                other => Err(ApiError::internal(other)),
            },
        }
    }

    /// This window's and the previous window's counts, read (strongly
    /// consistent) without counting anything.
    pub async fn peek(&self, key_id: Uuid, window: u64) -> ApiResult<(u32, u32)> {
        let store = self.0;
        let out = store
            .db
            .get_item()
            .table_name(store.table())
            .set_key(Some(key(keys::rate_pk(key_id), RATE_SK)))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_error)?;
        let item = out.item.unwrap_or_default();
        let count = |w: u64| get_u64(&item, &counter(w)).unwrap_or(0) as u32;
        Ok((count(window), count(window.saturating_sub(1))))
    }

    /// Takes back one counted request (refused after counting, or answered
    /// with something other than a success).
    pub async fn uncount(&self, key_id: Uuid, window: u64) -> ApiResult<()> {
        let store = self.0;
        store
            .db
            .update_item()
            .table_name(store.table())
            .set_key(Some(key(keys::rate_pk(key_id), RATE_SK)))
            .update_expression("ADD #now :minus_one")
            .condition_expression("#now > :zero")
            .expression_attribute_names("#now", counter(window))
            .expression_attribute_values(":minus_one", n(-1))
            .expression_attribute_values(":zero", n(0))
            .send()
            .await
            .map(|_| ())
            .or_else(|error| match error.as_service_error() {
                Some(e) if e.is_conditional_check_failed_exception() => Ok(()),
                _ => Err(sdk_error(error)),
            })
    }

    async fn remove(&self, key_id: Uuid, names: &[String]) -> ApiResult<()> {
        let store = self.0;
        let mut request = store
            .db
            .update_item()
            .table_name(store.table())
            .set_key(Some(key(keys::rate_pk(key_id), RATE_SK)));
        let mut placeholders = Vec::new();
        for (i, name) in names.iter().enumerate() {
            placeholders.push(format!("#s{i}"));
            request = request.expression_attribute_names(format!("#s{i}"), name);
        }
        request
            .update_expression(format!("REMOVE {}", placeholders.join(", ")))
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_counters_before_the_previous_window_are_stale() {
        let item: Item = ["c7", "c8", "c9", "c10", "ttl", "pk", "sk"]
            .into_iter()
            .map(|k| (k.to_owned(), n(1)))
            .collect();
        let mut stale = stale(&item, 10);
        stale.sort();
        assert_eq!(stale, vec!["c7", "c8"]);
    }
}
