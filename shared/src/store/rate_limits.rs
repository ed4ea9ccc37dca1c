//! Rate-limit counters: one item per API key with two window slots (the
//! current and the previous fixed window). In the common case a request
//! costs one conditional UpdateItem and no read.

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

const ATTEMPTS: usize = 4;

fn slot(window: u64) -> (String, String) {
    (format!("w{}", window % 2), format!("c{}", window % 2))
}

/// Count of the previous window, when the other slot holds it.
fn previous(item: &Item, window: u64) -> u32 {
    let (w, c) = slot(window + 1);
    match get_u64(item, &w) {
        Some(held) if held + 1 == window => get_u64(item, &c).unwrap_or(0) as u32,
        _ => 0,
    }
}

impl RateLimits<'_> {
    /// Counts one request of `key_id` in fixed window number `window` unless
    /// that window already holds `cap`. `expires_at` (Unix seconds) is the
    /// TTL; stale slots are judged by their window number, not by TTL.
    pub async fn count(&self, key_id: Uuid, window: u64, cap: u32, expires_at: u64) -> ApiResult<Counted> {
        let store = self.0;
        let (w, c) = slot(window);
        for _ in 0..ATTEMPTS {
            // Common case: this window's slot is live; add one below the cap.
            let result = store
                .db
                .update_item()
                .table_name(store.table())
                .set_key(Some(key(keys::rate_pk(key_id), RATE_SK)))
                .update_expression("SET #ttl = :ttl ADD #c :one")
                .condition_expression("#w = :w AND #c < :cap")
                .expression_attribute_names("#w", &w)
                .expression_attribute_names("#c", &c)
                .expression_attribute_names("#ttl", keys::TTL)
                .expression_attribute_values(":w", n(window))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":cap", n(cap))
                .expression_attribute_values(":ttl", n(expires_at))
                .return_values(ReturnValue::AllNew)
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
                .send()
                .await;
            let old = match result {
                Ok(out) => {
                    let item = out.attributes.unwrap_or_default();
                    let current = get_u64(&item, &c).unwrap_or(1) as u32;
                    return Ok(Counted::Admitted { current, previous: previous(&item, window) });
                }
                Err(error) => match error.into_service_error() {
                    UpdateItemError::ConditionalCheckFailedException(e) => e.item.unwrap_or_default(),
                    other => return Err(ApiError::internal(other)),
                },
            };
            if get_u64(&old, &w) == Some(window) {
                return Ok(Counted::Full { previous: previous(&old, window) });
            }
            // The slot holds an older window (or nothing): start this one.
            let result = store
                .db
                .update_item()
                .table_name(store.table())
                .set_key(Some(key(keys::rate_pk(key_id), RATE_SK)))
                .update_expression("SET #w = :w, #c = :one, #ttl = :ttl")
                .condition_expression("attribute_not_exists(#w) OR #w < :w")
                .expression_attribute_names("#w", &w)
                .expression_attribute_names("#c", &c)
                .expression_attribute_names("#ttl", keys::TTL)
                .expression_attribute_values(":w", n(window))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":ttl", n(expires_at))
                .return_values(ReturnValue::AllNew)
                .send()
                .await;
            match result {
                Ok(out) => {
                    let item = out.attributes.unwrap_or_default();
                    return Ok(Counted::Admitted { current: 1, previous: previous(&item, window) });
                }
                // Another request started the window first: count again.
                Err(error) if error.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {}
                Err(error) => return Err(sdk_error(error)),
            }
        }
        Err(ApiError::internal("rate-limit counter contention"))
    }

    /// Takes back one counted request (it was refused after counting).
    pub async fn uncount(&self, key_id: Uuid, window: u64) -> ApiResult<()> {
        let store = self.0;
        let (w, c) = slot(window);
        let result = store
            .db
            .update_item()
            .table_name(store.table())
            .set_key(Some(key(keys::rate_pk(key_id), RATE_SK)))
            .update_expression("ADD #c :minus_one")
            .condition_expression("#w = :w AND #c > :zero")
            .expression_attribute_names("#w", &w)
            .expression_attribute_names("#c", &c)
            .expression_attribute_values(":w", n(window))
            .expression_attribute_values(":minus_one", n(-1))
            .expression_attribute_values(":zero", n(0))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // The window moved on meanwhile: nothing to take back.
            Err(error) if error.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(()),
            Err(error) => Err(sdk_error(error)),
        }
    }
}
