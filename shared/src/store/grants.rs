//! Grants: `ORG#<granter>` / `GRANT#<grantee>` (one per grantee, so create
//! is an idempotent upsert), indexed by grantee in `gsi1`.

use std::collections::HashSet;

use aws_sdk_dynamodb::types::{KeysAndAttributes, ReturnValue};
use uuid::Uuid;

use super::item::{from_item, get_s, key, s};
use super::records::{Record, sk};
use super::{Store, keys, query_records, sdk_error};
use crate::error::codes;
use crate::error::{ApiError, ApiResult};
use crate::model::grant::{Grant, GrantScope};
use crate::model::org::STATUS_ACTIVE;

pub struct Grants<'a>(pub(super) &'a Store);

fn grant_sk(grantee: Uuid) -> String {
    format!("GRANT#{grantee}")
}

/// The item of the grant `granter` issued to `grantee`.
pub(super) fn grant_key(granter: Uuid, grantee: Uuid) -> super::item::Item {
    key(keys::org_pk(granter), grant_sk(grantee))
}

fn grantee_pk(grantee: Uuid) -> String {
    format!("GRANTEE#{grantee}")
}

pub fn grant_not_found() -> ApiError {
    codes::GRANT_NOT_FOUND.with("this organization has issued no grant to that organization")
}

impl Grants<'_> {
    /// Creates or updates the grant to `grantee`; `true` when created.
    pub async fn upsert(
        &self,
        granter: Uuid,
        grantee: Uuid,
        scope: GrantScope,
    ) -> ApiResult<(Grant, bool)> {
        let store = self.0;
        let now = crate::model::now();
        let new_id = Uuid::now_v7();
        let out = store
            .update(keys::org_pk(granter), grant_sk(grantee))
            .update_expression(
                "SET id = if_not_exists(id, :id), created_at = if_not_exists(created_at, :now), updated_at = :now, \
                 #scope = :scope, granter_org_id = :granter, grantee_org_id = :grantee, gsi1pk = :gpk, gsi1sk = :gsk",
            )
            .expression_attribute_names("#scope", "scope")
            .expression_attribute_values(":id", s(new_id.to_string()))
            .expression_attribute_values(":now", s(now.to_string()))
            .expression_attribute_values(
                ":scope",
                s(serde_json::to_value(scope).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()),
            )
            .expression_attribute_values(":granter", s(granter.to_string()))
            .expression_attribute_values(":grantee", s(grantee.to_string()))
            .expression_attribute_values(":gpk", s(grantee_pk(grantee)))
            .expression_attribute_values(":gsk", s(grant_sk(granter)))
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .map_err(sdk_error)?;
        let grant: Grant = from_item(out.attributes.unwrap_or_default())?;
        let created = grant.id == new_id;
        Ok((grant, created))
    }

    /// Grants `granter` has issued, oldest first.
    pub async fn issued(&self, granter: Uuid) -> ApiResult<Vec<Grant>> {
        let store = self.0;
        let query = store.prefix_query(keys::org_pk(granter), "GRANT#");
        let mut grants: Vec<Grant> = query_records(query).await?;
        grants.sort_by_key(|g| (g.created_at, g.id));
        Ok(grants)
    }

    /// Revokes the grant to `grantee`; 404 `grant_not_found` when none.
    pub async fn revoke(&self, granter: Uuid, grantee: Uuid) -> ApiResult<Grant> {
        let store = self.0;
        let out = store
            .db
            .delete_item()
            .table_name(store.table())
            .set_key(Some(key(keys::org_pk(granter), grant_sk(grantee))))
            .return_values(ReturnValue::AllOld)
            .send()
            .await
            .map_err(sdk_error)?;
        out.attributes
            .map(from_item)
            .transpose()?
            .ok_or_else(grant_not_found)
    }

    /// Grants `grantee` has received (from the grantee index).
    pub async fn received(&self, grantee: Uuid) -> ApiResult<Vec<Grant>> {
        let store = self.0;
        let page = store
            .db
            .query()
            .table_name(store.table())
            .index_name("gsi1")
            .key_condition_expression("gsi1pk = :pk")
            .expression_attribute_values(":pk", s(grantee_pk(grantee)))
            .send()
            .await
            .map_err(sdk_error)?;
        page.items
            .unwrap_or_default()
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Record `id` of kind `R` of an active organization that granted
    /// `grantee` access, with the grant's scope: one query for the grants
    /// received, then one batch read per 50 granters of the record and the
    /// granter's organization item (a deactivated granter's grants give
    /// nothing).
    pub async fn granted_record<R: Record>(
        &self,
        grantee: Uuid,
        id: Uuid,
    ) -> ApiResult<Option<(R, GrantScope)>> {
        let store = self.0;
        let grants = self.received(grantee).await?;
        for chunk in grants.chunks(50) {
            let mut wanted = KeysAndAttributes::builder().consistent_read(true);
            for grant in chunk {
                let granter = keys::org_pk(grant.granter_org_id);
                wanted = wanted
                    .keys(key(granter.clone(), sk::<R>(id)))
                    .keys(key(granter, keys::ORG_SK));
            }
            let out = store
                .db
                .batch_get_item()
                .request_items(store.table(), wanted.build().map_err(ApiError::internal)?)
                .send()
                .await
                .map_err(sdk_error)?;
            let items = out
                .responses
                .unwrap_or_default()
                .remove(store.table())
                .unwrap_or_default();
            let active: HashSet<&str> = items
                .iter()
                .filter(|item| {
                    get_s(item, keys::SK) == Some(keys::ORG_SK)
                        && get_s(item, "status") == Some(STATUS_ACTIVE)
                })
                .filter_map(|item| get_s(item, keys::PK))
                .collect();
            let found = items.iter().find(|item| {
                get_s(item, keys::SK) != Some(keys::ORG_SK)
                    && get_s(item, keys::PK).is_some_and(|pk| active.contains(pk))
            });
            if let Some(item) = found {
                let record: R = from_item(item.clone())?;
                let scope = chunk
                    .iter()
                    .find(|g| g.granter_org_id == record.org_id())
                    .map(|g| g.scope);
                return Ok(scope.map(|scope| (record, scope)));
            }
        }
        Ok(None)
    }
}
