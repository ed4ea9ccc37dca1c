//! Exact quotas of one subject (an API key). Two kinds:
//!
//! * `Quota`: at most `uses` uses per sliding `period` (support tickets,
//!   five an hour), with slots, below;
//! * `WindowQuota`: at most `uses` uses per fixed `period` window, one
//!   conditional `ADD` on the window's item: for larger counts (geocoding
//!   calls, password hashes), where a burst of twice the quota across a
//!   window's edge is harmless and a slot per use would not fit an item.
//!
//! Slots: The quota's item holds one slot
//! per use (`s0`, `s1`, ...), each the time of the use that holds it; a
//! slot older than the period is free again. A use takes a free slot with
//! one conditional UpdateItem, so concurrent requests never take more
//! slots than there are: two that aim at the same slot cannot both win,
//! and the loser learns from the item returned with its refusal which slot
//! is free, if any. A use that did not happen after all gives its slot back.
//! A slot names its holder, the request (its retries share it) or the one
//! attempt, so a request holds one slot however its attempts interleave.
//! Expiry is judged from the times, never from TTL (DynamoDB deletes
//! expired items only eventually, within days); the TTL only clears idle
//! items.

use std::time::Duration;

use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};

use crate::error::ApiError;
use crate::error::codes;
use crate::store::engine::client::Store;
use crate::store::engine::errors::{new_or_old, unless_condition_failed};
use crate::store::engine::item;
use crate::store::engine::item::{Item, get_s, get_u64, n};
use crate::store::engine::keys::{QUOTA_SK, TTL};

pub struct Quotas<'a>(pub(in crate::store) &'a Store);

/// A quota of one subject.
#[derive(Clone, Debug)]
pub struct Quota {
    /// The quota item's partition key (`keys::support_quota_pk`).
    pub pk: String,
    pub uses: u32,
    pub period: Duration,
}

/// The attribute naming the request that holds slot `index`.
fn request_name(index: u32) -> String {
    format!("q{index}")
}

/// A slot held for one use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pk: String,
    index: u32,
    /// Unix milliseconds of the use.
    at: u64,
    /// Uses left in the period after this one.
    pub remaining: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reserved {
    Held(Slot),
    /// Another attempt of the same request took a slot while this one was
    /// on its way: this attempt uses that one (not its to give back), and
    /// gave back any slot it took itself.
    Earlier(Slot),
    /// Every slot is in use; the oldest frees in `retry_after` seconds.
    Full {
        retry_after: u64,
    },
}

fn slot_name(index: u32) -> String {
    format!("s{index}")
}

impl Quota {
    /// The slots' times, from the stored item (None: never used).
    fn times(&self, item: &Item) -> Vec<Option<u64>> {
        (0..self.uses)
            .map(|i| get_u64(item, &slot_name(i)))
            .collect()
    }

    /// Slots of `item` free at `cutoff`.
    fn free(&self, item: &Item, cutoff: u64) -> u32 {
        let free = self
            .times(item)
            .iter()
            .filter(|t| t.is_none_or(|t| t <= cutoff))
            .count();
        u32::try_from(free).unwrap_or(0)
    }

    /// The lowest live slot of `item` that `holder` holds, but for
    /// `except`, with the uses left beside it.
    fn held(
        &self,
        item: &Item,
        except: Option<u32>,
        holder: uuid::Uuid,
        cutoff: u64,
    ) -> Option<Slot> {
        let holder = holder.to_string();
        let times = self.times(item);
        (0..self.uses).filter(|i| Some(*i) != except).find_map(|i| {
            let at = times[i as usize].filter(|t| *t > cutoff)?;
            (get_s(item, &request_name(i))? == holder).then(|| Slot {
                pk: self.pk.clone(),
                index: i,
                at,
                remaining: self.free(item, cutoff),
            })
        })
    }

    /// Seconds until the oldest of `times` (every slot taken) frees, for a
    /// refusal at `now` (Unix milliseconds). Concurrent uses stamp their
    /// slots with their own clocks, which may be ahead of `now`; the
    /// refusal is answered only after the newest slot was written, so the
    /// wait counts from that slot's time when it is later: never longer
    /// than the period.
    fn retry_after(&self, times: &[Option<u64>], now: u64) -> u64 {
        let period = u64::try_from(self.period.as_millis()).unwrap_or(u64::MAX);
        let taken = times.iter().flatten();
        let oldest = taken.clone().min().copied().unwrap_or(now);
        let answered = taken.max().copied().unwrap_or(now).max(now);
        oldest
            .saturating_add(period)
            .saturating_sub(answered)
            .div_ceil(1000)
            .max(1)
    }
}

/// A fixed-window quota of one subject: at most `uses` uses in each
/// `period` (windows aligned to the Unix epoch).
#[derive(Clone, Debug)]
pub struct WindowQuota {
    /// The quota's partition key (`keys::key_quota_pk`).
    pub pk: String,
    pub uses: u32,
    pub period: Duration,
}

/// What `Quotas::count` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Counted {
    /// This use was counted; `remaining` more fit in the window.
    Within { remaining: u32 },
    /// The window is full; the next one starts in `retry_after` seconds.
    Full { retry_after: u64 },
}

impl Quotas<'_> {
    /// Counts one use of `quota` at `now` (Unix milliseconds), unless its
    /// window is full: one conditional UpdateItem, so concurrent uses never
    /// pass the quota.
    pub async fn count(&self, quota: &WindowQuota, now: u64) -> Result<Counted, ApiError> {
        let store = self.0;
        let period = u64::try_from(quota.period.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let window = now / period;
        let ends = (window + 1) * period;
        let result = store
            .update(quota.pk.clone(), format!("W#{window}"))
            .update_expression("ADD #uses :one SET #ttl = :ttl")
            .condition_expression("attribute_not_exists(#uses) OR #uses < :cap")
            .expression_attribute_names("#uses", "uses")
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":cap", n(quota.uses))
            .expression_attribute_values(":ttl", n(ends.div_ceil(1000) + quota.period.as_secs()))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await;
        Ok(match new_or_old(result)? {
            Ok(item) => {
                let used = u32::try_from(get_u64(&item, "uses").unwrap_or(0)).unwrap_or(u32::MAX);
                Counted::Within {
                    remaining: quota.uses.saturating_sub(used),
                }
            }
            Err(_) => Counted::Full {
                retry_after: (ends - now).div_ceil(1000).max(1),
            },
        })
    }

    /// The slot of `quota` that request `request` (an id its retries
    /// share) took and still holds at `now`, if any: a retry of a request
    /// whose first attempt died uses it instead of taking another. Else
    /// the uses left.
    pub async fn held_by(
        &self,
        quota: &Quota,
        request: uuid::Uuid,
        now: u64,
    ) -> Result<Result<Slot, u32>, ApiError> {
        let key = item::key(quota.pk.clone(), QUOTA_SK);
        let Some(item) = self.0.get_item(key).await? else {
            return Ok(Err(quota.uses));
        };
        let period = u64::try_from(quota.period.as_millis()).unwrap_or(u64::MAX);
        let cutoff = now.saturating_sub(period);
        Ok(quota
            .held(&item, None, request, cutoff)
            .ok_or_else(|| quota.free(&item, cutoff)))
    }

    /// Takes a slot of `quota` for a use at `now` (Unix milliseconds), for
    /// `request` when it is named (`held_by` finds it again).
    pub async fn reserve(
        &self,
        quota: &Quota,
        now: u64,
        request: Option<uuid::Uuid>,
    ) -> Result<Reserved, ApiError> {
        let period = u64::try_from(quota.period.as_millis()).unwrap_or(u64::MAX);
        let cutoff = now.saturating_sub(period);
        let free = |time: &Option<u64>| time.is_none_or(|t| t <= cutoff);
        // The slot names its holder: the request, or this attempt alone.
        let holder = request.unwrap_or_else(uuid::Uuid::now_v7);
        let held = |item: &Item, index: u32| {
            Reserved::Held(Slot {
                pk: quota.pk.clone(),
                index,
                at: now,
                remaining: quota.free(item, cutoff),
            })
        };
        let mut index = 0;
        // Each lost race shows another slot taken: bounded by the slots.
        for _ in 0..=2 * quota.uses {
            match self.take(quota, index, now, cutoff, holder).await? {
                // Seen in the item just after this write, a slot of the
                // same request was written before it: of two attempts that
                // take slots at once, the later gives its own back, so a
                // request holds one slot.
                Ok(item) => {
                    let earlier =
                        request.and_then(|_| quota.held(&item, Some(index), holder, cutoff));
                    return match earlier {
                        Some(earlier) => self.yield_to(quota, index, now, earlier).await,
                        None => Ok(held(&item, index)),
                    };
                }
                // This very write, whose acknowledgement was lost (the SDK
                // sent it again): the slot is ours, not a second one.
                Err(current)
                    if get_u64(&current, &slot_name(index)) == Some(now)
                        && get_s(&current, &request_name(index))
                            == Some(holder.to_string().as_str()) =>
                {
                    return Ok(held(&current, index));
                }
                Err(current) => {
                    // Another attempt of the same request took a slot while
                    // this one was on its way (frozen before its write):
                    // that slot is the request's, full quota or not.
                    let earlier = request.and_then(|_| quota.held(&current, None, holder, cutoff));
                    if let Some(earlier) = earlier {
                        return Ok(Reserved::Earlier(earlier));
                    }
                    let times = quota.times(&current);
                    match times.iter().position(free) {
                        Some(next) => index = u32::try_from(next).unwrap_or(0),
                        None => {
                            return Ok(Reserved::Full {
                                retry_after: quota.retry_after(&times, now),
                            });
                        }
                    }
                }
            }
        }
        Err(codes::CONCURRENT_UPDATE.with("too many concurrent requests; try again"))
    }

    /// Gives back slot `index`, taken at `now`, for `earlier`, a slot the
    /// same request took before it.
    async fn yield_to(
        &self,
        quota: &Quota,
        index: u32,
        now: u64,
        mut earlier: Slot,
    ) -> Result<Reserved, ApiError> {
        let own = Slot {
            pk: quota.pk.clone(),
            index,
            at: now,
            remaining: 0,
        };
        self.release(&own).await?;
        earlier.remaining += 1;
        Ok(Reserved::Earlier(earlier))
    }

    /// Sets slot `index` to `now` for `holder` if it is free: the item
    /// after, or the item as it stood when the slot was not free.
    async fn take(
        &self,
        quota: &Quota,
        index: u32,
        now: u64,
        cutoff: u64,
        holder: uuid::Uuid,
    ) -> Result<Result<Item, Item>, ApiError> {
        let store = self.0;
        let expires = now.div_ceil(1000) + quota.period.as_secs();
        let result = store
            .update(quota.pk.clone(), QUOTA_SK)
            .update_expression("SET #slot = :now, #ttl = :ttl, #request = :request")
            .expression_attribute_values(":request", item::s(holder.to_string()))
            .condition_expression("attribute_not_exists(#slot) OR #slot <= :cutoff")
            .expression_attribute_names("#slot", slot_name(index))
            .expression_attribute_names("#request", request_name(index))
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":cutoff", n(cutoff))
            .expression_attribute_values(":ttl", n(expires))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        Ok(new_or_old(result)?.map_err(Option::unwrap_or_default))
    }

    /// Gives `slot` back (its use did not happen), unless it was taken
    /// anew meanwhile.
    pub async fn release(&self, slot: &Slot) -> Result<(), ApiError> {
        let store = self.0;
        unless_condition_failed(
            store
                .update(slot.pk.clone(), QUOTA_SK)
                .update_expression("REMOVE #slot")
                .condition_expression("#slot = :at")
                .expression_attribute_names("#slot", slot_name(slot.index))
                .expression_attribute_values(":at", n(slot.at))
                .send()
                .await,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: u64 = 3_600_000;

    fn hourly(uses: u32) -> Quota {
        Quota {
            pk: "QUOTA#test".into(),
            uses,
            period: Duration::from_millis(HOUR),
        }
    }

    #[test]
    fn the_wait_is_until_the_oldest_slot_frees() {
        let now = 10 * HOUR;
        let times = [Some(now - 600_000), Some(now - 1_000), Some(now - 1)];
        // The oldest frees 50 minutes from now.
        assert_eq!(hourly(3).retry_after(&times, now), 3_000);
        // A part of a second counts as a whole one, and never less than one.
        assert_eq!(hourly(1).retry_after(&[Some(now - HOUR + 1)], now), 1);
        assert_eq!(hourly(1).retry_after(&[Some(now - HOUR - 5)], now), 1);
    }

    #[test]
    fn slots_stamped_after_now_never_make_the_wait_longer_than_the_period() {
        // Ten requests at once: the five that won stamped their slots a few
        // milliseconds after a loser read its clock (found by the support
        // quota's race on DynamoDB Local; an answer of 3601 s before).
        let now = 10 * HOUR;
        let times = [now + 3, now + 5, now + 8, now + 9, now + 12].map(Some);
        assert_eq!(hourly(5).retry_after(&times, now), 3_600);
        let times = [now - 2_000, now + 500].map(Some);
        assert_eq!(hourly(2).retry_after(&times, now), 3_598);
    }
}
