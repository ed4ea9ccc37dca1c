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
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::key::{self as api_key, KeyHash};
use crate::auth::scope::Scope;
use crate::error::{ApiError, ApiResult, codes};
use crate::model::org::STATUS_ACTIVE;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{Item, from_item, key, n, s, to_item};
use crate::store::engine::keys::{self, API_KEY_SK, ORG_SK};
use crate::store::engine::query::query_all;
use crate::store::exactly_once::tx::{put, raced, retry_races, transact};

mod counters;

pub use counters::{KeyState, Limits};

pub struct ApiKeys<'a>(pub(in crate::store) &'a Store);

pub use crate::auth::decision::ApiKeyRecord;
use crate::store::engine::query;

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
        let items = query::scan_all(
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

type UpdateBuilder = aws_sdk_dynamodb::types::builders::UpdateBuilder;

fn hash_of(record: &ApiKeyRecord) -> ApiResult<KeyHash> {
    KeyHash::from_hex(&record.key_hash)
        .ok_or_else(|| ApiError::internal("stored key hash is not hex"))
}
