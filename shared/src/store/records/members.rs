//! People: a profile (`PROFILE#<id>`, the auth user), its phone and e-mail
//! uniqueness items (phones and e-mails are unique across the platform),
//! and its memberships (`ORG#<org>` / `MEMBER#<profile>`).
//!
//! A membership names the truck its member drives (`truck_id`), and the
//! truck names its driver: both sides change in one transaction, so a
//! member who leaves or stops being a driver releases the truck at once,
//! and a driver drives one truck at a time.
//!
//! A membership may name the site its member works at (`site_id`, checked
//! in the membership's transaction to be an active site of the
//! organization). While the membership is active and names a site, its
//! item is in `gsi2` under the site (`keys::site_members_pk`): the site's
//! people are one Query.

use aws_sdk_dynamodb::types::{AttributeValue, Delete, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::codes;
use crate::error::{ApiError, ApiResult};
use crate::model::Timestamp;
use crate::model::member::{Member, MemberChanges, NewMember, Role};
use crate::model::site::{SitePerson, SiteRecord};
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{Item, from_item, key, n, s, to_item};
use crate::store::engine::keys::{self, MEMBER_PREFIX, UNIQUE_SK};
use crate::store::engine::query::query_all;
use crate::store::exactly_once::outcome;
use crate::store::exactly_once::tx::{Conflict, put, raced, retry_races, transact};
use crate::store::records::org_records::still_active;

pub const ROLE_ORG_ADMIN: Role = Role::OrgAdmin;

pub struct Members<'a>(pub(in crate::store) &'a Store);

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Membership {
    pub profile_id: Uuid,
    pub org_id: Uuid,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub phone: Option<String>,
    pub role: Role,
    pub active: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The truck this member drives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truck_id: Option<Uuid>,
    /// The site this member works at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site_id: Option<Uuid>,
    #[serde(default)]
    pub version: u64,
}

impl Membership {
    pub fn view(&self) -> Member {
        Member {
            id: self.profile_id,
            first_name: self.first_name.clone(),
            last_name: self.last_name.clone(),
            role: self.role,
            phone: self.phone.clone(),
            active: self.active,
            site_id: self.site_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

impl Membership {
    /// The member as one of the people at its site.
    pub fn site_person(&self) -> SitePerson {
        SitePerson {
            member_id: Some(self.profile_id),
            first_name: self.first_name.clone(),
            last_name: self.last_name.clone(),
            phone: self.phone.clone(),
            role: self.role.as_str().into(),
        }
    }
}

/// A new person's sign-in: the e-mail and the argon2id hash of the password.
pub struct StoredLogin {
    pub email: String,
    pub password_hash: String,
}

#[derive(Serialize, Deserialize)]
struct MemberItem {
    pk: String,
    sk: String,
    /// `gsi2`: the site's people, while active at a site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gsi2pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gsi2sk: Option<String>,
    #[serde(flatten)]
    membership: Membership,
}

/// A membership from its stored item.
pub(crate) fn membership(item: Item) -> ApiResult<Membership> {
    from_item::<MemberItem>(item).map(|m| m.membership)
}

#[derive(Serialize)]
struct ProfileItem<'a> {
    pk: String,
    sk: &'a str,
    id: Uuid,
    first_name: &'a str,
    last_name: &'a str,
    phone: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    password_hash: Option<&'a str>,
    created_at: Timestamp,
}

#[derive(Serialize)]
struct UniqueItem {
    pk: String,
    sk: &'static str,
    profile_id: Uuid,
}

fn phone_conflict() -> ApiError {
    codes::PHONE_CONFLICT.with("this phone number is already in use")
}

fn email_conflict() -> ApiError {
    codes::EMAIL_CONFLICT.with("this e-mail address is already in use")
}

pub fn member_not_found() -> ApiError {
    codes::MEMBER_NOT_FOUND.with("member not found")
}

fn org_admin_managed() -> ApiError {
    codes::ORG_ADMIN_MANAGED
        .with("org admins are managed in the admin application, not through this API")
}

fn unique(pk: String, profile_id: Uuid) -> UniqueItem {
    UniqueItem {
        pk,
        sk: UNIQUE_SK,
        profile_id,
    }
}

fn update(table: &str, item_key: Item) -> aws_sdk_dynamodb::types::builders::UpdateBuilder {
    Update::builder().table_name(table).set_key(Some(item_key))
}

fn built(update: aws_sdk_dynamodb::types::builders::UpdateBuilder) -> ApiResult<TransactWriteItem> {
    update
        .build()
        .map(|u| TransactWriteItem::builder().update(u).build())
        .map_err(ApiError::internal)
}

/// The action that takes truck `truck` away from driver `driver` (the
/// truck's side of a release).
pub(crate) fn release_truck(
    table: &str,
    org: Uuid,
    truck: Uuid,
    driver: Uuid,
) -> ApiResult<TransactWriteItem> {
    built(
        update(table, key(keys::org_pk(org), keys::truck_sk(truck)))
            .update_expression("REMOVE driver_id ADD version :one")
            .condition_expression("driver_id = :driver")
            .expression_attribute_values(":driver", s(driver.to_string()))
            .expression_attribute_values(":one", n(1)),
    )
}

/// The action that ends driver `driver`'s hold on truck `truck` (the
/// membership's side of a release).
pub(crate) fn release_driver(
    table: &str,
    org: Uuid,
    driver: Uuid,
    truck: Uuid,
) -> ApiResult<TransactWriteItem> {
    built(
        update(table, key(keys::org_pk(org), keys::member_sk(driver)))
            .update_expression("REMOVE truck_id ADD version :one")
            .condition_expression("truck_id = :truck")
            .expression_attribute_values(":truck", s(truck.to_string()))
            .expression_attribute_values(":one", n(1)),
    )
}

/// The action that makes active member `driver` (as read, `version`) drive
/// truck `truck`.
pub(crate) fn hold_truck(
    table: &str,
    org: Uuid,
    driver: &Membership,
    truck: Uuid,
) -> ApiResult<TransactWriteItem> {
    built(
        update(
            table,
            key(keys::org_pk(org), keys::member_sk(driver.profile_id)),
        )
        .update_expression("SET truck_id = :truck ADD version :one")
        .condition_expression("active = :yes AND version = :version")
        .expression_attribute_values(":truck", s(truck.to_string()))
        .expression_attribute_values(":yes", AttributeValue::Bool(true))
        .expression_attribute_values(":version", n(driver.version))
        .expression_attribute_values(":one", n(1)),
    )
}

/// The memberships `query` finds, by last name, first name (then id, so
/// the order is total).
async fn by_name(
    query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
) -> ApiResult<Vec<Membership>> {
    let mut members: Vec<Membership> = query_all(query)
        .await?
        .into_iter()
        .map(membership)
        .collect::<ApiResult<_>>()?;
    members.sort_by(|a, b| {
        (&a.last_name, &a.first_name, a.profile_id).cmp(&(
            &b.last_name,
            &b.first_name,
            b.profile_id,
        ))
    });
    Ok(members)
}

impl Members<'_> {
    /// Creates a person (profile, phone and e-mail items) with an active
    /// membership, in one transaction: 409 `phone_conflict`, `email_conflict`
    /// when another member of this organization has the phone or address.
    pub async fn add(
        &self,
        org: Uuid,
        new: &NewMember,
        login: Option<StoredLogin>,
    ) -> ApiResult<Membership> {
        let store = self.0;
        let table = store.table();
        let at = crate::model::now();
        let profile_id = Uuid::now_v7();
        let membership = Membership {
            profile_id,
            org_id: org,
            first_name: Some(new.first_name.clone()),
            last_name: Some(new.last_name.clone()),
            phone: Some(new.phone.clone()),
            role: new.role,
            active: true,
            created_at: at,
            updated_at: at,
            truck_id: None,
            site_id: new.site_id,
            version: 0,
        };
        let site_check = self.site_check(org, None, new.site_id).await?;
        let profile = ProfileItem {
            pk: keys::profile_pk(profile_id),
            sk: keys::PROFILE_SK,
            id: profile_id,
            first_name: &new.first_name,
            last_name: &new.last_name,
            phone: &new.phone,
            email: login.as_ref().map(|l| l.email.as_str()),
            password_hash: login.as_ref().map(|l| l.password_hash.as_str()),
            created_at: at,
        };
        let fresh = Some("attribute_not_exists(pk)");
        let mut actions = vec![
            put(
                table,
                to_item(&unique(keys::phone_pk(org, &new.phone), profile_id))?,
                fresh,
            )?,
            put(table, to_item(&profile)?, fresh)?,
            put(table, self.item(membership.clone())?, fresh)?,
        ];
        let mut conflicts: Vec<Conflict> = vec![(0, phone_conflict)];
        if let Some(check) = site_check {
            conflicts.push((actions.len(), ApiError::site_archived));
            actions.push(check);
        }
        if let Some(login) = &login {
            conflicts.push((actions.len(), email_conflict));
            actions.push(put(
                table,
                to_item(&unique(keys::email_pk(org, &login.email), profile_id))?,
                fresh,
            )?);
        }
        outcome::render(&membership).await?;
        transact(store, actions, &conflicts).await?;
        Ok(membership)
    }

    pub async fn get(&self, org: Uuid, profile: Uuid) -> ApiResult<Option<Membership>> {
        let store = self.0;
        let out = store
            .db
            .get_item()
            .table_name(store.table())
            .set_key(Some(key(keys::org_pk(org), keys::member_sk(profile))))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_error)?;
        out.item
            .map(|i| from_item::<MemberItem>(i).map(|m| m.membership))
            .transpose()
    }

    /// The membership, active or not, or 404 `member_not_found`.
    pub async fn require(&self, org: Uuid, profile: Uuid) -> ApiResult<Membership> {
        self.get(org, profile).await?.ok_or_else(member_not_found)
    }

    /// The organization's memberships (active ones unless `include_inactive`),
    /// by last name, first name.
    pub async fn list(&self, org: Uuid, include_inactive: bool) -> ApiResult<Vec<Membership>> {
        let store = self.0;
        let mut query = store
            .db
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk AND begins_with(sk, :member)")
            .expression_attribute_values(":pk", s(keys::org_pk(org)))
            .expression_attribute_values(":member", s(MEMBER_PREFIX))
            .consistent_read(true);
        if !include_inactive {
            query = query
                .filter_expression("active = :yes")
                .expression_attribute_values(":yes", AttributeValue::Bool(true));
        }
        by_name(query).await
    }

    /// Applies validated changes to a membership and its person, in one
    /// transaction: a phone change moves the phone's uniqueness item;
    /// leaving the organization (`active: false`) or ceasing to be a
    /// `driver` releases the member's truck. An `org_admin` membership is
    /// the admin application's: 403 `org_admin_managed`.
    pub async fn update(
        &self,
        org: Uuid,
        profile: Uuid,
        changes: &MemberChanges,
    ) -> ApiResult<Membership> {
        retry_races(|| self.update_once(org, profile, changes, false)).await
    }

    /// DELETE: leaves the organization; 409 `already_inactive` the second
    /// time.
    pub async fn leave(&self, org: Uuid, profile: Uuid) -> ApiResult<Membership> {
        let leave = MemberChanges {
            active: Some(false),
            ..MemberChanges::default()
        };
        retry_races(|| self.update_once(org, profile, &leave, true)).await
    }

    async fn update_once(
        &self,
        org: Uuid,
        profile: Uuid,
        changes: &MemberChanges,
        refuse_inactive: bool,
    ) -> ApiResult<Membership> {
        let store = self.0;
        let table = store.table();
        let current = self.require(org, profile).await?;
        if current.role == ROLE_ORG_ADMIN {
            return Err(org_admin_managed());
        }
        if refuse_inactive && !current.active {
            return Err(
                codes::ALREADY_INACTIVE.with("the member has already left the organization")
            );
        }
        let mut updated = current.clone();
        if let Some(v) = &changes.first_name {
            updated.first_name = Some(v.clone());
        }
        if let Some(v) = &changes.last_name {
            updated.last_name = Some(v.clone());
        }
        if let Some(v) = &changes.phone {
            updated.phone = Some(v.clone());
        }
        if let Some(role) = changes.role {
            updated.role = role;
        }
        if let Some(active) = changes.active {
            updated.active = active;
        }
        if let Some(site) = changes.site_id {
            updated.site_id = site;
        }
        let site_check = self
            .site_check(org, current.site_id, updated.site_id)
            .await?;
        let leaves = current.active && !updated.active;
        let demoted = current.role == Role::Driver && updated.role != Role::Driver;
        let release = if leaves || demoted {
            updated.truck_id.take()
        } else {
            None
        };
        updated.updated_at = crate::model::now();
        updated.version = current.version + 1;

        // Memberships made before versions existed have none: version 0.
        let unchanged = if current.version == 0 {
            "attribute_not_exists(version) OR version = :version"
        } else {
            "version = :version"
        };
        let write = aws_sdk_dynamodb::types::Put::builder()
            .table_name(table)
            .set_item(Some(self.item(updated.clone())?))
            .condition_expression(unchanged)
            .expression_attribute_values(":version", n(current.version));
        let mut actions = vec![
            TransactWriteItem::builder()
                .put(write.build().map_err(ApiError::internal)?)
                .build(),
        ];
        let mut conflicts: Vec<Conflict> = vec![(0, raced)];
        if let Some(check) = site_check {
            conflicts.push((actions.len(), ApiError::site_archived));
            actions.push(check);
        }
        if let Some(truck) = release {
            conflicts.push((actions.len(), raced));
            actions.push(release_truck(table, org, truck, profile)?);
        }
        let person_changed = updated.first_name != current.first_name
            || updated.last_name != current.last_name
            || updated.phone != current.phone;
        if person_changed {
            actions.push(built(
                update(table, key(keys::profile_pk(profile), keys::PROFILE_SK))
                    .update_expression("SET first_name = :first, last_name = :last, phone = :phone")
                    .condition_expression("attribute_exists(pk)")
                    .expression_attribute_values(
                        ":first",
                        s(updated.first_name.clone().unwrap_or_default()),
                    )
                    .expression_attribute_values(
                        ":last",
                        s(updated.last_name.clone().unwrap_or_default()),
                    )
                    .expression_attribute_values(
                        ":phone",
                        s(updated.phone.clone().unwrap_or_default()),
                    ),
            )?);
        }
        if let (Some(old), Some(new)) = (&current.phone, &updated.phone)
            && old != new
        {
            let old_item = Delete::builder()
                .table_name(table)
                .set_key(Some(key(keys::phone_pk(org, old), UNIQUE_SK)))
                .condition_expression("profile_id = :me")
                .expression_attribute_values(":me", s(profile.to_string()))
                .build()
                .map_err(ApiError::internal)?;
            actions.push(TransactWriteItem::builder().delete(old_item).build());
            conflicts.push((actions.len(), phone_conflict));
            actions.push(put(
                table,
                to_item(&unique(keys::phone_pk(org, new), profile))?,
                Some("attribute_not_exists(pk)"),
            )?);
        }
        transact(store, actions, &conflicts).await?;
        Ok(updated)
    }

    /// The organization's active `org_admin` memberships.
    pub async fn active_admins(&self, org: Uuid) -> ApiResult<Vec<Membership>> {
        Ok(self
            .list(org, false)
            .await?
            .into_iter()
            .filter(|m| m.role == ROLE_ORG_ADMIN)
            .collect())
    }

    /// The item of `membership` copied into organization `org` (no truck).
    pub(crate) fn membership_copy(
        &self,
        membership: Membership,
        org: Uuid,
        at: Timestamp,
    ) -> ApiResult<Item> {
        self.item(Membership {
            org_id: org,
            created_at: at,
            updated_at: at,
            truck_id: None,
            site_id: None,
            version: 0,
            ..membership
        })
    }

    /// The active members who work at site `site`, by last name, first
    /// name (`gsi2`: eventually consistent, as every index read).
    pub async fn at_site(&self, org: Uuid, site: Uuid) -> ApiResult<Vec<Membership>> {
        let store = self.0;
        let query = store
            .db
            .query()
            .table_name(store.table())
            .index_name("gsi2")
            .key_condition_expression("gsi2pk = :pk")
            .expression_attribute_values(":pk", s(keys::site_members_pk(org, site)));
        by_name(query).await
    }

    /// When a membership's site changes to `Some(site)`: 422
    /// `site_not_found` or `site_archived` unless it is an active site of
    /// `org`, and the transaction's check that it still is.
    async fn site_check(
        &self,
        org: Uuid,
        before: Option<Uuid>,
        after: Option<Uuid>,
    ) -> ApiResult<Option<TransactWriteItem>> {
        let Some(site) = after.filter(|site| before != Some(*site)) else {
            return Ok(None);
        };
        let record = self
            .0
            .sites()
            .get(org, site)
            .await?
            .ok_or_else(ApiError::site_not_found)?;
        if record.archived_at.is_some() {
            return Err(ApiError::site_archived());
        }
        still_active::<SiteRecord>(self.0.table(), org, site).map(Some)
    }

    fn item(&self, membership: Membership) -> ApiResult<Item> {
        let at_site = membership.site_id.filter(|_| membership.active);
        to_item(&MemberItem {
            pk: keys::org_pk(membership.org_id),
            sk: keys::member_sk(membership.profile_id),
            gsi2pk: at_site.map(|site| keys::site_members_pk(membership.org_id, site)),
            gsi2sk: at_site.map(|_| keys::member_sk(membership.profile_id)),
            membership,
        })
    }
}
