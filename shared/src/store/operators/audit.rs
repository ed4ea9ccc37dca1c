//! The operators' audit trail: an append-only record of every operator
//! command that changes something (`tools/admin`). A command writes two
//! records under one id: `started` before it acts, then its outcome
//! (`succeeded`, `refused`, `failed`), before it answers; a `started`
//! with no outcome is a command that died or lost its connection midway.
//! Records are only ever put when absent, never changed; the API's roles
//! may not write them at all (the template's deny on `AUDIT#*`). No
//! secret goes in: the target names ids, never a key or a webhook secret.

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::ApiResult;
use crate::model::Timestamp;
use crate::store::engine::client::Store;
use crate::store::engine::errors::sdk_error;
use crate::store::engine::item::{Item, from_item, s, to_item};
use crate::store::engine::keys;

pub struct Audit<'a>(pub(in crate::store) &'a Store);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    /// Written before the command acts.
    Started,
    Succeeded,
    /// The store or the rules said no (not found, conflict, invalid input).
    Refused,
    /// Anything else (an engine unreachable, an unexpected error).
    Failed,
}

impl AuditOutcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Succeeded => "succeeded",
            Self::Refused => "refused",
            Self::Failed => "failed",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// One command run: its `started` record and its outcome share it.
    pub id: Uuid,
    pub at: Timestamp,
    /// The caller's AWS identity (STS `GetCallerIdentity`'s ARN).
    pub operator: String,
    /// The source identity set on the operator's role session, when the
    /// CLI assumed the role with one (`admin::identity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_identity: Option<String>,
    /// The command, as typed (`create-key`, `webhooks register`).
    pub command: String,
    /// The organization it concerned, if any.
    pub org_id: Option<Uuid>,
    /// What it acted on: ids and settings, never a secret.
    pub target: serde_json::Value,
    pub outcome: AuditOutcome,
    /// A refusal's or failure's error code.
    pub code: Option<String>,
    /// A refusal's or failure's message.
    pub message: Option<String>,
}

/// Which records `list` reads.
#[derive(Clone, Debug, Default)]
pub struct AuditQuery {
    /// One organization's records; all when `None`.
    pub org: Option<Uuid>,
    /// From this time on (inclusive).
    pub since: Option<Timestamp>,
    /// Up to this time (inclusive).
    pub until: Option<Timestamp>,
    pub limit: usize,
}

impl Audit<'_> {
    /// Appends `record`: a put that never replaces an item. Its key names
    /// the record's own id and phase, so an item already there that holds
    /// exactly this record is this write's, landed before its answer was
    /// lost (the SDK sent it again): done, not refused.
    pub async fn append(&self, record: &AuditRecord) -> ApiResult<()> {
        let sk = keys::audit_sk(record.at, record.id, record.outcome.as_str());
        let mut item = to_item(record)?;
        item.insert(keys::PK.into(), s(keys::audit_pk(record.org_id)));
        item.insert(keys::SK.into(), s(sk.clone()));
        item.insert("gsi1pk".into(), s(keys::AUDIT_ALL_PK));
        item.insert("gsi1sk".into(), s(sk));
        let store = self.0;
        let put = store
            .db
            .put_item()
            .table_name(store.table())
            .set_item(Some(item.clone()))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match put {
            Ok(_) => Ok(()),
            Err(error) => {
                let landed = error
                    .as_service_error()
                    .and_then(|e| match e {
                        PutItemError::ConditionalCheckFailedException(failed) => failed.item(),
                        _ => None,
                    })
                    .is_some_and(|there| *there == item);
                if landed {
                    Ok(())
                } else {
                    Err(sdk_error(error))
                }
            }
        }
    }

    /// Records newest first: one organization's (its partition), or all
    /// (`gsi1`), within the query's times, at most `limit`.
    pub async fn list(&self, query: &AuditQuery) -> ApiResult<Vec<AuditRecord>> {
        let store = self.0;
        // Sort keys start with the time: a range of times is a range of keys.
        let low = query
            .since
            .map_or_else(|| "0".to_owned(), |at| at.to_string());
        let high = query
            .until
            .map_or_else(|| "~".to_owned(), |at| format!("{at}~"));
        let (index, pk_name, pk, sk_name) = match query.org {
            Some(org) => (None, keys::PK, keys::audit_pk(Some(org)), keys::SK),
            None => (
                Some("gsi1"),
                "gsi1pk",
                keys::AUDIT_ALL_PK.to_owned(),
                "gsi1sk",
            ),
        };
        let mut records = Vec::new();
        let mut start = None;
        while records.len() < query.limit {
            let out = store
                .db
                .query()
                .table_name(store.table())
                .set_index_name(index.map(str::to_owned))
                .key_condition_expression("#pk = :pk AND #sk BETWEEN :low AND :high")
                .expression_attribute_names("#pk", pk_name)
                .expression_attribute_names("#sk", sk_name)
                .expression_attribute_values(":pk", s(pk.clone()))
                .expression_attribute_values(":low", s(low.clone()))
                .expression_attribute_values(":high", s(high.clone()))
                .scan_index_forward(false)
                .limit(i32::try_from(query.limit - records.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(sdk_error)?;
            for item in out.items.unwrap_or_default() {
                if let Some(record) = audit_record(item)? {
                    records.push(record);
                }
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        records.truncate(query.limit);
        Ok(records)
    }
}

/// `item` as a record, unless it is not one: the index gathers whatever
/// carries its partition key, and only items under `AUDIT#` were written
/// by operators.
fn audit_record(item: Item) -> ApiResult<Option<AuditRecord>> {
    let under_audit = item
        .get(keys::PK)
        .and_then(|pk| pk.as_s().ok())
        .is_some_and(|pk| pk.starts_with(keys::AUDIT_PK_PREFIX));
    if !under_audit {
        tracing::warn!("an item outside the audit partitions carries the audit index's key");
        return Ok(None);
    }
    from_item(item).map(Some)
}
