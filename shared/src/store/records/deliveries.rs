//! Webhook deliveries (`DELIVERY#<id>` / `DELIVERY`) and their attempts
//! (`ATTEMPTS#<webhook>` / `<attempted_at>#<delivery>#<nn>`, newest first
//! in the list). A delivery is created once (its id derives from the
//! outbox record and the webhook), claimed for each attempt with a short
//! lease, and stored with the attempt's record in one transaction. Both
//! expire 30 days after their last attempt.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    ConditionCheck, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use uuid::Uuid;

use crate::error::codes;
use crate::error::{ApiError, ApiResult};
use crate::model::Timestamp;
use crate::model::delivery::{DeliveryAttempt, DeliveryRecord, DeliveryStatus};
use crate::store::engine::client::Store;
use crate::store::engine::errors;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{Item, from_item, get_i64, key, n, s, to_item};
use crate::store::engine::keys::{self, DELIVERY_SK};
use crate::store::exactly_once::tx::{put, transact};

/// Days deliveries and attempts are kept after the last attempt.
const KEEP_DAYS: i64 = 30;

/// Where the next page of attempts starts (the last row's key).
pub type Position = BTreeMap<String, String>;

pub struct Deliveries<'a>(pub(in crate::store) &'a Store);

/// What a claim of a delivery came to.
#[derive(Debug)]
pub enum Claim {
    /// This attempt may go ahead; its lease ends at the Unix ms given
    /// (`release` gives it back before).
    Claimed(Box<DeliveryRecord>, i64),
    /// Another attempt holds the delivery now: try again after the lease.
    Busy,
    /// Nothing to do: gone, no longer pending, or another message's.
    Done,
}

/// Unix seconds now.
fn now_unix() -> i64 {
    crate::clock::now().timestamp()
}

/// False once the item's `ttl` has passed (DynamoDB deletes expired items
/// only eventually; reads must not show them).
fn live(item: &Item) -> bool {
    get_i64(item, keys::TTL).is_none_or(|ttl| ttl > now_unix())
}

/// Attempts a recovery reads a page, and at most in one request.
const RECOVER_PAGE: i32 = 200;
const RECOVER_READ: usize = 2_000;

/// An attempt's id and time, as a recovery reads them.
#[derive(serde::Deserialize)]
struct AttemptRow {
    delivery_id: Uuid,
    attempted_at: Timestamp,
}

/// Which of a webhook's attempt logs: its loads' deliveries, or its pings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptLog {
    Deliveries,
    Pings,
}

impl AttemptLog {
    /// The log an attempt of a delivery of `event` goes to.
    pub fn of(event: &str) -> Self {
        if event == crate::model::webhook::WEBHOOK_PING {
            AttemptLog::Pings
        } else {
            AttemptLog::Deliveries
        }
    }

    fn pk(self, webhook: Uuid) -> String {
        match self {
            AttemptLog::Deliveries => keys::attempts_pk(webhook),
            AttemptLog::Pings => keys::ping_attempts_pk(webhook),
        }
    }
}

/// What a recovery's mark (`Deliveries::mark_recovery`) did with a
/// delivery: marked for the request, or skipped, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoveryMark {
    /// Marked: the request queues its attempt.
    Mine,
    /// Its last attempt succeeded (before or since it was found), or it is
    /// gone.
    NotFailed,
    /// Another recovery queued it, and its attempt is not made yet.
    BeingRecovered,
    /// A recovery's attempt of it was made within the cool-down
    /// (`webhooks::RECOVERY_COOLDOWN`).
    CoolingDown,
}

pub fn delivery_not_found() -> ApiError {
    codes::DELIVERY_NOT_FOUND.with("no delivery of this webhook has this id")
}

#[derive(serde::Serialize)]
struct DeliveryItem<'a> {
    pk: String,
    sk: &'static str,
    ttl: i64,
    #[serde(flatten)]
    record: &'a DeliveryRecord,
}

#[derive(serde::Serialize)]
struct AttemptItem<'a> {
    pk: String,
    sk: String,
    ttl: i64,
    webhook_id: Uuid,
    #[serde(flatten)]
    attempt: &'a DeliveryAttempt,
}

fn expires(from: Timestamp) -> i64 {
    (from + chrono::TimeDelta::days(KEEP_DAYS)).unix()
}

fn delivery_item(record: &DeliveryRecord) -> ApiResult<Item> {
    to_item(&DeliveryItem {
        pk: keys::delivery_pk(record.id),
        sk: DELIVERY_SK,
        ttl: expires(record.last_attempt_at.unwrap_or(record.created_at)),
        record,
    })
}

impl Deliveries<'_> {
    /// Stores `record` unless its delivery exists; true when it was new.
    pub async fn create(&self, record: &DeliveryRecord) -> ApiResult<bool> {
        let store = self.0;
        let result = store
            .db
            .put_item()
            .table_name(store.table())
            .set_item(Some(delivery_item(record)?))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(error) => match error.into_service_error() {
                PutItemError::ConditionalCheckFailedException(_) => Ok(false),
                other => Err(ApiError::internal(other)),
            },
        }
    }

    /// Delivery `id` (strongly consistent), if it exists.
    pub async fn get(&self, id: Uuid) -> ApiResult<Option<DeliveryRecord>> {
        let found = self
            .0
            .get_item(key(keys::delivery_pk(id), DELIVERY_SK))
            .await?;
        found.filter(live).map(from_item).transpose()
    }

    /// Delivery `id` of `webhook`, or 404 `delivery_not_found`.
    pub async fn require(&self, webhook: Uuid, id: Uuid) -> ApiResult<DeliveryRecord> {
        self.get(id)
            .await?
            .filter(|d| d.webhook_id == webhook)
            .ok_or_else(delivery_not_found)
    }

    /// Claims delivery `id` for one attempt for `lease`. A scheduled
    /// attempt (`owner`: its queue message) needs the delivery pending and
    /// not owned by another message, so a delivery announced twice is
    /// still made once; a manual one (`owner` None) needs the lease, and
    /// its retry request (`request`) not made yet.
    pub async fn claim(
        &self,
        id: Uuid,
        owner: Option<&str>,
        request: Option<Uuid>,
        lease: Duration,
    ) -> ApiResult<Claim> {
        let store = self.0;
        let now = crate::clock::now().timestamp_millis();
        let until = now + i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
        let free =
            "attribute_exists(pk) AND (attribute_not_exists(lease_until) OR lease_until < :now)";
        let update = store
            .update(keys::delivery_pk(id), DELIVERY_SK)
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":until", n(until))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let update = match (owner, request) {
            (None, None) => update
                .update_expression("SET lease_until = :until")
                .condition_expression(free),
            (None, Some(request)) => return self.claim_for(id, request, now, until).await,
            (Some(owner), _) => update
                .update_expression("SET lease_until = :until, #owner = :owner")
                .condition_expression(format!(
                    "{free} AND #status = :pending AND (attribute_not_exists(#owner) OR #owner = :owner)"
                ))
                .expression_attribute_names("#status", "status")
                .expression_attribute_names("#owner", "owner")
                .expression_attribute_values(":pending", s("pending"))
                .expression_attribute_values(":owner", s(owner)),
        };
        match update.send().await {
            Ok(out) => Ok(Claim::Claimed(
                Box::new(from_item(out.attributes.unwrap_or_default())?),
                until,
            )),
            Err(error) => match error.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(failed) => {
                    let Some(item) = failed.item.filter(live) else {
                        return Ok(Claim::Done);
                    };
                    let record: DeliveryRecord = from_item(item.clone())?;
                    let made = owner.is_none()
                        && request.is_some_and(|r| record.manual_requests.contains(&r));
                    let theirs = made
                        || owner.is_some()
                            && (record.status != DeliveryStatus::Pending
                                || record.owner.as_deref().is_some_and(|o| Some(o) != owner));
                    let leased = get_i64(&item, "lease_until").is_some_and(|until| until >= now);
                    Ok(if !theirs && leased {
                        Claim::Busy
                    } else {
                        Claim::Done
                    })
                }
                other => Err(ApiError::internal(other)),
            },
        }
    }

    /// The claim of delivery `id` for retry request `request`'s attempt:
    /// the lease, on condition that the request's attempt was not made
    /// (its mark, `record`, is absent; a record from before the marks
    /// lists it in `manual_requests`), in one transaction; then the
    /// delivery as claimed, read back.
    async fn claim_for(&self, id: Uuid, request: Uuid, now: i64, until: i64) -> ApiResult<Claim> {
        let store = self.0;
        let table = store.table();
        let marked = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(key(
                keys::delivery_pk(id),
                keys::manual_request_sk(request),
            )))
            .condition_expression("attribute_not_exists(pk) OR #ttl <= :now_s")
            .expression_attribute_names("#ttl", keys::TTL)
            .expression_attribute_values(":now_s", n(now_unix()))
            .build()
            .map_err(ApiError::internal)?;
        let lease = Update::builder()
            .table_name(table)
            .set_key(Some(key(keys::delivery_pk(id), DELIVERY_SK)))
            .update_expression("SET lease_until = :until")
            .condition_expression(
                "attribute_exists(pk) AND (attribute_not_exists(lease_until) OR lease_until < :now) \
                 AND NOT contains(manual_requests, :request)",
            )
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":request", s(request.to_string()))
            .build()
            .map_err(ApiError::internal)?;
        let sent = store
            .db
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().condition_check(marked).build())
            .transact_items(TransactWriteItem::builder().update(lease).build())
            .send()
            .await;
        let Err(error) = sent else {
            return Ok(match self.get(id).await? {
                Some(delivery) => Claim::Claimed(Box::new(delivery), until),
                None => Claim::Done,
            });
        };
        let codes = errors::cancellation_codes(&error).unwrap_or_default();
        let failed =
            |i: usize| codes.get(i).and_then(Option::as_deref) == Some("ConditionalCheckFailed");
        if failed(0) {
            return Ok(Claim::Done);
        }
        if failed(1) {
            // Gone, made for this request (a record from before the marks),
            // or leased: only the last is worth coming back for.
            let item = store
                .get_item(key(keys::delivery_pk(id), DELIVERY_SK))
                .await?
                .filter(live);
            let leased = match item {
                Some(item) => {
                    let lease = get_i64(&item, "lease_until");
                    let record: DeliveryRecord = from_item(item)?;
                    !record.manual_requests.contains(&request) && lease.is_some_and(|l| l >= now)
                }
                None => false,
            };
            return Ok(if leased { Claim::Busy } else { Claim::Done });
        }
        if codes.iter().flatten().any(|c| c == "TransactionConflict") {
            return Ok(Claim::Busy);
        }
        Err(sdk_error(error))
    }

    /// Gives back the lease a claim took until `until` (Unix ms), making no
    /// attempt: the delivery may be claimed again at once, and a scheduled
    /// claim's (`scheduled`) by another message, which becomes its owner
    /// (the message that puts the attempt off sends it again). Nothing
    /// when the lease is no longer that claim's.
    pub async fn release(&self, id: Uuid, until: i64, scheduled: bool) -> ApiResult<()> {
        let released = self
            .0
            .update(keys::delivery_pk(id), DELIVERY_SK)
            .update_expression(if scheduled {
                "REMOVE lease_until, #owner"
            } else {
                "REMOVE lease_until"
            })
            .condition_expression("lease_until = :until")
            .set_expression_attribute_names(
                scheduled.then(|| HashMap::from([("#owner".to_owned(), "owner".to_owned())])),
            )
            .expression_attribute_values(":until", n(until))
            .send()
            .await;
        errors::unless_condition_failed(released)
    }

    /// Stores `attempt` and the delivery's state after it (`delivery`,
    /// whose lease ends) in one transaction, with the mark of the retry
    /// request it was made for, if any (kept as long as the delivery).
    pub async fn record(
        &self,
        delivery: &DeliveryRecord,
        attempt: &DeliveryAttempt,
        request: Option<Uuid>,
    ) -> ApiResult<()> {
        let table = self.0.table();
        let attempt_item = AttemptItem {
            pk: AttemptLog::of(&delivery.event).pk(delivery.webhook_id),
            sk: keys::attempt_sk(attempt.attempted_at, delivery.id, attempt.attempt),
            ttl: expires(attempt.attempted_at),
            webhook_id: delivery.webhook_id,
            attempt,
        };
        let mut actions = vec![
            put(
                table,
                delivery_item(delivery)?,
                Some("attribute_exists(pk)"),
            )?,
            put(table, to_item(&attempt_item)?, None)?,
        ];
        if let Some(request) = request {
            let mut mark = key(
                keys::delivery_pk(delivery.id),
                keys::manual_request_sk(request),
            );
            mark.insert(keys::TTL.into(), n(expires(attempt.attempted_at)));
            actions.push(put(table, mark, None)?);
        }
        transact(self.0, actions, &[]).await
    }

    /// Marks delivery `id` failed (its attempts ran out).
    pub async fn fail(&self, delivery: &DeliveryRecord) -> ApiResult<()> {
        let mut failed = delivery.clone();
        failed.status = DeliveryStatus::Failed;
        let store = self.0;
        store
            .db
            .put_item()
            .table_name(store.table())
            .set_item(Some(delivery_item(&failed)?))
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(())
    }

    /// The deliveries `webhook`'s log shows attempts of since `since`,
    /// oldest first, at most `most` of them, and where to resume when
    /// the log goes on (the first attempt not read): one Query of its
    /// attempts (ids and times only), page by page, at most
    /// `RECOVER_READ` attempts in all.
    pub async fn attempted_since(
        &self,
        webhook: Uuid,
        since: Timestamp,
        most: usize,
    ) -> ApiResult<(Vec<Uuid>, Option<Timestamp>)> {
        let store = self.0;
        let query = store
            .db
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk AND sk >= :since")
            .expression_attribute_values(":pk", s(keys::attempts_pk(webhook)))
            .expression_attribute_values(":since", s(since.to_string()))
            .projection_expression("delivery_id, attempted_at")
            .consistent_read(true)
            .limit(RECOVER_PAGE);
        let mut found: Vec<Uuid> = Vec::new();
        let mut start = None;
        let mut read = 0;
        loop {
            let page = query
                .clone()
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(sdk_error)?;
            for item in page.items.unwrap_or_default().into_iter().filter(live) {
                let row: AttemptRow = from_item(item)?;
                if found.contains(&row.delivery_id) {
                    continue;
                }
                if found.len() == most {
                    return Ok((found, Some(row.attempted_at)));
                }
                found.push(row.delivery_id);
            }
            read += RECOVER_PAGE as usize;
            start = page.last_evaluated_key;
            let Some(next) = &start else {
                return Ok((found, None));
            };
            if read >= RECOVER_READ {
                // Resume at the last attempt read (read again: harmless,
                // a delivery marked is not marked twice).
                let sk = next.get(keys::SK).and_then(|v| v.as_s().ok());
                let at = sk.and_then(|sk| sk.split('#').next()).map(str::to_owned);
                let at = at
                    .map(|at| chrono::DateTime::parse_from_rfc3339(&at))
                    .transpose()
                    .map_err(ApiError::internal)?;
                return Ok((found, at.map(|at| at.with_timezone(&chrono::Utc).into())));
            }
        }
    }

    /// Marks delivery `id` of `webhook` as being recovered by `request`
    /// until `until` (Unix ms), if its last attempt failed (it is `failed`,
    /// or `pending` with attempts made), no other recovery holds it at
    /// `now` (a recovery's own mark is its again: a retry of the request
    /// re-sends what its first attempt may not have), and no recovery's
    /// attempt of it was made after `cooled` (the cool-down): one
    /// conditional UpdateItem. What it did, and when not the request's,
    /// why (from the delivery as the refusal found it).
    pub async fn mark_recovery(
        &self,
        id: Uuid,
        webhook: Uuid,
        request: Uuid,
        now: i64,
        until: i64,
        cooled: i64,
    ) -> ApiResult<RecoveryMark> {
        let result = self
            .0
            .update(keys::delivery_pk(id), DELIVERY_SK)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .update_expression("SET recovery = :request, recovery_until = :until")
            .condition_expression(
                "attribute_exists(pk) AND webhook_id = :webhook \
                 AND (#status = :failed OR (#status = :pending AND attempts > :none)) \
                 AND (attribute_not_exists(recovery_until) OR recovery_until < :now OR recovery = :request) \
                 AND (attribute_not_exists(recovered_at) OR recovered_at <= :cooled)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":request", s(request.to_string()))
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":cooled", n(cooled))
            .expression_attribute_values(":webhook", s(webhook.to_string()))
            .expression_attribute_values(":failed", s("failed"))
            .expression_attribute_values(":pending", s("pending"))
            .expression_attribute_values(":none", n(0))
            .send()
            .await;
        match result {
            Ok(_) => Ok(RecoveryMark::Mine),
            Err(error) => match error.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(failed) => {
                    let found = failed.item.filter(live).map(from_item::<DeliveryRecord>);
                    let failed = |d: &DeliveryRecord| {
                        d.status == DeliveryStatus::Failed
                            || d.status == DeliveryStatus::Pending && d.attempts > 0
                    };
                    Ok(match found.transpose()? {
                        Some(d) if !failed(&d) || d.webhook_id != webhook => {
                            RecoveryMark::NotFailed
                        }
                        Some(d) if d.recovered_at.is_some_and(|at| at > cooled) => {
                            RecoveryMark::CoolingDown
                        }
                        Some(d)
                            if d.recovery_until.is_some_and(|until| until >= now)
                                && d.recovery != Some(request) =>
                        {
                            RecoveryMark::BeingRecovered
                        }
                        _ => RecoveryMark::NotFailed,
                    })
                }
                other => Err(ApiError::internal(other)),
            },
        }
    }

    /// Holds delivery `id`'s recovery mark until `until` (Unix ms) if it
    /// is still `request`'s (its attempt not made yet): true when it was.
    pub async fn hold_recovery(&self, id: Uuid, request: Uuid, until: i64) -> ApiResult<bool> {
        let result = self
            .0
            .update(keys::delivery_pk(id), DELIVERY_SK)
            .update_expression("SET recovery_until = :until")
            .condition_expression("attribute_exists(pk) AND recovery = :request")
            .expression_attribute_values(":request", s(request.to_string()))
            .expression_attribute_values(":until", n(until))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(error) => match error.into_service_error() {
                UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
                other => Err(ApiError::internal(other)),
            },
        }
    }

    /// A page of `webhook`'s attempts, newest first, from `start`.
    pub async fn attempts(
        &self,
        webhook: Uuid,
        log: AttemptLog,
        start: Option<Position>,
        limit: usize,
    ) -> ApiResult<(Vec<DeliveryAttempt>, Option<Position>)> {
        let store = self.0;
        let pk = log.pk(webhook);
        let out = store
            .db
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(pk.clone()))
            .scan_index_forward(false)
            .consistent_read(true)
            .limit(i32::try_from(limit + 1).unwrap_or(i32::MAX))
            .set_exclusive_start_key(start.map(|p| p.into_iter().map(|(k, v)| (k, s(v))).collect()))
            .send()
            .await
            .map_err(sdk_error)?;
        // Expired attempts are the oldest: they end the list.
        let mut rows: Vec<DeliveryAttempt> = out
            .items
            .unwrap_or_default()
            .into_iter()
            .take_while(live)
            .map(from_item)
            .collect::<ApiResult<_>>()?;
        let next = (rows.len() > limit).then(|| {
            rows.truncate(limit);
            let last = rows.last().expect("a full page has a last row");
            Position::from([
                (keys::PK.to_owned(), pk.clone()),
                (
                    keys::SK.to_owned(),
                    keys::attempt_sk(last.attempted_at, last.delivery_id, last.attempt),
                ),
            ])
        });
        Ok((rows, next))
    }
}
