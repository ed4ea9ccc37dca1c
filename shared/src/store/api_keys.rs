//! API keys: the auth item (looked up by hash), its entry in the
//! organization's key index (`KEYS#<org>`: what operators list, revoke
//! and switch), and its rate-limit counters in an item of their own
//! (`RATE#<hash>`).
//!
//! Only operators write key items and the index: every API function's
//! role is refused any write to them, so a compromised function can
//! neither mint a key nor widen, un-revoke or re-entitle one, nor steer an
//! operator's command: revocation, deactivation and entitlement switches
//! find an organization's keys in the index, and change a key's item only
//! on condition that it is the key (id and organization) the index names.
//! The API writes only the counters' item, which holds no authority.
//!
//! One request costs one round trip here: `admit` reads the key (strongly
//! consistent, so a revocation takes effect on the very next request) and
//! counts the request in the key's current window at once, in parallel; a
//! count for a key that may not make the request is given back. So
//! authentication, authorization and the budget take one round trip.
//!
//! The organization item counts its live keys (`live_keys`) and versions
//! its set of keys (`keys_version`): creating or revoking a key bumps the
//! version in the same transaction, conditioned on the organization being
//! active with the entitlement copied, so a key made while the organization
//! changes reads it again.

use crate::model::Timestamp;
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::calls::CallCounter;
use super::item::{Item, from_item, get_u64, key, n, s, to_item};
use super::keys::{self, API_KEY_SK, ORG_SK};
use super::tx::{put, raced, retry_races, transact};
use super::{Store, new_or_old, query_all, sdk_error, unless_condition_failed};
use crate::auth::key::{self as api_key, KeyHash};
use crate::auth::scope::Scope;
use crate::error::{ApiError, ApiResult, codes};
use crate::model::org::STATUS_ACTIVE;

pub struct ApiKeys<'a>(pub(super) &'a Store);

pub use crate::auth::decision::ApiKeyRecord;

/// Keys changed in one transaction by a change to every key (two items
/// each, within the 100 actions of a transaction).
const KEYS_PER_TRANSACTION: usize = 49;

#[derive(Serialize, Deserialize)]
struct KeyItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    record: ApiKeyRecord,
}

fn timestamp(at: Timestamp) -> AttributeValue {
    s(at.to_string())
}

fn update(table: &str, key: Item) -> UpdateBuilder {
    Update::builder().table_name(table).set_key(Some(key))
}

impl ApiKeys<'_> {
    /// Issues a key; returns the plaintext (shown once) and the record.
    pub async fn create(
        &self,
        org: Uuid,
        scopes: Vec<Scope>,
        expires_at: Option<Timestamp>,
        label: Option<String>,
        prefix: &str,
    ) -> ApiResult<(String, ApiKeyRecord)> {
        retry_races(|| self.create_once(org, &scopes, expires_at, &label, prefix)).await
    }

    async fn create_once(
        &self,
        org: Uuid,
        scopes: &[Scope],
        expires_at: Option<Timestamp>,
        label: &Option<String>,
        prefix: &str,
    ) -> ApiResult<(String, ApiKeyRecord)> {
        let store = self.0;
        let table = store.table();
        let org_record = store
            .orgs()
            .get(org)
            .await?
            .ok_or_else(ApiError::org_not_found)?;
        let new = api_key::generate(prefix);
        let record = ApiKeyRecord {
            key_id: Uuid::now_v7(),
            org_id: org,
            key_hash: new.hash.to_hex(),
            scopes: scopes.to_vec(),
            label: label.clone(),
            public_api: org_record.public_api,
            org_active: true,
            created_at: crate::model::now(),
            expires_at,
            revoked_at: None,
        };
        // The organization is still active with the entitlement copied: a
        // key made while an entitlement switch or a deactivation changes the
        // organization fails here, reads it again, and is made as it now is.
        let org_update = update(table, key(keys::org_pk(org), ORG_SK))
            .update_expression("ADD live_keys :one, keys_version :one")
            .condition_expression("#status = :active AND public_api = :flag")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":active", s(STATUS_ACTIVE))
            .expression_attribute_values(":flag", AttributeValue::Bool(record.public_api))
            .expression_attribute_values(":one", n(1))
            .build()
            .map_err(ApiError::internal)?;
        let actions = vec![
            put(
                table,
                to_item(&KeyItem {
                    pk: keys::api_key_pk(&new.hash),
                    sk: API_KEY_SK.into(),
                    record: record.clone(),
                })?,
                Some("attribute_not_exists(pk)"),
            )?,
            put(
                table,
                to_item(&index_entry(&record))?,
                Some("attribute_not_exists(pk)"),
            )?,
            TransactWriteItem::builder().update(org_update).build(),
            // Its counters, so its first request counts like any other.
            put(
                table,
                [
                    (keys::PK.to_owned(), s(keys::rate_pk(&new.hash))),
                    (keys::SK.to_owned(), s(keys::RATE_SK)),
                ]
                .into(),
                Some("attribute_not_exists(pk)"),
            )?,
        ];
        transact(store, actions, &[(2, raced)]).await?;
        Ok((new.plaintext, record))
    }

    /// The key with this hash, read strongly consistently so a revocation
    /// takes effect on the very next request.
    pub async fn lookup(&self, hash: &KeyHash) -> ApiResult<Option<ApiKeyRecord>> {
        let store = self.0;
        let out = store
            .db
            .get_item()
            .table_name(store.table())
            .set_key(Some(key(keys::api_key_pk(hash), API_KEY_SK)))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_error)?;
        out.item
            .map(|item| from_item::<KeyItem>(item).map(|k| k.record))
            .transpose()
    }

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

    /// The organization's keys, revoked ones included, oldest first, from
    /// its key index (strongly consistent). No secrets are stored.
    pub async fn list(&self, org: Uuid) -> ApiResult<Vec<ApiKeyRecord>> {
        let store = self.0;
        let query = store.prefix_query(keys::key_index_pk(org), keys::KEY_INDEX_SK_PREFIX);
        let records: Vec<ApiKeyRecord> = query_all(query)
            .await?
            .into_iter()
            .map(|item| from_item::<KeyItem>(item).map(|k| k.record))
            .collect::<ApiResult<_>>()?;
        Ok(records.into_iter().filter(|k| k.org_id == org).collect())
    }

    /// Writes the index of the keys of a table from before the index: one
    /// entry per key item (never from the summaries in `ORG#`, which the
    /// API may write) that has none. An operator's upgrade step (`admin
    /// index-keys`): it reads the whole table (a Scan, never in a request's
    /// path). Returns how many entries it wrote.
    pub async fn index_every_key(&self) -> ApiResult<usize> {
        let store = self.0;
        let items = super::scan_all(
            store,
            "begins_with(pk, :prefix) AND sk = :sk",
            &[
                (":prefix", s(keys::API_KEY_PK_PREFIX)),
                (":sk", s(API_KEY_SK)),
            ],
        )
        .await?;
        let mut written = 0;
        for item in items {
            let record = from_item::<KeyItem>(item)?.record;
            let put = store
                .db
                .put_item()
                .table_name(store.table())
                .set_item(Some(to_item(&index_entry(&record))?))
                .condition_expression("attribute_not_exists(pk)")
                .send()
                .await;
            match put {
                Ok(_) => written += 1,
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|e| e.is_conditional_check_failed_exception()) => {}
                Err(e) => return Err(sdk_error(e)),
            }
        }
        Ok(written)
    }

    /// Revokes a key for good: its item (on condition that it is the key
    /// the organization's index names), its index entry and the
    /// organization's key count, in one transaction.
    pub async fn revoke(&self, org: Uuid, key_id: Uuid) -> ApiResult<ApiKeyRecord> {
        let store = self.0;
        let table = store.table();
        let not_found =
            || codes::operators::API_KEY_NOT_FOUND.with("no such key in this organization");
        let entry = store
            .get_item(key(keys::key_index_pk(org), keys::key_index_sk(key_id)))
            .await?
            .map(|item| from_item::<KeyItem>(item).map(|k| k.record))
            .transpose()?
            .filter(|k| k.org_id == org && k.key_id == key_id)
            .ok_or_else(not_found)?;
        let hash = hash_of(&entry)?;
        // The key item itself (not the index's copy) says what the key is.
        let mut record = self
            .lookup(&hash)
            .await?
            .filter(|k| k.org_id == org && k.key_id == key_id)
            .ok_or_else(not_found)?;
        let at = crate::model::now();
        record.revoked_at = Some(at);
        let revoke_key = update(table, key(keys::api_key_pk(&hash), API_KEY_SK))
            .update_expression("SET revoked_at = :at")
            .condition_expression(
                "attribute_exists(pk) AND attribute_not_exists(revoked_at) \
                 AND key_id = :key_id AND org_id = :org",
            )
            .expression_attribute_values(":at", timestamp(at))
            .expression_attribute_values(":key_id", s(key_id.to_string()))
            .expression_attribute_values(":org", s(org.to_string()))
            .build()
            .map_err(ApiError::internal)?;
        let count = update(table, key(keys::org_pk(org), ORG_SK))
            .update_expression("ADD live_keys :minus_one, keys_version :one")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":minus_one", n(-1))
            .expression_attribute_values(":one", n(1))
            .build()
            .map_err(ApiError::internal)?;
        let actions = vec![
            TransactWriteItem::builder().update(revoke_key).build(),
            put(table, to_item(&index_entry(&record))?, None)?,
            TransactWriteItem::builder().update(count).build(),
        ];
        let already = || codes::operators::ALREADY_REVOKED.with("the key is already revoked");
        transact(store, actions, &[(0, already)]).await?;
        Ok(record)
    }

    /// Switches the organization's public-API entitlement: the organization
    /// first (a key made from then on copies the new value), then every
    /// live key. Effective for every key when it returns; running it again
    /// finishes what an interrupted switch left.
    pub async fn set_entitlement(&self, org: Uuid, enabled: bool) -> ApiResult<()> {
        let store = self.0;
        let flag = AttributeValue::Bool(enabled);
        let org_update = update(store.table(), key(keys::org_pk(org), ORG_SK))
            .update_expression("SET public_api = :flag ADD keys_version :one")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":flag", flag.clone())
            .expression_attribute_values(":one", n(1))
            .build()
            .map_err(ApiError::internal)?;
        let not_found = || ApiError::org_not_found();
        transact(
            store,
            vec![TransactWriteItem::builder().update(org_update).build()],
            &[(0, not_found)],
        )
        .await?;
        self.change_every_key(org, |key_update| {
            key_update
                .update_expression("SET public_api = :flag")
                .expression_attribute_values(":flag", flag.clone())
        })
        .await
    }

    /// Applies `key_change` to the item and the index entry of every live
    /// key of `org` (as its index lists them), 49 keys a transaction, each
    /// key's item on condition that it is the key the entry names. Call it
    /// after changing the organization: keys made from then on read the
    /// organization as changed (their creation is conditioned on it), and
    /// every older key is in the index.
    pub(crate) async fn change_every_key(
        &self,
        org: Uuid,
        key_change: impl Fn(UpdateBuilder) -> UpdateBuilder,
    ) -> ApiResult<()> {
        let store = self.0;
        let table = store.table();
        let live: Vec<ApiKeyRecord> = self
            .list(org)
            .await?
            .into_iter()
            .filter(|k| k.revoked_at.is_none())
            .collect();
        for chunk in live.chunks(KEYS_PER_TRANSACTION) {
            let mut actions = Vec::with_capacity(2 * chunk.len());
            for record in chunk {
                let the_key = key_change(update(
                    table,
                    key(keys::api_key_pk(&hash_of(record)?), API_KEY_SK),
                ))
                .condition_expression("attribute_exists(pk) AND key_id = :key_id AND org_id = :org")
                .expression_attribute_values(":key_id", s(record.key_id.to_string()))
                .expression_attribute_values(":org", s(org.to_string()));
                let entry = key_change(update(
                    table,
                    key(keys::key_index_pk(org), keys::key_index_sk(record.key_id)),
                ))
                .condition_expression("attribute_exists(pk)");
                for change in [the_key, entry] {
                    let change = change.build().map_err(ApiError::internal)?;
                    actions.push(TransactWriteItem::builder().update(change).build());
                }
            }
            transact(store, actions, &[]).await?;
        }
        Ok(())
    }
}

/// The index entry of `record` (`keys::key_index_pk`).
fn index_entry(record: &ApiKeyRecord) -> KeyItem {
    KeyItem {
        pk: keys::key_index_pk(record.org_id),
        sk: keys::key_index_sk(record.key_id),
        record: record.clone(),
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

type UpdateBuilder = aws_sdk_dynamodb::types::builders::UpdateBuilder;

fn hash_of(record: &ApiKeyRecord) -> ApiResult<KeyHash> {
    KeyHash::from_hex(&record.key_hash)
        .ok_or_else(|| ApiError::internal("stored key hash is not hex"))
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
