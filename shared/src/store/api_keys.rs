//! API keys: the auth item (looked up by hash) and its summary in the
//! organization partition (for listing, revoking and entitlement changes).
//!
//! The organization item counts its live keys (`live_keys`, for the cap)
//! and versions its set of keys (`keys_version`): creating or revoking a key
//! bumps the version in the same transaction, and a change that must reach
//! every key (entitlement switch, deactivation) conditions on the version it
//! read when it listed the keys, so no key created meanwhile is missed.

use crate::model::Timestamp;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::item::{Item, from_item, key, n, s, to_item};
use super::keys::{self, API_KEY_SK, ORG_SK};
use super::tx::{concurrent_update, is_raced, put, raced, retry_races, transact};
use super::{Store, query_all, sdk_error};
use crate::auth::key::{self as api_key, KeyHash};
use crate::auth::scope::Scope;
use crate::error::{ApiError, ApiResult};
use crate::model::org::STATUS_ACTIVE;

pub struct ApiKeys<'a>(pub(super) &'a Store);

/// Most live (not revoked) keys one organization may hold: deactivation
/// updates the organization, both items of every live key, and the parent's
/// child summary and child count in one transaction (at most 100 actions).
pub const MAX_KEYS_PER_ORG: u32 = 48;

/// A key as stored: never the key itself, only its SHA-256.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ApiKeyRecord {
    pub key_id: Uuid,
    pub org_id: Uuid,
    pub key_hash: String,
    pub scopes: Vec<Scope>,
    pub label: Option<String>,
    /// The organization's public-API entitlement, kept in step by
    /// `set_entitlement` so authentication needs one read.
    pub public_api: bool,
    /// Whether the organization is active, kept in step by `Orgs::deactivate`
    /// for the same reason.
    #[serde(default = "active")]
    pub org_active: bool,
    pub created_at: Timestamp,
    /// Absent attributes, not NULL: conditions test `attribute_not_exists`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Timestamp>,
}

#[derive(Serialize, Deserialize)]
struct KeyItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    record: ApiKeyRecord,
}

fn active() -> bool {
    true
}

fn timestamp(at: Timestamp) -> AttributeValue {
    s(at.to_string())
}

fn update(table: &str, key: Item) -> UpdateBuilder {
    Update::builder().table_name(table).set_key(Some(key))
}

impl ApiKeys<'_> {
    /// Issues a key; returns the plaintext (shown once) and the record. 409
    /// `too_many_keys` at the cap of live keys.
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
        if org_record.live_keys >= MAX_KEYS_PER_ORG {
            return Err(too_many_keys());
        }
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
        // The organization is still active with the entitlement copied, and
        // under the cap; the new version makes a concurrent entitlement switch
        // or deactivation list the keys again.
        let org_update = update(table, key(keys::org_pk(org), ORG_SK))
            .update_expression("ADD live_keys :one, keys_version :one")
            .condition_expression(
                "#status = :active AND public_api = :flag \
                 AND (attribute_not_exists(live_keys) OR live_keys < :cap)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":active", s(STATUS_ACTIVE))
            .expression_attribute_values(":flag", AttributeValue::Bool(record.public_api))
            .expression_attribute_values(":cap", n(MAX_KEYS_PER_ORG))
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
                to_item(&KeyItem {
                    pk: keys::org_pk(org),
                    sk: keys::api_key_summary_sk(record.key_id),
                    record: record.clone(),
                })?,
                None,
            )?,
            TransactWriteItem::builder().update(org_update).build(),
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

    /// The organization's keys, revoked ones included, oldest first. No
    /// secrets are stored.
    pub async fn list(&self, org: Uuid) -> ApiResult<Vec<ApiKeyRecord>> {
        let store = self.0;
        let query = store.prefix_query(keys::org_pk(org), keys::API_KEY_SUMMARY_PREFIX);
        query_all(query)
            .await?
            .into_iter()
            .map(|item| from_item::<KeyItem>(item).map(|k| k.record))
            .collect()
    }

    /// Revokes a key for good: both items and the organization's key count,
    /// in one transaction.
    pub async fn revoke(&self, org: Uuid, key_id: Uuid) -> ApiResult<ApiKeyRecord> {
        let store = self.0;
        let table = store.table();
        let not_found = || ApiError::NotFound {
            code: "api_key_not_found",
            message: "no such key in this organization",
        };
        let mut record = self
            .list(org)
            .await?
            .into_iter()
            .find(|k| k.key_id == key_id)
            .ok_or_else(not_found)?;
        let at = crate::model::now();
        let revoke = |item_key: Item| {
            update(table, item_key)
                .update_expression("SET revoked_at = :at")
                .condition_expression("attribute_exists(pk) AND attribute_not_exists(revoked_at)")
                .expression_attribute_values(":at", timestamp(at))
                .build()
                .map(|u| TransactWriteItem::builder().update(u).build())
                .map_err(ApiError::internal)
        };
        let count = update(table, key(keys::org_pk(org), ORG_SK))
            .update_expression("ADD live_keys :minus_one, keys_version :one")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":minus_one", n(-1))
            .expression_attribute_values(":one", n(1))
            .build()
            .map_err(ApiError::internal)?;
        let actions = vec![
            revoke(key(keys::api_key_pk(&hash_of(&record)?), API_KEY_SK))?,
            revoke(key(keys::org_pk(org), keys::api_key_summary_sk(key_id)))?,
            TransactWriteItem::builder().update(count).build(),
        ];
        let already = || ApiError::Conflict {
            code: "already_revoked",
            message: "the key is already revoked".into(),
        };
        transact(store, actions, &[(0, already), (1, already)]).await?;
        record.revoked_at = Some(at);
        Ok(record)
    }

    /// Switches the organization's public-API entitlement, on the
    /// organization and on every live key of it, in one transaction.
    pub async fn set_entitlement(&self, org: Uuid, enabled: bool) -> ApiResult<()> {
        let flag = AttributeValue::Bool(enabled);
        self.change_every_key(
            org,
            "attribute_exists(pk)",
            |org_update| {
                org_update
                    .update_expression("SET public_api = :flag ADD keys_version :one")
                    .expression_attribute_values(":flag", flag.clone())
            },
            |key_update| {
                key_update
                    .update_expression("SET public_api = :flag")
                    .expression_attribute_values(":flag", flag.clone())
            },
            Vec::new(),
        )
        .await
    }

    /// One transaction that changes the active organization `org`
    /// (`org_change`, which must `ADD keys_version :one`), both items of
    /// every live key (`key_change`) and the `more` actions, conditioned on
    /// `condition` and on the organization's keys being the ones listed: a
    /// key created or revoked meanwhile makes it list again and retry. 404
    /// `org_not_found` when the organization is missing or not active.
    pub(crate) async fn change_every_key(
        &self,
        org: Uuid,
        condition: &str,
        org_change: impl Fn(UpdateBuilder) -> UpdateBuilder,
        key_change: impl Fn(UpdateBuilder) -> UpdateBuilder,
        more: Vec<TransactWriteItem>,
    ) -> ApiResult<()> {
        let store = self.0;
        let table = store.table();
        for attempt in 0..SWITCH_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(25 * attempt)).await;
            }
            let version = store
                .orgs()
                .keys_version(org)
                .await?
                .ok_or_else(ApiError::org_not_found)?;
            let live: Vec<ApiKeyRecord> = self
                .list(org)
                .await?
                .into_iter()
                .filter(|k| k.revoked_at.is_none())
                .collect();
            let org_update = org_change(update(table, key(keys::org_pk(org), ORG_SK)))
                .condition_expression(format!("({}) AND ({condition})", version_is(version)))
                .expression_attribute_values(":version", n(version))
                .expression_attribute_values(":one", n(1))
                .build()
                .map_err(ApiError::internal)?;
            let mut actions = vec![TransactWriteItem::builder().update(org_update).build()];
            for record in &live {
                for item_key in [
                    key(keys::api_key_pk(&hash_of(record)?), API_KEY_SK),
                    key(keys::org_pk(org), keys::api_key_summary_sk(record.key_id)),
                ] {
                    let change = key_change(update(table, item_key))
                        .condition_expression("attribute_exists(pk)")
                        .build()
                        .map_err(ApiError::internal)?;
                    actions.push(TransactWriteItem::builder().update(change).build());
                }
            }
            actions.extend(more.iter().cloned());
            match transact(store, actions, &[(0, raced)]).await {
                Err(e) if is_raced(&e) => continue,
                other => return other,
            }
        }
        Err(concurrent_update())
    }
}

type UpdateBuilder = aws_sdk_dynamodb::types::builders::UpdateBuilder;

/// Attempts of a change to every key while keys keep being created.
const SWITCH_ATTEMPTS: u64 = 8;

/// Condition: the organization's `keys_version` is still `:version`
/// (organizations made before the version existed have none: version 0).
fn version_is(version: u64) -> &'static str {
    if version == 0 {
        "attribute_not_exists(keys_version) OR keys_version = :version"
    } else {
        "keys_version = :version"
    }
}

fn hash_of(record: &ApiKeyRecord) -> ApiResult<KeyHash> {
    KeyHash::from_hex(&record.key_hash)
        .ok_or_else(|| ApiError::internal("stored key hash is not hex"))
}

fn too_many_keys() -> ApiError {
    ApiError::Conflict {
        code: "too_many_keys",
        message: format!(
            "an organization holds at most {MAX_KEYS_PER_ORG} live keys; revoke keys it no longer uses"
        ),
    }
}
