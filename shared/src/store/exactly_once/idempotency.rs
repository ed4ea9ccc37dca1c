//! Idempotency records: one item per (API key, `Idempotency-Key`), holding
//! the request's fingerprint and, once answered, the answer. A request
//! claims the item with a conditional UpdateItem that succeeds only when
//! the item is absent or its `until` has passed, so two requests with one
//! key never both run; the loser learns from the item returned with its
//! refusal whether the first is still in flight, answered, or was another
//! request. `until` is the end of an in-flight claim's lease, or of an
//! answer's retention: expiry is judged from it, never from TTL (DynamoDB
//! deletes expired items only eventually, within days); the TTL only
//! clears old items.
//!
//! Each claim holds a token of its own (`token`): a claim whose write
//! committed but whose acknowledgement was lost is recognised by it when
//! the SDK's retry finds the item, and every later write of the request
//! (its answer, its lease renewed) is conditioned on it. The request
//! (`rid`) outlives its attempts: a retry of an attempt that never
//! answered continues it, while a key reused after its retention, or for
//! another request once a claim lapsed, starts a new one.
//! Only UpdateItem is used, which every writing function may call.

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use uuid::Uuid;

use crate::error::ApiError;
use crate::store::engine::client::Store;
use crate::store::engine::errors;
use crate::store::engine::errors::new_or_old;
use crate::store::engine::item::{Item, get_s, get_u64, key, n, s};
use crate::store::engine::keys::{TTL, idempotency_pk, idempotency_sk};

pub struct Idempotency<'a>(pub(in crate::store) &'a Store);

/// How long a claim holds the key without an answer: longer than any API
/// function may run behind API Gateway (30 s at most). An attempt renews
/// it before an effect outside the table that would run past it
/// (`outcome::fence`).
pub const LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// A request's fingerprints: the one under the cursor key's generation
/// that signs now (the one a claim writes), then the same request's under
/// the earlier generations the ring still holds (a retry of a request
/// claimed before the key rotated is still that request).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprints(Vec<String>);

impl Fingerprints {
    pub fn new(current: String, earlier: impl IntoIterator<Item = String>) -> Self {
        Self(std::iter::once(current).chain(earlier).collect())
    }

    /// The one a claim writes.
    pub fn current(&self) -> &str {
        &self.0[0]
    }

    fn matches(&self, stored: Option<&str>) -> bool {
        stored.is_some_and(|stored| self.0.iter().any(|f| f == stored))
    }
}

impl From<String> for Fingerprints {
    fn from(fingerprint: String) -> Self {
        Self(vec![fingerprint])
    }
}

/// A claim this request holds on its key.
#[derive(Clone, Debug)]
pub struct Claim {
    pk: String,
    sk: String,
    token: Uuid,
    fingerprint: Fingerprints,
    /// Unix milliseconds until which no other request may take the key
    /// (renewed by `hold`).
    pub lease_until: u64,
    /// Unix milliseconds until which its answer is kept.
    pub keep_until: u64,
    /// The request: shared by its attempts (retries with the same
    /// fingerprint after an attempt that never answered), new when the key
    /// is reused after its retention or for another request.
    pub request: Uuid,
    /// An earlier attempt of the same request began an effect outside the
    /// table that may have happened (`hold` with `acting`, before a
    /// provider's call): it is looked for before it is made again.
    pub acted: bool,
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

#[derive(Clone, Debug)]
pub enum Claimed {
    /// This request runs; it saves or releases the claim when answered.
    Ours(Claim),
    /// The key was used for a request with another fingerprint (the one
    /// its item holds).
    Reused { fingerprint: Option<String> },
    /// A request with the key and this fingerprint is still running, or
    /// an effect of one may still land: the key is held until then (Unix
    /// ms; 0 when not known).
    InFlight { until: u64 },
    /// A request with the key and this fingerprint was answered.
    Answered(Answer),
}

impl Claim {
    /// What names the claim's item: the associated data of an answer
    /// sealed in it, so a sealed answer moved to another item does not open.
    pub fn item(&self) -> String {
        item_name(&self.pk, &self.sk)
    }

    /// The SHA-256 (hex) of its `Idempotency-Key`.
    pub fn key_hash(&self) -> Option<&str> {
        self.sk.strip_prefix("IDEM#")
    }
}

/// The item of `idempotency_key` of API key `key_id`, as `Claim::item`.
pub fn item_of(key_id: Uuid, idempotency_key: &str) -> String {
    item_name(&idempotency_pk(key_id), &idempotency_sk(idempotency_key))
}

pub(crate) fn item_name(pk: &str, sk: &str) -> String {
    format!("idempotency\0{pk}\0{sk}")
}

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
/// The request the claims of one fingerprint share (`Claim::request`).
const REQUEST: &str = "rid";
/// Set by an attempt before an effect outside the table that a later
/// attempt must look for (`Claim::acted`).
const ACTING: &str = "acting";

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
) -> Result<TransactWriteItem, ApiError> {
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
    /// `fingerprint` at `now` (Unix ms) until `lease_until` (Unix ms). One
    /// conditional write, which continues the request (the key is free, or
    /// held by a lapsed attempt of the same request); a second one only to
    /// start a new request on a key whose answer's retention ended, or
    /// whose lapsed claim was another request's.
    pub async fn claim(
        &self,
        key_id: Uuid,
        idempotency_key: &str,
        fingerprint: &Fingerprints,
        now: u64,
        lease_until: u64,
        keep_until: u64,
    ) -> Result<Claimed, ApiError> {
        let claim = Claim {
            pk: idempotency_pk(key_id),
            sk: idempotency_sk(idempotency_key),
            token: Uuid::new_v4(),
            fingerprint: fingerprint.clone(),
            lease_until,
            keep_until,
            request: Uuid::now_v7(),
            acted: false,
        };
        for start in [Start::Continue, Start::Anew] {
            let taken = match self.take(&claim, fingerprint, now, start).await {
                Ok(taken) => taken,
                Err(error) => {
                    // Unheard: the write may have taken the key for this
                    // attempt, which acts on nothing now. Given back, so a
                    // retry goes on rather than waiting out the lease.
                    let _ = self.release(&claim).await;
                    return Err(error);
                }
            };
            let current = match taken {
                Ok(item) => return Ok(Claimed::Ours(claim.as_stored(&item))),
                Err(current) => current.unwrap_or_default(),
            };
            // This very claim, written by an attempt of the call whose
            // acknowledgement was lost (the SDK sent it again).
            if get_s(&current, TOKEN) == Some(claim.token.to_string().as_str()) {
                return Ok(Claimed::Ours(claim.as_stored(&current)));
            }
            match judge(&current, fingerprint, now) {
                Some(judged) => return Ok(judged),
                // Expired: taken anew, as a new request.
                None => continue,
            }
        }
        // Taken anew by another request between the two writes.
        Ok(Claimed::InFlight { until: 0 })
    }

    /// One claiming write: the item after, or as it stood when refused.
    async fn take(
        &self,
        claim: &Claim,
        fingerprint: &Fingerprints,
        now: u64,
        start: Start,
    ) -> Result<Result<Item, Option<Item>>, ApiError> {
        let update = self.0.update(claim.pk.clone(), claim.sk.clone());
        let update = match start {
            // Absent, or the same request's attempt that never answered
            // (lapsed, or freed after a 5xx or 429): its request goes on.
            Start::Continue => {
                let earlier = (1..fingerprint.0.len()).map(|i| format!(":fp{i}"));
                let same = match fingerprint.0.len() {
                    1 => "#fp = :fp".to_owned(),
                    _ => format!(
                        "#fp IN (:fp, {})",
                        earlier.clone().collect::<Vec<_>>().join(", ")
                    ),
                };
                earlier
                    .zip(&fingerprint.0[1..])
                    .fold(update, |update, (name, value)| {
                        update.expression_attribute_values(name, s(value))
                    })
                    .update_expression(
                        "SET #fp = :fp, #until = :until, #token = :token, #ttl = :ttl, \
                         #rid = if_not_exists(#rid, :rid)",
                    )
                    .condition_expression(format!(
                        "attribute_not_exists(pk) OR \
                         (#until <= :now AND {same} AND attribute_not_exists(#status))"
                    ))
                    .expression_attribute_names("#status", STATUS)
            }
            // A new request on an expired item.
            Start::Anew => update
                .update_expression(
                    "SET #fp = :fp, #until = :until, #token = :token, #ttl = :ttl, #rid = :rid \
                     REMOVE #status, #headers, #body, #sealed, #by, #acting",
                )
                .condition_expression("#until <= :now")
                .expression_attribute_names("#status", STATUS)
                .expression_attribute_names("#headers", HEADERS)
                .expression_attribute_names("#body", BODY)
                .expression_attribute_names("#sealed", SEALED)
                .expression_attribute_names("#by", BY)
                .expression_attribute_names("#acting", ACTING),
        };
        let result = update
            .expression_attribute_names("#fp", FINGERPRINT)
            .expression_attribute_names("#until", UNTIL)
            .expression_attribute_names("#token", TOKEN)
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_names("#rid", REQUEST)
            .expression_attribute_values(":fp", s(fingerprint.current()))
            .expression_attribute_values(":until", n(claim.lease_until))
            .expression_attribute_values(":token", s(claim.token.to_string()))
            .expression_attribute_values(":ttl", n(claim.lease_until.div_ceil(1000)))
            .expression_attribute_values(":rid", s(claim.request.to_string()))
            .expression_attribute_values(":now", n(now))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        new_or_old(result)
    }

    /// Holds the key for `claim`'s request until `lease_until` (Unix ms),
    /// if the claim is still the request's: before an effect outside the
    /// table, which a request whose claim lapsed must not make. With
    /// `acting`, the item also records that an attempt of the request
    /// began such an effect (`Claim::acted`, for its retries). False when
    /// the claim is no longer the request's.
    pub async fn hold(
        &self,
        claim: &Claim,
        lease_until: u64,
        acting: bool,
    ) -> Result<bool, ApiError> {
        let update = self.0.update(claim.pk.clone(), claim.sk.clone());
        let update = if acting {
            update
                .update_expression("SET #until = :until, #ttl = :ttl, #acting = :true")
                .expression_attribute_names("#acting", ACTING)
                .expression_attribute_values(":true", AttributeValue::Bool(true))
        } else {
            update.update_expression("SET #until = :until, #ttl = :ttl")
        };
        let result = update
            .condition_expression(STILL_OURS)
            .expression_attribute_names("#until", UNTIL)
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_names("#token", TOKEN)
            .expression_attribute_values(":until", n(lease_until))
            .expression_attribute_values(":ttl", n(lease_until.div_ceil(1000)))
            .expression_attribute_values(":token", s(claim.token.to_string()))
            .send()
            .await;
        Ok(new_or_old(result)?.is_ok())
    }

    /// Keeps `answer` for the claim's request until its `keep_until`,
    /// unless the claim was lost meanwhile (its lease ran out and another
    /// request took the key): false then, nothing kept.
    pub async fn answer(&self, claim: &Claim, answer: &Answer) -> Result<bool, ApiError> {
        let (names, values) = answer_attributes(claim, answer);
        let result = self
            .0
            .update(claim.pk.clone(), claim.sk.clone())
            .update_expression(ANSWER)
            .condition_expression(STILL_OURS)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        Ok(new_or_old(result)?.is_ok())
    }

    /// What became of the key of `claim`, a claim no longer the
    /// request's: the answer this very claim kept (its acknowledgement was
    /// lost: a transaction that carried it committed unheard), the answer
    /// another attempt of the same request kept, or neither (still in
    /// flight elsewhere, or taken by another request).
    pub async fn after_losing(&self, claim: &Claim) -> Result<Lost, ApiError> {
        let item = self
            .0
            .get_item(key(claim.pk.clone(), claim.sk.clone()))
            .await?
            .unwrap_or_default();
        if get_s(&item, BY) == Some(claim.token.to_string().as_str()) {
            return Ok(Lost::KeptOurs);
        }
        Ok(match judge(&item, &claim.fingerprint, 0) {
            Some(Claimed::Answered(answer)) => Lost::Answered(answer),
            _ => Lost::Unanswered,
        })
    }

    /// Gives the key back (the request failed and may be retried), unless
    /// the claim was lost meanwhile.
    pub async fn release(&self, claim: &Claim) -> Result<(), ApiError> {
        let store = self.0;
        errors::unless_condition_failed(
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

    /// What the item of an `Idempotency-Key` whose SHA-256 is `key_hash`
    /// (hex) of API key `key_id` holds now (an operator's reconciliation
    /// finds it from what a provider kept of the request): None when
    /// there is none, or it expired.
    pub async fn standing(
        &self,
        key_id: Uuid,
        key_hash: &str,
        now: u64,
    ) -> Result<Option<Standing>, ApiError> {
        let sk = format!("IDEM#{key_hash}");
        let item = self.0.get_item(key(idempotency_pk(key_id), sk)).await?;
        Ok(item
            .filter(|item| get_u64(item, UNTIL).unwrap_or(0) > now)
            .map(|item| Standing {
                request: get_s(&item, REQUEST).and_then(|r| r.parse().ok()),
                answer: answer_of(&item),
            }))
    }

    /// The stored item of a key, as it stands (for tests and operators).
    pub async fn get(&self, key_id: Uuid, idempotency_key: &str) -> Result<Option<Item>, ApiError> {
        self.0
            .get_item(key(idempotency_pk(key_id), idempotency_sk(idempotency_key)))
            .await
    }
}

/// What a key's item holds (`Idempotency::standing`): the request it
/// serves, and its answer once one is kept (None: still in flight, or
/// held while an effect may land).
#[derive(Clone, Debug)]
pub struct Standing {
    pub request: Option<Uuid>,
    pub answer: Option<Answer>,
}

/// Which claiming write goes (`Idempotency::take`).
#[derive(Clone, Copy, Debug)]
enum Start {
    /// The request goes on: the key is free, or held by a lapsed attempt
    /// of the same request.
    Continue,
    /// A new request, on an expired item.
    Anew,
}

/// What the key a claim could not take means for a request with
/// `fingerprint` at `now` (Unix ms): None when the item expired (it may be
/// taken anew).
fn judge(current: &Item, fingerprint: &Fingerprints, now: u64) -> Option<Claimed> {
    if get_u64(current, UNTIL).unwrap_or(0) <= now {
        return None;
    }
    if !fingerprint.matches(get_s(current, FINGERPRINT)) {
        let fingerprint = get_s(current, FINGERPRINT).map(str::to_owned);
        return Some(Claimed::Reused { fingerprint });
    }
    Some(match answer_of(current) {
        Some(answer) => Claimed::Answered(answer),
        None => Claimed::InFlight {
            until: get_u64(current, UNTIL).unwrap_or(0),
        },
    })
}

/// The answer an item keeps, if any.
fn answer_of(current: &Item) -> Option<Answer> {
    let status = get_u64(current, STATUS).and_then(|s| u16::try_from(s).ok())?;
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
    Some(Answer {
        status,
        headers,
        body,
        sealed,
    })
}

/// What became of a key whose claim a request lost (`after_losing`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lost {
    /// The request's own answer was kept, unheard.
    KeptOurs,
    /// Another attempt of the same request answered: this answer.
    Answered(Answer),
    /// No answer of this request is kept.
    Unanswered,
}

impl Claim {
    /// The claim as the item it wrote stands: the request it continues,
    /// and whether an earlier attempt of it began an effect.
    fn as_stored(&self, item: &Item) -> Claim {
        Claim {
            request: get_s(item, REQUEST)
                .and_then(|r| Uuid::try_parse(r).ok())
                .unwrap_or(self.request),
            acted: item.contains_key(ACTING),
            ..self.clone()
        }
    }

    /// The claim with its lease running until `lease_until` (Unix ms).
    pub fn held_until(&self, lease_until: u64) -> Claim {
        Claim {
            lease_until,
            ..self.clone()
        }
    }
}

#[cfg(test)]
impl Claim {
    /// A claim on key `k` of a new API key, as a unit test holds one.
    pub(crate) fn example() -> Claim {
        Claim {
            pk: idempotency_pk(Uuid::new_v4()),
            sk: idempotency_sk("k"),
            token: Uuid::new_v4(),
            fingerprint: Fingerprints(vec!["f".into()]),
            lease_until: 0,
            keep_until: 0,
            request: Uuid::now_v7(),
            acted: false,
        }
    }
}
