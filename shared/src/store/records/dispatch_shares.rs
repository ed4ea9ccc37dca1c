//! An organization's share of the dispatcher (`ORG#<org>` /
//! `DISPATCH#SHARE`): the batches (Lambda invocations) that are making
//! its requests now, each as `<until>#<batch>` in a string set, `until`
//! the Unix ms by which the place lapses (a lease from its taking, longer
//! than any batch lasts). A batch
//! takes the organization's place before its first request for it, and
//! gives it back when it ends; a place whose batch was killed lapses at
//! its `until`. Taking is a conditional write (the set has fewer than the
//! limit's places), so two dispatchers never take more between them.
//! Written by the dispatcher only; the item expires (`ttl`) a day after
//! its last batch.

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::store::engine::client::Store;
use crate::store::engine::errors;
use crate::store::engine::item::n;
use crate::store::engine::keys;

pub struct DispatchShares<'a>(pub(in crate::store) &'a Store);

const SK: &str = "DISPATCH#SHARE";

/// A day, in seconds: how long the item outlives its last batch.
const KEEP_S: i64 = 24 * 3600;

/// A batch's place in an organization's share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place(String);

impl Place {
    /// The place of batch `batch`, held until `until` (Unix ms).
    pub fn new(batch: Uuid, until: i64) -> Self {
        Place(format!("{until}#{batch}"))
    }

    /// The entry as the set holds it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// When it lapses (Unix ms); None for an entry not of this shape.
    fn until(entry: &str) -> Option<i64> {
        entry.split_once('#')?.0.parse().ok()
    }
}

/// What a batch's asking for a place came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    /// The batch holds a place.
    Yes,
    /// Every place is held by a live batch; the one taken last lapses at
    /// this Unix ms (so was taken a lease before it).
    Full { last_lapses: i64 },
}

impl DispatchShares<'_> {
    /// Takes `place` in organization `org`'s share of at most `limit`
    /// batches at `now` (Unix ms). Places that lapsed are cleared first
    /// when they are in the way (a second write), then taking is tried
    /// once more.
    pub async fn take(&self, org: Uuid, place: &Place, limit: u32, now: i64) -> ApiResult<Taken> {
        let held = match self.try_take(org, place, limit, now).await? {
            None => return Ok(Taken::Yes),
            Some(held) => held,
        };
        let (lapsed, live): (Vec<&String>, Vec<&String>) = held
            .iter()
            .partition(|entry| Place::until(entry).is_none_or(|until| until <= now));
        let last_lapses = live
            .iter()
            .filter_map(|entry| Place::until(entry))
            .max()
            .unwrap_or(now);
        if lapsed.is_empty() {
            return Ok(Taken::Full { last_lapses });
        }
        self.remove(org, lapsed.into_iter().cloned().collect())
            .await?;
        Ok(match self.try_take(org, place, limit, now).await? {
            None => Taken::Yes,
            Some(_) => Taken::Full { last_lapses },
        })
    }

    /// One conditional write of `place`: None when it was taken, else the
    /// places held (as read by the refused write).
    async fn try_take(
        &self,
        org: Uuid,
        place: &Place,
        limit: u32,
        now: i64,
    ) -> ApiResult<Option<Vec<String>>> {
        let written = self
            .0
            .update(keys::org_pk(org), SK)
            .update_expression("ADD places :place SET #ttl = :ttl")
            .condition_expression(
                "attribute_not_exists(places) OR size(places) < :limit OR contains(places, :one)",
            )
            .expression_attribute_names("#ttl", keys::TTL)
            .expression_attribute_values(":place", AttributeValue::Ss(vec![place.0.clone()]))
            .expression_attribute_values(":one", AttributeValue::S(place.0.clone()))
            .expression_attribute_values(":limit", n(limit))
            .expression_attribute_values(":ttl", n(now / 1000 + KEEP_S))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match written {
            Ok(_) => Ok(None),
            Err(error) => match error.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(failed) => Ok(Some(
                    failed
                        .item
                        .and_then(|item| item.get("places").cloned())
                        .and_then(|places| places.as_ss().ok().cloned())
                        .unwrap_or_default(),
                )),
                other => Err(ApiError::internal(other)),
            },
        }
    }

    /// Gives `place` back (its batch ended).
    pub async fn give_back(&self, org: Uuid, place: &Place) -> ApiResult<()> {
        self.remove(org, vec![place.0.clone()]).await
    }

    async fn remove(&self, org: Uuid, entries: Vec<String>) -> ApiResult<()> {
        let removed = self
            .0
            .update(keys::org_pk(org), SK)
            .update_expression("DELETE places :gone")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":gone", AttributeValue::Ss(entries))
            .send()
            .await;
        errors::unless_condition_failed(removed)
    }

    /// The places held in organization `org`'s share now (lapsed ones
    /// too), for tests and operators.
    pub async fn held(&self, org: Uuid) -> ApiResult<Vec<String>> {
        let item = self
            .0
            .get_item(crate::store::engine::item::key(keys::org_pk(org), SK))
            .await?;
        Ok(item
            .and_then(|item| item.get("places").cloned())
            .and_then(|places| places.as_ss().ok().cloned())
            .unwrap_or_default())
    }
}
