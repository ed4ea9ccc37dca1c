//! Memberships (profile in an organization). The members routes come later;
//! this holds what organizations need now: the operator's first org admin
//! and the copy of org admins into a new sub-organization.

use crate::model::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::item::{Item, from_item, key, s, to_item};
use super::keys::{self, MEMBER_PREFIX, UNIQUE_SK};
use super::tx::{put, transact};
use super::{Store, query_all, sdk_error};
use crate::error::{ApiError, ApiResult};

pub const ROLE_ORG_ADMIN: &str = "org_admin";

pub struct Members<'a>(pub(super) &'a Store);

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Membership {
    pub profile_id: Uuid,
    pub org_id: Uuid,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub phone: Option<String>,
    pub role: String,
    pub active: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Serialize, Deserialize)]
struct MemberItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    membership: Membership,
}

#[derive(Serialize)]
struct ProfileItem<'a> {
    pk: String,
    sk: &'a str,
    id: Uuid,
    first_name: &'a str,
    last_name: &'a str,
    phone: &'a str,
    created_at: Timestamp,
}

#[derive(Serialize)]
struct PhoneItem {
    pk: String,
    sk: &'static str,
    profile_id: Uuid,
}

fn phone_conflict() -> ApiError {
    ApiError::Conflict {
        code: "phone_conflict",
        message: "this phone number is already in use".into(),
    }
}

impl Members<'_> {
    /// Creates a profile with an active membership (the phone is unique).
    pub async fn add(
        &self,
        org: Uuid,
        first_name: &str,
        last_name: &str,
        phone: &str,
        role: &str,
    ) -> ApiResult<Membership> {
        let store = self.0;
        let table = store.table();
        let at = crate::model::now();
        let profile_id = Uuid::now_v7();
        let membership = Membership {
            profile_id,
            org_id: org,
            first_name: Some(first_name.to_owned()),
            last_name: Some(last_name.to_owned()),
            phone: Some(phone.to_owned()),
            role: role.to_owned(),
            active: true,
            created_at: at,
            updated_at: at,
        };
        let profile = ProfileItem {
            pk: keys::profile_pk(profile_id),
            sk: keys::PROFILE_SK,
            id: profile_id,
            first_name,
            last_name,
            phone,
            created_at: at,
        };
        let phone_item = PhoneItem {
            pk: keys::phone_pk(phone),
            sk: UNIQUE_SK,
            profile_id,
        };
        let actions = vec![
            put(
                table,
                to_item(&phone_item)?,
                Some("attribute_not_exists(pk)"),
            )?,
            put(table, to_item(&profile)?, Some("attribute_not_exists(pk)"))?,
            put(table, self.item(membership.clone())?, None)?,
        ];
        transact(store, actions, &[(0, phone_conflict)]).await?;
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

    /// The organization's active `org_admin` memberships.
    pub async fn active_admins(&self, org: Uuid) -> ApiResult<Vec<Membership>> {
        let store = self.0;
        let query = store
            .db
            .query()
            .table_name(store.table())
            .key_condition_expression("pk = :pk AND begins_with(sk, :member)")
            .filter_expression("#role = :admin AND active = :yes")
            .expression_attribute_names("#role", "role")
            .expression_attribute_values(":pk", s(keys::org_pk(org)))
            .expression_attribute_values(":member", s(MEMBER_PREFIX))
            .expression_attribute_values(":admin", s(ROLE_ORG_ADMIN))
            .expression_attribute_values(
                ":yes",
                aws_sdk_dynamodb::types::AttributeValue::Bool(true),
            )
            .consistent_read(true);
        query_all(query)
            .await?
            .into_iter()
            .map(|item| from_item::<MemberItem>(item).map(|m| m.membership))
            .collect()
    }

    /// The item of `membership` copied into organization `org`.
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
            ..membership
        })
    }

    fn item(&self, membership: Membership) -> ApiResult<Item> {
        to_item(&MemberItem {
            pk: keys::org_pk(membership.org_id),
            sk: keys::member_sk(membership.profile_id),
            membership,
        })
    }
}
