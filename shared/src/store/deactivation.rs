//! Deactivating an organization (soft delete, an operator's command): in
//! one transaction the organization becomes `deleted`, every live key of it
//! is marked so that authentication refuses it (403 `org_inactive`), its
//! parent's child summary says `deleted` and the parent's child count drops,
//! and its name is freed. Grants it issued stop working at once because the
//! grantee's reads check the granter is active (`Grants::granted_record`).
//! Its sub-organizations are organizations of their own and stay as they
//! are.

use aws_sdk_dynamodb::types::{AttributeValue, Delete, TransactWriteItem, Update};
use uuid::Uuid;

use super::item::{key, n, s};
use super::keys::{self, ORG_SK, UNIQUE_SK};
use super::orgs::Orgs;
use crate::error::{ApiError, ApiResult};
use crate::model::org::{STATUS_ACTIVE, STATUS_DELETED, name_key};

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
        let mut more = vec![
            TransactWriteItem::builder()
                .delete(
                    Delete::builder()
                        .table_name(table)
                        .set_key(Some(key(
                            keys::org_name_pk(org.parent_id, &name_key(&org.name)),
                            UNIQUE_SK,
                        )))
                        .build()
                        .map_err(ApiError::internal)?,
                )
                .build(),
        ];
        if let Some(parent) = org.parent_id {
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
        store
            .api_keys()
            .change_every_key(
                id,
                // Still active, under the name read (a rename moves the name item).
                "#status = :active AND #name = :name",
                |org_update| {
                    org_update
                        .update_expression(
                            "SET #status = :deleted, updated_at = :at ADD keys_version :one",
                        )
                        .expression_attribute_names("#status", "status")
                        .expression_attribute_names("#name", "name")
                        .expression_attribute_values(":active", s(STATUS_ACTIVE))
                        .expression_attribute_values(":deleted", s(STATUS_DELETED))
                        .expression_attribute_values(":name", s(&org.name))
                        .expression_attribute_values(":at", s(at.to_string()))
                },
                |key_update| {
                    key_update
                        .update_expression("SET org_active = :no")
                        .expression_attribute_values(":no", AttributeValue::Bool(false))
                },
                more,
            )
            .await
    }
}
