//! Receivers' health (`ORG#<org>` / `RECEIVER#<receiver>`, the receiver
//! named by `webhook::receiver`): written by the dispatcher's attempts,
//! read by them and by the webhook list. No item, or one without a
//! streak: healthy. A failure adds to the streak, a 2xx removes it, and a
//! slowed or parked
//! receiver's turn is a conditional write, so two dispatchers never take
//! the same turn (`model::receiver`).

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValue;
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::model::receiver::Health;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{from_item, key, n, s};
use crate::store::engine::keys;
use crate::store::engine::query::query_all;

pub struct Receivers<'a>(pub(in crate::store) &'a Store);

const PREFIX: &str = "RECEIVER#";

fn sk(receiver: Uuid) -> String {
    format!("{PREFIX}{receiver}")
}

/// Whether a conditional update was written (false: its condition did
/// not hold).
fn written<T>(
    result: Result<T, aws_sdk_dynamodb::error::SdkError<UpdateItemError>>,
) -> ApiResult<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(error) => match error.into_service_error() {
            UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
            other => Err(ApiError::internal(other)),
        },
    }
}

impl Receivers<'_> {
    /// Receiver `receiver`'s health (of organization `org`), read
    /// eventually consistent (half a read unit): a streak a moment stale
    /// lets one attempt more go or be held, and a turn is taken by a
    /// conditional write whatever was read.
    pub async fn get(&self, org: Uuid, receiver: Uuid) -> ApiResult<Health> {
        let store = self.0;
        let out = store
            .db
            .get_item()
            .table_name(store.table())
            .set_key(Some(key(keys::org_pk(org), sk(receiver))))
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(out.item.map(from_item).transpose()?.unwrap_or_default())
    }

    /// The health of every receiver of organization `org` that is failing,
    /// by receiver.
    pub async fn failing(&self, org: Uuid) -> ApiResult<HashMap<Uuid, Health>> {
        let query = self.0.prefix_query(keys::org_pk(org), PREFIX);
        let mut found = HashMap::new();
        for item in query_all(query).await? {
            let receiver = item
                .get("receiver")
                .and_then(|value| value.as_s().ok())
                .and_then(|text| text.parse::<Uuid>().ok());
            if let Some(receiver) = receiver {
                found.insert(receiver, from_item(item)?);
            }
        }
        Ok(found)
    }

    /// Takes the receiver's turn, slowed or parked: the next one starts at
    /// `until` (Unix ms). False when another attempt took it first.
    pub async fn take_turn(
        &self,
        org: Uuid,
        receiver: Uuid,
        now: i64,
        until: i64,
    ) -> ApiResult<bool> {
        let taken = self
            .0
            .update(keys::org_pk(org), sk(receiver))
            .update_expression("SET next_try = :until")
            .condition_expression(
                "attribute_exists(pk) AND (attribute_not_exists(next_try) OR next_try <= :now)",
            )
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":now", n(now))
            .send()
            .await;
        written(taken)
    }

    /// Records a failed attempt at `now` (Unix ms): the streak as it is
    /// now.
    pub async fn failed(&self, org: Uuid, receiver: Uuid, now: i64) -> ApiResult<Health> {
        let out = self
            .0
            .update(keys::org_pk(org), sk(receiver))
            .update_expression(
                "ADD failures :one SET failing_since = if_not_exists(failing_since, :now), receiver = :receiver",
            )
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":receiver", s(receiver.to_string()))
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(out
            .attributes
            .map(from_item)
            .transpose()?
            .unwrap_or_default())
    }

    /// Marks the receiver parked at `now`: true the first time in its
    /// streak (its metric counts it once).
    pub async fn parked(&self, org: Uuid, receiver: Uuid, now: i64) -> ApiResult<bool> {
        let marked = self
            .0
            .update(keys::org_pk(org), sk(receiver))
            .update_expression("SET parked_at = :now")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(parked_at)")
            .expression_attribute_values(":now", n(now))
            .send()
            .await;
        written(marked)
    }

    /// A 2xx: the receiver is healthy again (its streak removed; an
    /// UpdateItem, the dispatcher's role has no DeleteItem).
    pub async fn succeeded(&self, org: Uuid, receiver: Uuid) -> ApiResult<()> {
        let removed = self
            .0
            .update(keys::org_pk(org), sk(receiver))
            .update_expression("REMOVE failures, failing_since, next_try, parked_at")
            .condition_expression("attribute_exists(pk)")
            .send()
            .await;
        written(removed).map(|_| ())
    }
}
