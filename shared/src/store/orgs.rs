//! Organizations: the record, child summaries and name uniqueness.

use crate::model::Timestamp;
use aws_sdk_dynamodb::types::{ConditionCheck, Delete, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::item::{self, from_item, key, s, to_item};
use super::keys::{self, ORG_SK, UNIQUE_SK};
use super::tx::{Conflict, RACE_ATTEMPTS, concurrent_update, is_raced, put, raced, transact};
use super::{Store, query_all};
use crate::error::{ApiError, ApiResult};
use crate::model::org::{ChildOrg, NewOrg, OrgChanges, Organization, STATUS_ACTIVE, name_key};

pub struct Orgs<'a>(pub(super) &'a Store);

#[derive(Serialize, Deserialize)]
struct OrgItem {
    pk: String,
    sk: String,
    id: Uuid,
    name: String,
    name_key: String,
    status: String,
    parent_id: Option<Uuid>,
    business_code: Option<String>,
    street_address: String,
    postal_code: String,
    city: String,
    invoice_email: Option<String>,
    /// Public-API entitlement (copied onto the organization's API keys).
    public_api: bool,
    created_at: Timestamp,
    updated_at: Timestamp,
}

#[derive(Serialize, Deserialize)]
struct ChildItem {
    pk: String,
    sk: String,
    id: Uuid,
    name: String,
    status: String,
}

#[derive(Serialize, Deserialize)]
struct NameItem {
    pk: String,
    sk: String,
    org_id: Uuid,
}

/// An organization with its storage-only attributes.
#[derive(Clone, Debug)]
pub struct OrgRecord {
    pub org: Organization,
    pub public_api: bool,
}

impl OrgItem {
    fn new(
        id: Uuid,
        new: &NewOrg,
        parent_id: Option<Uuid>,
        public_api: bool,
        at: Timestamp,
    ) -> Self {
        Self {
            pk: keys::org_pk(id),
            sk: ORG_SK.into(),
            id,
            name: new.name.clone(),
            name_key: name_key(&new.name),
            status: STATUS_ACTIVE.into(),
            parent_id,
            business_code: new.business_code.clone(),
            street_address: new.street_address.clone(),
            postal_code: new.postal_code.clone(),
            city: new.city.clone(),
            invoice_email: new.invoice_email.clone(),
            public_api,
            created_at: at,
            updated_at: at,
        }
    }

    fn into_record(self, children: Vec<ChildOrg>) -> OrgRecord {
        OrgRecord {
            public_api: self.public_api,
            org: Organization {
                id: self.id,
                name: self.name,
                status: self.status,
                parent_id: self.parent_id,
                children,
                business_code: self.business_code,
                street_address: self.street_address,
                postal_code: self.postal_code,
                city: self.city,
                invoice_email: self.invoice_email,
                created_at: self.created_at,
                updated_at: self.updated_at,
            },
        }
    }
}

fn name_item(table: &str, name: &str, org_id: Uuid) -> ApiResult<TransactWriteItem> {
    let item = to_item(&NameItem {
        pk: keys::org_name_pk(&name_key(name)),
        sk: UNIQUE_SK.into(),
        org_id,
    })?;
    put(table, item, Some("attribute_not_exists(pk)"))
}

fn child_item(table: &str, parent: Uuid, child: &ChildOrg) -> ApiResult<TransactWriteItem> {
    let item = to_item(&ChildItem {
        pk: keys::org_pk(parent),
        sk: keys::child_sk(child.id),
        id: child.id,
        name: child.name.clone(),
        status: child.status.clone(),
    })?;
    put(table, item, None)
}

impl Orgs<'_> {
    /// The organization with its direct children, in one strongly consistent
    /// query of its partition. `None` when missing or not active.
    pub async fn get(&self, id: Uuid) -> ApiResult<Option<OrgRecord>> {
        let store = self.0;
        let query = store
            .db
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk AND begins_with(sk, :org)")
            .expression_attribute_values(":pk", s(keys::org_pk(id)))
            .expression_attribute_values(":org", s(ORG_SK))
            .consistent_read(true);
        let mut org: Option<OrgItem> = None;
        let mut children = Vec::new();
        for row in query_all(query).await? {
            if item::get_s(&row, keys::SK) == Some(ORG_SK) {
                org = Some(from_item(row)?);
            } else {
                let child: ChildItem = from_item(row)?;
                if child.status == STATUS_ACTIVE {
                    children.push(ChildOrg {
                        id: child.id,
                        name: child.name,
                        status: child.status,
                    });
                }
            }
        }
        Ok(org
            .filter(|o| o.status == STATUS_ACTIVE)
            .map(|o| o.into_record(children)))
    }

    /// Creates a top-level organization (operators only).
    pub async fn create_top_level(
        &self,
        new: &NewOrg,
        public_api: bool,
    ) -> ApiResult<Organization> {
        let store = self.0;
        let at = crate::model::now();
        let item = OrgItem::new(Uuid::now_v7(), new, None, public_api, at);
        let id = item.id;
        let actions = vec![
            put(
                store.table(),
                to_item(&item)?,
                Some("attribute_not_exists(pk)"),
            )?,
            name_item(store.table(), &new.name, id)?,
        ];
        transact(store, actions, &[(1, ApiError::org_name_conflict)]).await?;
        Ok(item.into_record(Vec::new()).org)
    }

    /// Creates a sub-organization of `parent`, copying the parent's active
    /// `org_admin` memberships, in one transaction.
    pub async fn create_child(&self, parent: &OrgRecord, new: &NewOrg) -> ApiResult<Organization> {
        let store = self.0;
        let table = store.table();
        let admins = store.members().active_admins(parent.org.id).await?;
        let at = crate::model::now();
        let item = OrgItem::new(
            Uuid::now_v7(),
            new,
            Some(parent.org.id),
            parent.public_api,
            at,
        );
        let id = item.id;
        let summary = ChildOrg {
            id,
            name: new.name.clone(),
            status: STATUS_ACTIVE.into(),
        };
        let parent_check = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(key(keys::org_pk(parent.org.id), ORG_SK)))
            .condition_expression("#status = :active")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":active", s(STATUS_ACTIVE))
            .build()
            .map_err(ApiError::internal)?;
        let mut actions = vec![
            put(table, to_item(&item)?, Some("attribute_not_exists(pk)"))?,
            name_item(table, &new.name, id)?,
            TransactWriteItem::builder()
                .condition_check(parent_check)
                .build(),
            child_item(table, parent.org.id, &summary)?,
        ];
        for admin in admins {
            actions.push(put(
                table,
                store.members().membership_copy(admin, id, at)?,
                None,
            )?);
        }
        transact(
            store,
            actions,
            &[
                (1, ApiError::org_name_conflict),
                (2, ApiError::org_not_found),
            ],
        )
        .await?;
        Ok(item.into_record(Vec::new()).org)
    }

    /// Applies validated changes. A rename moves the name's uniqueness item
    /// and the parent's child summary in the same transaction.
    pub async fn update(&self, id: Uuid, changes: &OrgChanges) -> ApiResult<Organization> {
        for _ in 0..RACE_ATTEMPTS {
            match self.update_once(id, changes).await {
                Err(e) if is_raced(&e) => continue,
                other => return other,
            }
        }
        Err(concurrent_update())
    }

    async fn update_once(&self, id: Uuid, changes: &OrgChanges) -> ApiResult<Organization> {
        let store = self.0;
        let table = store.table();
        let current = self.get(id).await?.ok_or_else(ApiError::org_not_found)?.org;
        let at = crate::model::now();
        let mut updated = current.clone();
        updated.apply(changes, at);

        let mut update = Update::builder()
            .table_name(table)
            .set_key(Some(key(keys::org_pk(id), ORG_SK)))
            // The name read above is still the stored one (else: raced, retry).
            .condition_expression("#status = :active AND #name = :old_name")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#name", "name")
            .expression_attribute_values(":active", s(STATUS_ACTIVE))
            .expression_attribute_values(":old_name", s(&current.name));
        let mut sets = vec!["updated_at = :updated_at".to_owned()];
        update = update.expression_attribute_values(":updated_at", item::s(at.to_string()));
        let fields: [(&str, Option<Option<&String>>); 6] = [
            ("name", changes.name.as_ref().map(Some)),
            (
                "business_code",
                changes.business_code.as_ref().map(Option::as_ref),
            ),
            ("street_address", changes.street_address.as_ref().map(Some)),
            ("postal_code", changes.postal_code.as_ref().map(Some)),
            ("city", changes.city.as_ref().map(Some)),
            (
                "invoice_email",
                changes.invoice_email.as_ref().map(Option::as_ref),
            ),
        ];
        for (field, value) in fields {
            let Some(value) = value else { continue };
            let placeholder = format!(":{field}");
            sets.push(format!("#f_{field} = {placeholder}"));
            update = update
                .expression_attribute_names(format!("#f_{field}"), field)
                .expression_attribute_values(
                    placeholder,
                    value.map_or(aws_sdk_dynamodb::types::AttributeValue::Null(true), s),
                );
        }
        let renamed = name_key(&updated.name) != name_key(&current.name);
        if renamed {
            sets.push("name_key = :name_key".into());
            update = update.expression_attribute_values(":name_key", s(name_key(&updated.name)));
        }
        update = update.update_expression(format!("SET {}", sets.join(", ")));
        let mut actions = vec![
            TransactWriteItem::builder()
                .update(update.build().map_err(ApiError::internal)?)
                .build(),
        ];
        let mut conflicts: Vec<Conflict> = vec![(0, raced)];
        if renamed {
            let old = Delete::builder()
                .table_name(table)
                .set_key(Some(key(
                    keys::org_name_pk(&name_key(&current.name)),
                    UNIQUE_SK,
                )))
                .build()
                .map_err(ApiError::internal)?;
            actions.push(TransactWriteItem::builder().delete(old).build());
            conflicts.push((actions.len(), ApiError::org_name_conflict));
            actions.push(name_item(table, &updated.name, id)?);
        }
        if let (Some(parent), Some(_)) = (current.parent_id, &changes.name) {
            let summary = ChildOrg {
                id,
                name: updated.name.clone(),
                status: updated.status.clone(),
            };
            actions.push(child_item(table, parent, &summary)?);
        }
        transact(store, actions, &conflicts).await?;
        Ok(updated)
    }
}
