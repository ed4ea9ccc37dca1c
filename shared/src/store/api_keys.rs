//! API keys: the auth item (looked up by hash) and its summary in the
//! organization partition (for listing, revoking and entitlement changes).

use crate::model::Timestamp;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::item::{Item, from_item, key, s, to_item};
use super::keys::{self, API_KEY_SK, ORG_SK};
use super::tx::{put, transact};
use super::{Store, query_all, sdk_error};
use crate::auth::key::{self as api_key, KeyHash};
use crate::auth::scope::Scope;
use crate::error::{ApiError, ApiResult};
use crate::model::org::STATUS_ACTIVE;

pub struct ApiKeys<'a>(pub(super) &'a Store);

/// Most keys one organization may hold: an entitlement change updates the
/// organization and both items of every key in one transaction (at most 100
/// actions).
pub const MAX_KEYS_PER_ORG: usize = 49;

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

fn timestamp(at: Timestamp) -> AttributeValue {
    s(at.to_string())
}

fn update(table: &str, key: Item) -> aws_sdk_dynamodb::types::builders::UpdateBuilder {
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
        let store = self.0;
        let table = store.table();
        let org_record = store
            .orgs()
            .get(org)
            .await?
            .ok_or_else(ApiError::org_not_found)?;
        if self.list(org).await?.len() >= MAX_KEYS_PER_ORG {
            return Err(ApiError::Conflict {
                code: "too_many_keys",
                message: format!(
                    "an organization holds at most {MAX_KEYS_PER_ORG} keys; delete or revoke old ones"
                ),
            });
        }
        let new = api_key::generate(prefix);
        let record = ApiKeyRecord {
            key_id: Uuid::now_v7(),
            org_id: org,
            key_hash: new.hash.to_hex(),
            scopes,
            label,
            public_api: org_record.public_api,
            created_at: crate::model::now(),
            expires_at,
            revoked_at: None,
        };
        // The entitlement copied above is still the organization's.
        let org_check = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(key(keys::org_pk(org), ORG_SK)))
            .condition_expression("public_api = :flag AND #status = :active")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":flag", AttributeValue::Bool(record.public_api))
            .expression_attribute_values(":active", s(STATUS_ACTIVE))
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
            TransactWriteItem::builder()
                .condition_check(org_check)
                .build(),
        ];
        transact(
            store,
            actions,
            &[(2, || ApiError::Conflict {
                code: "org_changed",
                message: "the organization changed meanwhile; try again".into(),
            })],
        )
        .await?;
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

    /// The organization's keys, oldest first. No secrets are stored.
    pub async fn list(&self, org: Uuid) -> ApiResult<Vec<ApiKeyRecord>> {
        let store = self.0;
        let query = store
            .db
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(keys::org_pk(org)))
            .expression_attribute_values(":prefix", s(keys::API_KEY_SUMMARY_PREFIX))
            .consistent_read(true);
        query_all(query)
            .await?
            .into_iter()
            .map(|item| from_item::<KeyItem>(item).map(|k| k.record))
            .collect()
    }

    /// Revokes a key for good (both items, one transaction).
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
        let hash = KeyHash::from_hex(&record.key_hash)
            .ok_or_else(|| ApiError::internal("stored key hash is not hex"))?;
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
        let actions = vec![
            revoke(key(keys::api_key_pk(&hash), API_KEY_SK))?,
            revoke(key(keys::org_pk(org), keys::api_key_summary_sk(key_id)))?,
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
    /// organization and on every key of it, in one transaction.
    pub async fn set_entitlement(&self, org: Uuid, enabled: bool) -> ApiResult<()> {
        let store = self.0;
        let table = store.table();
        let keys_of_org = self.list(org).await?;
        let flag = AttributeValue::Bool(enabled);
        let set = |item_key: Item| {
            update(table, item_key)
                .update_expression("SET public_api = :flag")
                .condition_expression("attribute_exists(pk)")
                .expression_attribute_values(":flag", flag.clone())
                .build()
                .map(|u| TransactWriteItem::builder().update(u).build())
                .map_err(ApiError::internal)
        };
        let mut actions = vec![set(key(keys::org_pk(org), ORG_SK))?];
        for record in &keys_of_org {
            let hash = KeyHash::from_hex(&record.key_hash)
                .ok_or_else(|| ApiError::internal("stored key hash is not hex"))?;
            actions.push(set(key(keys::api_key_pk(&hash), API_KEY_SK))?);
            actions.push(set(key(
                keys::org_pk(org),
                keys::api_key_summary_sk(record.key_id),
            ))?);
        }
        if actions.len() > 100 {
            return Err(ApiError::internal(
                "too many keys to switch entitlement in one transaction",
            ));
        }
        transact(store, actions, &[(0, ApiError::org_not_found)]).await
    }
}
