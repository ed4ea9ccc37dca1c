//! Deactivating an organization (soft delete, an operator's command): in
//! one transaction the organization becomes `deleted`, its parent's child
//! summary says `deleted` and the parent's child count drops, and its name
//! is freed; then every live key of it is marked so that authentication
//! refuses it (403 `org_inactive`), 49 keys a transaction. Grants it
//! issued stop working at once because the grantee's reads check the
//! granter is active (`Grants::granted_record`), and its trucks and public
//! receiving points stop being usable by others at once because the loads
//! that name them check their organization is active. Last, its public
//! receiving points leave the `PUBLIC` cells of everyone's nearby search.
//! Its sub-organizations are organizations of their own and stay as they
//! are.

use aws_sdk_dynamodb::types::{AttributeValue, Delete, TransactWriteItem, Update};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::model::archive::StatusFilter;
use crate::model::org::{STATUS_ACTIVE, STATUS_DELETED, name_key};
use crate::store::engine::batch;
use crate::store::engine::item::{key, n, s};
use crate::store::engine::keys::{self, ORG_SK, UNIQUE_SK};
use crate::store::exactly_once::tx::{raced, transact};
use crate::store::records::geo::{self, GeoEntry};
use crate::store::records::org_records::Record;
use crate::store::records::orgs::Orgs;

impl Orgs<'_> {
    /// Deactivates the active organization `id`; 404 `org_not_found`
    /// otherwise. There is no way back.
    pub async fn deactivate(&self, id: Uuid) -> ApiResult<()> {
        let store = self.store();
        let table = store.table();
        let org = self.get(id).await?.ok_or_else(ApiError::org_not_found)?.org;
        let at = crate::model::now();
        let build = |update: aws_sdk_dynamodb::types::builders::UpdateBuilder| {
            update
                .build()
                .map(|u| TransactWriteItem::builder().update(u).build())
                .map_err(ApiError::internal)
        };
        let mut more: Vec<TransactWriteItem> = Vec::new();
        if let Some(parent) = org.parent_id {
            // The name is free again among the parent's children.
            more.push(
                TransactWriteItem::builder()
                    .delete(
                        Delete::builder()
                            .table_name(table)
                            .set_key(Some(key(
                                keys::org_name_pk(parent, &name_key(&org.name)),
                                UNIQUE_SK,
                            )))
                            .build()
                            .map_err(ApiError::internal)?,
                    )
                    .build(),
            );
            more.push(build(
                Update::builder()
                    .table_name(table)
                    .set_key(Some(key(keys::org_pk(parent), keys::child_sk(id))))
                    .update_expression("SET #status = :deleted")
                    .condition_expression("attribute_exists(pk)")
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":deleted", s(STATUS_DELETED)),
            )?);
            more.push(build(
                Update::builder()
                    .table_name(table)
                    .set_key(Some(key(keys::org_pk(parent), ORG_SK)))
                    .update_expression("ADD child_count :minus_one")
                    .condition_expression("attribute_exists(pk) AND child_count > :zero")
                    .expression_attribute_values(":minus_one", n(-1))
                    .expression_attribute_values(":zero", n(0)),
            )?);
        }
        // The organization first, conditioned on it being active under the
        // name read (a rename moves the name item): from then on no key can
        // be made for it, and every key made before is listed below.
        let org_update = Update::builder()
            .table_name(table)
            .set_key(Some(key(keys::org_pk(id), ORG_SK)))
            .update_expression("SET #status = :deleted, updated_at = :at ADD keys_version :one")
            .condition_expression("#status = :active AND #name = :name")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#name", "name")
            .expression_attribute_values(":active", s(STATUS_ACTIVE))
            .expression_attribute_values(":deleted", s(STATUS_DELETED))
            .expression_attribute_values(":name", s(&org.name))
            .expression_attribute_values(":at", s(at.to_string()))
            .expression_attribute_values(":one", n(1));
        let mut actions = vec![build(org_update)?];
        actions.extend(more);
        transact(store, actions, &[(0, raced)]).await?;
        self.keys_off(id).await?;
        self.public_places_off(id).await
    }

    /// Takes deactivated organization `id`'s public receiving points out of
    /// the `PUBLIC` cells, so nobody's nearby search shows them. Running it
    /// again finishes an interrupted run.
    pub async fn public_places_off(&self, id: Uuid) -> ApiResult<()> {
        let store = self.store();
        let points = store.receiving_points().list(id, StatusFilter::All).await?;
        let entries: Vec<GeoEntry> = points.iter().flat_map(Record::geo).collect();
        let keys = geo::public_keys(&entries)
            .into_iter()
            .map(|(pk, sk)| key(pk, sk))
            .collect();
        batch::delete_all(store, keys).await
    }

    /// Marks every live key of deactivated organization `id` as refused
    /// (403 `org_inactive`). `deactivate` ends with it; an operator runs it
    /// again (`admin deactivate-org` on a deactivated organization) if a
    /// deactivation was interrupted between the organization and its keys.
    pub async fn keys_off(&self, id: Uuid) -> ApiResult<()> {
        self.store()
            .api_keys()
            .change_every_key(id, |key_update| {
                key_update
                    .update_expression("SET org_active = :no")
                    .expression_attribute_values(":no", AttributeValue::Bool(false))
            })
            .await
    }
}
