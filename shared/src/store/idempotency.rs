//! Idempotency records: one item per (API key, `Idempotency-Key`), holding
//! the request's fingerprint and, once answered, the answer. A request
//! claims the item with one conditional UpdateItem that succeeds only when
//! the item is absent or its `until` has passed, so two requests with one
//! key never both run; the loser learns from the item returned with its
//! refusal whether the first is still in flight, answered, or was another
//! request. `until` is the end of an in-flight claim's lease, or of an
//! answer's retention: expiry is judged from it, never from TTL (DynamoDB
//! deletes expired items only eventually, within days); the TTL only
//! clears old items.
//! Only UpdateItem is used, which every writing function may call.

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use uuid::Uuid;

use super::item::{Item, get_s, get_u64, key, n, s};
use super::keys::{TTL, idempotency_pk, idempotency_sk};
use super::{Store, new_or_old, unless_condition_failed};
use crate::error::{ApiError, ApiResult};

pub struct Idempotency<'a>(pub(super) &'a Store);

/// A claim this request holds on its key.
#[derive(Clone, Debug)]
pub struct Claim {
    pk: String,
    sk: String,
    token: Uuid,
    /// Unix milliseconds of the claim.
    pub at: u64,
    /// Unix milliseconds until which its answer is kept.
    pub keep_until: u64,
    /// An earlier attempt of the same request held the key and never
    /// answered (it died, or failed): what it did outside the table may
    /// have happened.
    pub retried: bool,
}

/// An answer kept for replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// The headers kept with it (lower-case names).
    pub headers: Vec<(String, String)>,
    /// The body; sealed (`crate::sealed`, bound to the item) when `sealed`.
    pub body: Vec<u8>,
    /// The body carries a secret and is kept sealed.
    pub sealed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claimed {
    /// This request runs; it saves or releases the claim when answered.
    Ours(Claim),
    /// The key was used for a request with another fingerprint.
    Reused,
    /// A request with the key and this fingerprint is still running.
    InFlight,
    /// A request with the key and this fingerprint was answered.
    Answered(Answer),
}

impl Claim {
    /// What names the claim's item: the associated data of an answer
    /// sealed in it, so a sealed answer moved to another item does not open.
    pub fn item(&self) -> String {
        item_name(&self.pk, &self.sk)
    }
}

/// The item of `idempotency_key` of API key `key_id`, as `Claim::item`.
pub fn item_of(key_id: Uuid, idempotency_key: &str) -> String {
    item_name(&idempotency_pk(key_id), &idempotency_sk(idempotency_key))
}

fn item_name(pk: &str, sk: &str) -> String {
    format!("idempotency\0{pk}\0{sk}")
}

impl PartialEq for Claim {
    fn eq(&self, other: &Self) -> bool {
        self.token == other.token
    }
}
impl Eq for Claim {}

const FINGERPRINT: &str = "fp";
const UNTIL: &str = "until";
const TOKEN: &str = "token";
const STATUS: &str = "status";
const HEADERS: &str = "headers";
const BODY: &str = "body";
const SEALED: &str = "sealed";
/// The token of the claim whose request answered (so a request whose
/// transaction committed on an attempt it never heard back from knows).
const BY: &str = "by";

/// Keeps an answer and ends the claim, if the claim is still the
/// request's: the update of `Idempotency::answer` and of the action a
/// transaction carries (`answer_action`).
const ANSWER: &str = "SET #until = :until, #ttl = :ttl, #status = :status, \
     #headers = :headers, #body = :body, #sealed = :sealed, #by = :token REMOVE #token";
const STILL_OURS: &str = "#token = :token";

/// The names and values of `ANSWER` for `answer` of `claim`.
fn answer_attributes(
    claim: &Claim,
    answer: &Answer,
) -> (HashMap<String, String>, HashMap<String, AttributeValue>) {
    let headers: HashMap<String, AttributeValue> = answer
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), s(value)))
        .collect();
    let names = [
        ("#until", UNTIL),
        ("#ttl", TTL),
        ("#status", STATUS),
        ("#headers", HEADERS),
        ("#body", BODY),
        ("#sealed", SEALED),
        ("#token", TOKEN),
        ("#by", BY),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let until = claim.keep_until;
    let values = [
        (":until", n(until)),
        (":ttl", n(until.div_ceil(1000))),
        (":status", n(answer.status)),
        (":headers", AttributeValue::M(headers)),
        (":body", AttributeValue::B(Blob::new(answer.body.clone()))),
        (":sealed", AttributeValue::Bool(answer.sealed)),
        (":token", s(claim.token.to_string())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    (names, values)
}

/// The transaction action that keeps `answer` for `claim`'s request, on
/// condition that the claim is still the request's.
pub(crate) fn answer_action(
    table: &str,
    claim: &Claim,
    answer: &Answer,
) -> ApiResult<TransactWriteItem> {
    let (names, values) = answer_attributes(claim, answer);
    let update = Update::builder()
        .table_name(table)
        .set_key(Some(key(claim.pk.clone(), claim.sk.clone())))
        .update_expression(ANSWER)
        .condition_expression(STILL_OURS)
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(Some(values))
        .build()
        .map_err(ApiError::internal)?;
    Ok(TransactWriteItem::builder().update(update).build())
}

impl Idempotency<'_> {
    /// Claims `idempotency_key` of API key `key_id` for a request with
    /// `fingerprint` at `now` (Unix ms) until `lease_until` (Unix ms).
    pub async fn claim(
        &self,
        key_id: Uuid,
        idempotency_key: &str,
        fingerprint: &str,
        now: u64,
        lease_until: u64,
        keep_until: u64,
    ) -> ApiResult<Claimed> {
        let store = self.0;
        let claim = Claim {
            pk: idempotency_pk(key_id),
            sk: idempotency_sk(idempotency_key),
            token: Uuid::new_v4(),
            at: now,
            keep_until,
            retried: false,
        };
        let result = store
            .update(claim.pk.clone(), claim.sk.clone())
            .update_expression(
                "SET #fp = :fp, #until = :until, #token = :token, #ttl = :ttl \
                 REMOVE #status, #headers, #body, #sealed, #by",
            )
            .condition_expression("attribute_not_exists(pk) OR #until <= :now")
            .expression_attribute_names("#fp", FINGERPRINT)
            .expression_attribute_names("#until", UNTIL)
            .expression_attribute_names("#token", TOKEN)
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_names("#headers", HEADERS)
            .expression_attribute_names("#body", BODY)
            .expression_attribute_names("#sealed", SEALED)
            .expression_attribute_names("#by", BY)
            .expression_attribute_values(":fp", s(fingerprint))
            .expression_attribute_values(":until", n(lease_until))
            .expression_attribute_values(":token", s(claim.token.to_string()))
            .expression_attribute_values(":ttl", n(lease_until.div_ceil(1000)))
            .expression_attribute_values(":now", n(now))
            .return_values(ReturnValue::UpdatedOld)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        Ok(match new_or_old(result)? {
            Ok(old) => Claimed::Ours(Claim {
                retried: get_s(&old, FINGERPRINT) == Some(fingerprint),
                ..claim
            }),
            Err(old) => judge(&old.unwrap_or_default(), fingerprint),
        })
    }

    /// Keeps `answer` for the claim's request until its `keep_until`,
    /// unless the claim was lost meanwhile (its lease ran out and another
    /// request took the key).
    pub async fn answer(&self, claim: &Claim, answer: &Answer) -> ApiResult<()> {
        let (names, values) = answer_attributes(claim, answer);
        unless_condition_failed(
            self.0
                .update(claim.pk.clone(), claim.sk.clone())
                .update_expression(ANSWER)
                .condition_expression(STILL_OURS)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .send()
                .await,
        )
    }

    /// Whether `claim`'s request answered: its answer is kept (a
    /// transaction that carried it committed, though its caller may not
    /// have heard so).
    pub(crate) async fn answered_by(&self, claim: &Claim) -> ApiResult<bool> {
        let item = self
            .0
            .get_item(key(claim.pk.clone(), claim.sk.clone()))
            .await?;
        let token = claim.token.to_string();
        Ok(item.is_some_and(|item| get_s(&item, BY) == Some(token.as_str())))
    }

    /// Gives the key back (the request failed and may be retried), unless
    /// the claim was lost meanwhile.
    pub async fn release(&self, claim: &Claim) -> ApiResult<()> {
        let store = self.0;
        unless_condition_failed(
            store
                .update(claim.pk.clone(), claim.sk.clone())
                .update_expression("SET #until = :zero REMOVE #token")
                .condition_expression("#token = :token")
                .expression_attribute_names("#until", UNTIL)
                .expression_attribute_names("#token", TOKEN)
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":token", s(claim.token.to_string()))
                .send()
                .await,
        )
    }

    /// The stored item of a key, as it stands (for tests and operators).
    pub async fn get(&self, key_id: Uuid, idempotency_key: &str) -> ApiResult<Option<Item>> {
        self.0
            .get_item(key(idempotency_pk(key_id), idempotency_sk(idempotency_key)))
            .await
    }
}

/// What a refused claim means for a request with `fingerprint`.
fn judge(current: &Item, fingerprint: &str) -> Claimed {
    if get_s(current, FINGERPRINT) != Some(fingerprint) {
        return Claimed::Reused;
    }
    let Some(status) = get_u64(current, STATUS).and_then(|s| u16::try_from(s).ok()) else {
        return Claimed::InFlight;
    };
    let headers = current
        .get(HEADERS)
        .and_then(|h| h.as_m().ok())
        .map(|m| {
            let mut kept: Vec<(String, String)> = m
                .iter()
                .filter_map(|(name, value)| Some((name.clone(), value.as_s().ok()?.clone())))
                .collect();
            kept.sort();
            kept
        })
        .unwrap_or_default();
    let body = current
        .get(BODY)
        .and_then(|b| b.as_b().ok())
        .map(|b| b.as_ref().to_vec())
        .unwrap_or_default();
    let sealed = current
        .get(SEALED)
        .and_then(|b| b.as_bool().ok())
        .copied()
        .unwrap_or(false);
    Claimed::Answered(Answer {
        status,
        headers,
        body,
        sealed,
    })
}
