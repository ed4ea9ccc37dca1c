//! Grants: `ORG#<granter>` / `GRANT#<grantee>` (one per grantee, so create
//! is an idempotent upsert), indexed by grantee in `gsi1`.

use std::collections::HashSet;

use aws_sdk_dynamodb::types::{KeysAndAttributes, Put, ReturnValue, TransactWriteItem};
use uuid::Uuid;

use crate::error::codes;
use crate::error::{ApiError, ApiResult};
use crate::model::grant::{Grant, GrantScope};
use crate::model::org::STATUS_ACTIVE;
use crate::store::engine::calls::CallCounter;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item;
use crate::store::engine::item::{from_item, get_s, key, s, to_item};
use crate::store::engine::keys;
use crate::store::engine::query::query_records;
use crate::store::exactly_once::outcome;
use crate::store::exactly_once::tx::{raced, retry_races, transact};
use crate::store::records::org_records::{Record, record_key};

pub struct Grants<'a>(pub(in crate::store) &'a Store);

fn grant_sk(grantee: Uuid) -> String {
    format!("GRANT#{grantee}")
}

/// The item of the grant `granter` issued to `grantee`.
pub(in crate::store) fn grant_key(granter: Uuid, grantee: Uuid) -> item::Item {
    key(keys::org_pk(granter), grant_sk(grantee))
}

fn grantee_pk(grantee: Uuid) -> String {
    format!("GRANTEE#{grantee}")
}

pub fn grant_not_found() -> ApiError {
    codes::GRANT_NOT_FOUND.with("this organization has issued no grant to that organization")
}

impl Grants<'_> {
    /// Creates or updates the grant to `grantee` (422 `grantee_not_found`
    /// when no such organization exists); `true` when created. The grantee
    /// and the grant are read at once, then the grant is written on
    /// condition that nobody changed it meanwhile (retried on a race), with
    /// the request's answer for it (`outcome`).
    pub async fn upsert(
        &self,
        granter: Uuid,
        grantee: Uuid,
        scope: GrantScope,
    ) -> ApiResult<(Grant, bool)> {
        let store = self.0;
        let orgs = store.orgs();
        retry_races(|| async {
            let (found, current) = CallCounter::together(async {
                tokio::join!(
                    orgs.get(grantee),
                    store.get_item(grant_key(granter, grantee))
                )
            })
            .await;
            if found?.is_none() {
                return Err(codes::GRANTEE_NOT_FOUND.with("grantee_org_id names no organization"));
            }
            let current: Option<Grant> = current?.map(from_item).transpose()?;
            let now = crate::model::now();
            let (grant, unchanged_since) = match current {
                Some(current) => {
                    let was = current.updated_at;
                    let grant = Grant {
                        scope,
                        updated_at: now,
                        ..current
                    };
                    (grant, Some(was))
                }
                None => {
                    let grant = Grant {
                        id: Uuid::now_v7(),
                        granter_org_id: granter,
                        grantee_org_id: grantee,
                        scope,
                        created_at: now,
                        updated_at: now,
                    };
                    (grant, None)
                }
            };
            let mut item = to_item(&grant)?;
            item.extend([
                (keys::PK.to_owned(), s(keys::org_pk(granter))),
                (keys::SK.to_owned(), s(grant_sk(grantee))),
                ("gsi1pk".to_owned(), s(grantee_pk(grantee))),
                ("gsi1sk".to_owned(), s(grant_sk(granter))),
            ]);
            let put = Put::builder()
                .table_name(store.table())
                .set_item(Some(item));
            let put = match unchanged_since {
                Some(was) => put
                    .condition_expression("updated_at = :was")
                    .expression_attribute_values(":was", s(was.to_string())),
                None => put.condition_expression("attribute_not_exists(pk)"),
            };
            let put = put.build().map_err(ApiError::internal)?;
            let written = (grant, unchanged_since.is_none());
            outcome::render(&written).await?;
            let actions = vec![TransactWriteItem::builder().put(put).build()];
            transact(store, actions, &[(0, raced)]).await?;
            Ok(written)
        })
        .await
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
                let granter = grant.granter_org_id;
                wanted = wanted
                    .keys(record_key::<R>(granter, id))
                    .keys(key(keys::org_pk(granter), keys::ORG_SK));
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
            // The record, in whichever partition of its granter its id
            // names, while that granter is active.
            let found = items
                .iter()
                .filter(|item| get_s(item, keys::SK) != Some(keys::ORG_SK))
                .map(|item| from_item::<R>(item.clone()))
                .collect::<ApiResult<Vec<R>>>()?
                .into_iter()
                .find(|record| active.contains(keys::org_pk(record.org_id()).as_str()));
            if let Some(record) = found {
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
