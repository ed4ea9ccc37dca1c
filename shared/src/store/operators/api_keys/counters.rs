//! A key's rate-limit counters, in an item of their own (`RATE#<hash>`):
//! the admission that reads the key and counts its request in one round
//! trip (`admit`), the reads of a key's state, the counts given back, the
//! failures counted, and the old windows' counters removed. The API's
//! functions write this item only; it holds no authority.

use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::{ApiKeyRecord, ApiKeys};
use crate::auth::key::KeyHash;
use crate::auth::scope::Scope;
use crate::error::ApiResult;
use crate::model::Timestamp;
use crate::store::engine::calls::CallCounter;
use crate::store::engine::errors::{new_or_old, sdk_error, unless_condition_failed};
use crate::store::engine::item::{Item, get_u64, key, n};
use crate::store::engine::keys;

impl ApiKeys<'_> {
    /// Admits one request of the key with hash `hash`: reads the key and,
    /// at the same time, counts the request in window `window` of its
    /// counters (one conditional UpdateItem that refuses past `cap`
    /// requests or at `failure_cap` failed ones, and refuses a hash whose
    /// counters were never made: an unknown key writes nothing). It counts
    /// `slots` at once (the request's and those the instance will lease,
    /// `ratelimit::lease`), or one when that many no longer fit. The count stands only
    /// if the key exists, is neither revoked nor expired at `now`, its
    /// organization is active and entitled, and it has scope `needed`; else
    /// it is given back. Answers with the key and its counters either way.
    /// A key made before counters had an item of their own gets it on its
    /// first request (one more round trip, once).
    pub async fn admit(
        &self,
        hash: &KeyHash,
        needed: Scope,
        limits: Limits,
        now: Timestamp,
    ) -> ApiResult<KeyState> {
        let window = limits.window;
        let mut limits = Limits {
            slots: limits.slots.clamp(1, limits.cap.max(1)),
            ..limits
        };
        let (record, mut counted) = CallCounter::together(async {
            futures::try_join!(
                self.lookup(hash),
                self.count(hash, limits, "attribute_exists(pk) AND ")
            )
        })
        .await?;
        let may = record
            .as_ref()
            .is_some_and(|key| key.rejection(now).is_none() && key.refusal(needed, true).is_none());
        if limits.slots > 1 && may && matches!(counted, Err(Some(_))) {
            // The lease no longer fits: the request's own slot may.
            limits.slots = 1;
            counted = self
                .count(hash, limits, "attribute_exists(pk) AND ")
                .await?;
        }
        let counted = match (counted, may) {
            // The key's first request: its counters item is made now.
            (Err(None), true) => self.count(hash, limits, "").await?,
            (counted, _) => counted,
        };
        match counted {
            Ok(item) if may => {
                let stale = stale_counters(&item, window);
                if !stale.is_empty() {
                    self.remove_counters(hash, &stale).await?;
                }
                let mut state = KeyState::of(record, Some(item), window, true)?;
                state.slots = limits.slots;
                Ok(state)
            }
            Ok(item) => {
                // Counted for a key that may not make the request.
                self.uncount(hash, window, limits.slots).await?;
                let mut state = KeyState::of(record, Some(item), window, false)?;
                state.current = state.current.saturating_sub(limits.slots);
                Ok(state)
            }
            Err(old) => KeyState::of(record, old, window, false),
        }
    }

    /// Adds `limits.slots` requests to window `limits.window` of the key's
    /// counters if they fit under the caps (and `exists` holds): the
    /// counters after, or as they stood when refused (None: no counters
    /// item).
    async fn count(
        &self,
        hash: &KeyHash,
        limits: Limits,
        exists: &str,
    ) -> ApiResult<Result<Item, Option<Item>>> {
        let window = limits.window;
        let result = self
            .0
            .update(keys::rate_pk(hash), keys::RATE_SK)
            .update_expression("ADD #now :slots REMOVE #old")
            .condition_expression(format!(
                "{exists}(attribute_not_exists(#now) OR #now <= :room) \
                 AND (attribute_not_exists(#failed) OR #failed < :failure_cap)"
            ))
            .expression_attribute_names("#now", counter(window))
            .expression_attribute_names("#old", counter(window.saturating_sub(2)))
            .expression_attribute_names("#failed", failures(window))
            .expression_attribute_values(":slots", n(limits.slots))
            // At most `cap` after: a cap of 0 admits nothing.
            .expression_attribute_values(
                ":room",
                n(i64::from(limits.cap) - i64::from(limits.slots)),
            )
            .expression_attribute_values(":failure_cap", n(limits.failure_cap))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        new_or_old(result)
    }

    /// The key and its counters, read strongly consistently, counting
    /// nothing (where the rate limit or the versioned API is switched off).
    pub async fn read(&self, hash: &KeyHash, window: u64) -> ApiResult<KeyState> {
        let (record, counters) = CallCounter::together(async {
            futures::try_join!(
                self.lookup(hash),
                self.0.get_item(key(keys::rate_pk(hash), keys::RATE_SK))
            )
        })
        .await?;
        KeyState::of(record, counters, window, false)
    }

    /// The key, read strongly consistently, and its counters, eventually:
    /// for a request admitted from the instance's lease, whose slot is
    /// counted already (the counters only say what is left, for the
    /// headers, and whether failures reached their ceiling).
    pub async fn read_leased(&self, hash: &KeyHash, window: u64) -> ApiResult<KeyState> {
        let store = self.0;
        let counters = async {
            store
                .db
                .get_item()
                .table_name(store.table())
                .set_key(Some(key(keys::rate_pk(hash), keys::RATE_SK)))
                .send()
                .await
                .map(|out| out.item)
                .map_err(sdk_error)
        };
        let (record, counters) =
            CallCounter::together(async { futures::try_join!(self.lookup(hash), counters) })
                .await?;
        KeyState::of(record, counters, window, false)
    }

    /// Takes back `slots` requests counted in `window` (the sliding
    /// estimate refused them, or the key may not make the request).
    pub async fn uncount(&self, hash: &KeyHash, window: u64, slots: u32) -> ApiResult<()> {
        let store = self.0;
        unless_condition_failed(
            store
                .update(keys::rate_pk(hash), keys::RATE_SK)
                .update_expression("ADD #now :minus")
                .condition_expression("#now >= :slots")
                .expression_attribute_names("#now", counter(window))
                .expression_attribute_values(":minus", n(-i64::from(slots)))
                .expression_attribute_values(":slots", n(slots))
                .send()
                .await,
        )
    }

    /// Takes back one request counted in `window` whose answer was not a
    /// success, and counts it as failed there instead (one UpdateItem).
    pub async fn failed(&self, hash: &KeyHash, window: u64) -> ApiResult<()> {
        let store = self.0;
        unless_condition_failed(
            store
                .update(keys::rate_pk(hash), keys::RATE_SK)
                .update_expression("ADD #now :minus_one, #failed :one")
                .condition_expression("#now > :zero")
                .expression_attribute_names("#now", counter(window))
                .expression_attribute_names("#failed", failures(window))
                .expression_attribute_values(":minus_one", n(-1))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":zero", n(0))
                .send()
                .await,
        )
    }

    /// Removes counters of windows long gone (after a key was idle).
    async fn remove_counters(&self, hash: &KeyHash, names: &[String]) -> ApiResult<()> {
        let store = self.0;
        let mut request = store.update(keys::rate_pk(hash), keys::RATE_SK);
        let mut placeholders = Vec::new();
        for (i, name) in names.iter().enumerate() {
            placeholders.push(format!("#s{i}"));
            request = request.expression_attribute_names(format!("#s{i}"), name);
        }
        unless_condition_failed(
            request
                .update_expression(format!("REMOVE {}", placeholders.join(", ")))
                .condition_expression("attribute_exists(pk)")
                .send()
                .await,
        )
    }
}

/// What `admit` or `read` found: the key (None when no key has the hash),
/// the counts of its current and previous windows, and whether this
/// request was counted.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyState {
    pub record: Option<ApiKeyRecord>,
    pub current: u32,
    pub previous: u32,
    /// Failed requests in the current window.
    pub failed: u32,
    pub counted: bool,
    /// Slots the admission counted (its request's, and its lease's).
    pub slots: u32,
}

/// The caps one admission counts against, and what it counts.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The rate-limit window counted in.
    pub window: u64,
    /// Requests the window may hold.
    pub cap: u32,
    /// Failed requests the window may hold.
    pub failure_cap: u32,
    /// Slots counted at once (the request's, and its instance's lease).
    pub slots: u32,
}

impl KeyState {
    fn of(
        record: Option<ApiKeyRecord>,
        counters: Option<Item>,
        window: u64,
        counted: bool,
    ) -> ApiResult<Self> {
        let item = counters;
        let count = |item: &Item, name: String| {
            u32::try_from(get_u64(item, &name).unwrap_or(0)).unwrap_or(u32::MAX)
        };
        let (current, previous, failed) = item.as_ref().map_or((0, 0, 0), |item| {
            (
                count(item, counter(window)),
                count(item, counter(window.saturating_sub(1))),
                count(item, failures(window)),
            )
        });
        Ok(KeyState {
            record,
            current,
            previous,
            failed,
            counted,
            slots: u32::from(counted),
        })
    }
}

/// The counter attribute of rate-limit window `window`.
fn counter(window: u64) -> String {
    format!("c{window}")
}

/// The failed-requests counter of window `window`.
fn failures(window: u64) -> String {
    format!("f{window}")
}

/// Counters of windows older than the previous one (failures: older than
/// this one).
fn stale_counters(item: &Item, window: u64) -> Vec<String> {
    item.keys()
        .filter(|name| {
            let of = |prefix: char| {
                name.strip_prefix(prefix)
                    .and_then(|w| w.parse::<u64>().ok())
            };
            of('c').is_some_and(|w| w + 1 < window) || of('f').is_some_and(|w| w < window)
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_counters_before_the_previous_window_are_stale() {
        let item: Item = [
            "c7",
            "c8",
            "c9",
            "c10",
            "f9",
            "f10",
            "ttl",
            "pk",
            "sk",
            "created_at",
            "fp",
        ]
        .into_iter()
        .map(|k| (k.to_owned(), n(1)))
        .collect();
        let mut stale = stale_counters(&item, 10);
        stale.sort();
        assert_eq!(stale, vec!["c7", "c8", "f9"]);
    }
}
