//! Organizations: the record, child summaries and name uniqueness.
//!
//! Names are unique where they meet: among the children of one parent, and
//! among top-level organizations (the operator's). The name item's key
//! holds that scope. A parent counts its children (`child_count`) to keep
//! them under `MAX_CHILDREN`.

use crate::model::Timestamp;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::codes;
use crate::error::{ApiError, ApiResult};
use crate::model::org::{
    ChildOrg, NewOrg, OrgChanges, Organization, STATUS_ACTIVE, STATUS_DELETED, name_key,
};
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{self, from_item, key, s, to_item};
use crate::store::engine::keys::{self, ORG_SK, UNIQUE_SK};
use crate::store::engine::query::query_all;
use crate::store::exactly_once::outcome;
use crate::store::exactly_once::tx::{Conflict, put, raced, retry_races, transact};

pub struct Orgs<'a>(pub(in crate::store) &'a Store);

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
    /// See `store::operators::api_keys`: the set of keys' version and its live count.
    #[serde(default)]
    keys_version: u64,
    #[serde(default)]
    live_keys: u32,
    /// Active direct children.
    #[serde(default)]
    child_count: u32,
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
    pub keys_version: u64,
    pub live_keys: u32,
    pub child_count: u32,
}

/// Most active direct children an organization may have.
pub const MAX_CHILDREN: u32 = 100;

/// Most active org admins a parent may have for `POST /orgs` to copy them
/// all in the child's transaction (100 actions, 4 of them the child's own).
pub const MAX_COPIED_ADMINS: usize = 96;

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
            keys_version: 0,
            live_keys: 0,
            child_count: 0,
        }
    }

    fn into_record(self, children: Vec<ChildOrg>) -> OrgRecord {
        OrgRecord {
            public_api: self.public_api,
            keys_version: self.keys_version,
            live_keys: self.live_keys,
            child_count: self.child_count,
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

/// The uniqueness item of `name` among the children of `parent`.
fn name_item(table: &str, parent: Uuid, name: &str, org_id: Uuid) -> ApiResult<TransactWriteItem> {
    let item = to_item(&NameItem {
        pk: keys::org_name_pk(parent, &name_key(name)),
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
    pub(in crate::store) fn store(&self) -> &Store {
        self.0
    }

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

    /// Whether organization `id` was deactivated (its record is kept,
    /// `deleted`): an operator's rerun of a deactivation finishes it.
    pub async fn deactivated(&self, id: Uuid) -> ApiResult<bool> {
        let store = self.0;
        let out = store
            .db
            .get_item()
            .table_name(store.table())
            .set_key(Some(item::key(keys::org_pk(id), ORG_SK)))
            .consistent_read(true)
            .send()
            .await
            .map_err(crate::store::engine::errors::sdk_error)?;
        Ok(out.item.as_ref().and_then(|row| item::get_s(row, "status")) == Some(STATUS_DELETED))
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
        // Top-level names are not unique (keys::org_name_pk): operators
        // tell customers apart by id and business code.
        store
            .db
            .put_item()
            .table_name(store.table())
            .set_item(Some(to_item(&item)?))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map_err(sdk_error)?;
        Ok(item.into_record(Vec::new()).org)
    }

    /// Creates a sub-organization of the active organization `parent`,
    /// copying its active `org_admin` memberships, in one transaction that
    /// also checks the parent is still as read (active, same entitlement)
    /// and counts the child. 409 `org_name_conflict`, `child_limit_reached`,
    /// `too_many_org_admins`.
    pub async fn create_child(&self, parent: Uuid, new: &NewOrg) -> ApiResult<Organization> {
        retry_races(|| self.create_child_once(parent, new)).await
    }

    async fn create_child_once(&self, parent_id: Uuid, new: &NewOrg) -> ApiResult<Organization> {
        let store = self.0;
        let table = store.table();
        // The parent and its admins, read at once.
        let members = store.members();
        let (parent, admins) =
            futures::try_join!(self.get(parent_id), members.active_admins(parent_id))?;
        let parent = parent.ok_or_else(ApiError::org_not_found)?;
        if parent.child_count >= MAX_CHILDREN {
            return Err(codes::CHILD_LIMIT_REACHED.with(format!(
                "an organization has at most {MAX_CHILDREN} active sub-organizations"
            )));
        }
        if admins.len() > MAX_COPIED_ADMINS {
            return Err(codes::TOO_MANY_ORG_ADMINS.with(format!(
                    "a sub-organization copies its parent's org admins, at most {MAX_COPIED_ADMINS}; this organization has {}",
                    admins.len()
                )));
        }
        let at = crate::model::now();
        let item = OrgItem::new(Uuid::now_v7(), new, Some(parent_id), parent.public_api, at);
        let id = item.id;
        let summary = ChildOrg {
            id,
            name: new.name.clone(),
            status: STATUS_ACTIVE.into(),
        };
        let count_child = Update::builder()
            .table_name(table)
            .set_key(Some(key(keys::org_pk(parent_id), ORG_SK)))
            .update_expression("ADD child_count :one")
            .condition_expression(
                "#status = :active AND public_api = :flag \
                 AND (attribute_not_exists(child_count) OR child_count < :cap)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":active", s(STATUS_ACTIVE))
            .expression_attribute_values(":flag", AttributeValue::Bool(parent.public_api))
            .expression_attribute_values(":one", item::n(1))
            .expression_attribute_values(":cap", item::n(MAX_CHILDREN))
            .build()
            .map_err(ApiError::internal)?;
        let mut actions = vec![
            put(table, to_item(&item)?, Some("attribute_not_exists(pk)"))?,
            name_item(table, parent_id, &new.name, id)?,
            TransactWriteItem::builder().update(count_child).build(),
            child_item(table, parent_id, &summary)?,
        ];
        for admin in admins {
            actions.push(put(
                table,
                store.members().membership_copy(admin, id, at)?,
                None,
            )?);
        }
        let org = item.into_record(Vec::new()).org;
        outcome::render(&org).await?;
        // A parent changed meanwhile (status, entitlement, children) is read again.
        transact(
            store,
            actions,
            &[(1, ApiError::org_name_conflict), (2, raced)],
        )
        .await?;
        Ok(org)
    }

    /// The version of the organization's set of keys; `None` when the
    /// organization is missing or not active.
    pub async fn keys_version(&self, id: Uuid) -> ApiResult<Option<u64>> {
        Ok(self.get(id).await?.map(|o| o.keys_version))
    }

    /// Applies validated changes. A rename moves the name's uniqueness item
    /// and the parent's child summary in the same transaction.
    pub async fn update(&self, id: Uuid, changes: &OrgChanges) -> ApiResult<Organization> {
        retry_races(|| self.update_once(id, changes)).await
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
        // A child's name moves among its siblings; a top-level name is
        // nobody else's business (no 409 tells whether another uses it).
        if let (true, Some(parent)) = (renamed, current.parent_id) {
            let old = Delete::builder()
                .table_name(table)
                .set_key(Some(key(
                    keys::org_name_pk(parent, &name_key(&current.name)),
                    UNIQUE_SK,
                )))
                .build()
                .map_err(ApiError::internal)?;
            actions.push(TransactWriteItem::builder().delete(old).build());
            conflicts.push((actions.len(), ApiError::org_name_conflict));
            actions.push(name_item(table, parent, &updated.name, id)?);
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
