//! The values the table keeps sealed (`crate::sealed`), for an operator
//! who rotates the seal key (`admin reseal`): webhook secrets
//! (`WEBHOOK#<id>`'s `sealed_secret`) and sealed kept answers (an
//! `IDEM#` item's `body` with `sealed`). Read a page at a time by a Scan:
//! an operator's tool, never a request's path.

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item;
use crate::store::engine::item::{Item, get_s, s};
use crate::store::engine::keys::{PK, SK, WEBHOOK_PREFIX};
use crate::store::exactly_once::idempotency;

const SEALED_SECRET: &str = "sealed_secret";
const PREVIOUS_SECRET: &str = "previous_sealed_secret";
const BODY: &str = "body";
const SEALED: &str = "sealed";

/// Which attribute holds the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// A webhook's secret.
    WebhookSecret,
    /// A webhook's secret before its roll, during the overlap.
    PreviousWebhookSecret,
    /// A kept answer that carries a secret.
    KeptAnswer,
}

/// One sealed value, as read.
#[derive(Clone, Debug)]
pub struct SealedValue {
    pk: String,
    sk: String,
    pub field: Field,
    /// As stored (`k<version>.…`).
    pub sealed: String,
    /// The record it is bound to (the associated data it was sealed with).
    pub owner: Vec<u8>,
}

/// Where the next page starts (the Scan's last key), as an operator
/// passes it back to resume.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Resume {
    pk: String,
    sk: String,
}

pub struct SealedValues<'a>(pub(in crate::store) &'a Store);

impl SealedValues<'_> {
    /// The sealed values of one page of the table (of at most `items`
    /// items read, when given), and where the next page starts (None: the
    /// last page).
    pub async fn page(
        &self,
        start: Option<Resume>,
        items: Option<i32>,
    ) -> ApiResult<(Vec<SealedValue>, Option<Resume>)> {
        let page = self
            .0
            .db
            .scan()
            .table_name(self.0.table())
            .set_limit(items)
            .filter_expression("attribute_exists(#secret) OR #sealed = :sealed")
            .expression_attribute_names("#secret", SEALED_SECRET)
            .expression_attribute_names("#sealed", SEALED)
            .expression_attribute_values(":sealed", AttributeValue::Bool(true))
            .set_exclusive_start_key(start.map(|r| item::key(r.pk, r.sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_error)?;
        let values = page.items().iter().flat_map(sealed_values).collect();
        let next = page.last_evaluated_key().map(|key| Resume {
            pk: get_s(key, PK).unwrap_or_default().to_owned(),
            sk: get_s(key, SK).unwrap_or_default().to_owned(),
        });
        Ok((values, next))
    }

    /// Replaces `value` with `resealed` if it is still as read: false when
    /// it changed meanwhile (or its record is gone).
    pub async fn replace(&self, value: &SealedValue, resealed: &str) -> ApiResult<bool> {
        let (name, old, new) = match value.field {
            Field::WebhookSecret => (SEALED_SECRET, s(&value.sealed), s(resealed)),
            Field::PreviousWebhookSecret => (PREVIOUS_SECRET, s(&value.sealed), s(resealed)),
            Field::KeptAnswer => (
                BODY,
                AttributeValue::B(value.sealed.as_bytes().to_vec().into()),
                AttributeValue::B(resealed.as_bytes().to_vec().into()),
            ),
        };
        let result = self
            .0
            .update(value.pk.clone(), value.sk.clone())
            .update_expression("SET #value = :new")
            .condition_expression("#value = :old")
            .expression_attribute_names("#value", name)
            .expression_attribute_values(":old", old)
            .expression_attribute_values(":new", new)
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(sdk_error(e)),
        }
    }
}

/// The sealed values `item` holds.
fn sealed_values(item: &Item) -> Vec<SealedValue> {
    let (Some(pk), Some(sk)) = (get_s(item, PK), get_s(item, SK)) else {
        return Vec::new();
    };
    let value = |field, sealed: &str, owner: Vec<u8>| SealedValue {
        pk: pk.to_owned(),
        sk: sk.to_owned(),
        field,
        sealed: sealed.to_owned(),
        owner,
    };
    if let Some(sealed) = get_s(item, SEALED_SECRET) {
        let Some(id) = sk
            .strip_prefix(WEBHOOK_PREFIX)
            .and_then(|id| id.parse::<Uuid>().ok())
        else {
            return Vec::new();
        };
        let owner = id.as_bytes().to_vec();
        let mut values = vec![value(Field::WebhookSecret, sealed, owner.clone())];
        if let Some(previous) = get_s(item, PREVIOUS_SECRET) {
            values.push(value(Field::PreviousWebhookSecret, previous, owner));
        }
        return values;
    }
    let sealed = item.get(SEALED).and_then(|v| v.as_bool().ok()).copied();
    let body = item.get(BODY).and_then(|v| v.as_b().ok());
    match (sealed, body.map(|b| String::from_utf8(b.as_ref().to_vec()))) {
        (Some(true), Some(Ok(body))) => {
            let owner = idempotency::item_name(pk, sk).into_bytes();
            vec![value(Field::KeptAnswer, &body, owner)]
        }
        _ => Vec::new(),
    }
}

impl From<Resume> for String {
    fn from(resume: Resume) -> String {
        serde_json::to_string(&resume).expect("a position serializes")
    }
}

impl std::str::FromStr for Resume {
    type Err = ApiError;
    fn from_str(text: &str) -> Result<Resume, ApiError> {
        serde_json::from_str(text)
            .map_err(|e| ApiError::internal(format!("not a resume position: {e}")))
    }
}
