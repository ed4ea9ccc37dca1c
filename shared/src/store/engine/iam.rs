//! What IAM authorizes for a DynamoDB call (`aws_calls::needed`, for the
//! role check): each action of a transaction or a batch apart (a
//! transaction's Put is `PutItem`, its ConditionCheck
//! `ConditionCheckItem`), on its table or index, with the class of the
//! partition key it leads with (`dynamodb:LeadingKeys`).

use crate::aws_calls::needed::{Needed, Resource};
use crate::store::engine::trace;
use serde_json::Value;

/// The actions a call of `operation` with this JSON body needs.
pub fn needed(operation: &str, body: &Value) -> Vec<Needed> {
    match operation {
        "TransactWriteItems" => entries(body)
            .filter_map(|(kind, call)| {
                let action = match kind {
                    "Put" => "PutItem",
                    "Update" => "UpdateItem",
                    "Delete" => "DeleteItem",
                    "ConditionCheck" => "ConditionCheckItem",
                    _ => return None,
                };
                Some(on(action, call, &call["TableName"]))
            })
            .collect(),
        "TransactGetItems" => entries(body)
            .map(|(_, call)| on("GetItem", call, &call["TableName"]))
            .collect(),
        "BatchGetItem" | "BatchWriteItem" => batch(operation, body),
        _ => vec![on(operation, body, &body["TableName"])],
    }
}

/// A transaction's items: each one's kind (`Put`, `Update`, ...) and call.
fn entries(body: &Value) -> impl Iterator<Item = (&str, &Value)> {
    body["TransactItems"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.as_object()?.iter().next())
        .map(|(kind, call)| (kind.as_str(), call))
}

/// A batch's keys or items, table by table: one action each.
fn batch(operation: &str, body: &Value) -> Vec<Needed> {
    let mut needed = Vec::new();
    for (table, requests) in body["RequestItems"].as_object().into_iter().flatten() {
        let table = Value::String(table.clone());
        let calls: Vec<Value> = match operation {
            "BatchGetItem" => requests["Keys"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|key| serde_json::json!({ "Key": key }))
                .collect(),
            _ => requests
                .as_array()
                .into_iter()
                .flatten()
                .map(|request| {
                    let put = &request["PutRequest"]["Item"];
                    match put.is_null() {
                        true => serde_json::json!({ "Key": request["DeleteRequest"]["Key"] }),
                        false => serde_json::json!({ "Item": put }),
                    }
                })
                .collect(),
        };
        needed.extend(calls.iter().map(|call| on(operation, call, &table)));
    }
    needed
}

fn on(action: &str, call: &Value, table: &Value) -> Needed {
    Needed {
        action: format!("dynamodb:{action}"),
        resource: Resource::Table {
            table: table.as_str().unwrap_or_default().to_owned(),
            index: call["IndexName"].as_str().map(str::to_owned),
        },
        leading_key: leading_key(call),
    }
}

/// The class of the partition key a call names: its `Key`'s or `Item`'s
/// `pk`, or a query's `:pk`.
fn leading_key(call: &Value) -> Option<String> {
    let pk = call["Key"]["pk"]["S"]
        .as_str()
        .or(call["Item"]["pk"]["S"].as_str())
        .or(call["ExpressionAttributeValues"][":pk"]["S"].as_str())?;
    Some(trace::class(pk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn actions(operation: &str, body: Value) -> Vec<(String, Option<String>)> {
        needed(operation, &body)
            .into_iter()
            .map(|n| (n.action, n.leading_key))
            .collect()
    }

    #[test]
    fn each_item_of_a_transaction_needs_its_own_action() {
        let id = "0b9e3b0e-8f0e-4a57-9d55-3c1f4a6f1a10";
        let body = json!({ "TransactItems": [
            { "ConditionCheck": { "TableName": "t", "Key": { "pk": { "S": format!("ORG#{id}") } } } },
            { "Put": { "TableName": "t", "Item": { "pk": { "S": format!("OUTBOX#{id}") } } } },
            { "Update": { "TableName": "t", "Key": { "pk": { "S": format!("APIKEY#{id}") } } } },
            { "Delete": { "TableName": "t", "Key": { "pk": { "S": "FILE#waybills/x" } } } },
        ]});
        assert_eq!(
            actions("TransactWriteItems", body),
            [
                (
                    "dynamodb:ConditionCheckItem".into(),
                    Some("ORG#{id}".into())
                ),
                ("dynamodb:PutItem".into(), Some("OUTBOX#{id}".into())),
                ("dynamodb:UpdateItem".into(), Some("APIKEY#{id}".into())),
                ("dynamodb:DeleteItem".into(), Some("FILE#{bucket}".into())),
            ]
        );
    }

    #[test]
    fn a_query_names_its_index_and_leads_with_its_partition() {
        let body = json!({ "TableName": "t", "IndexName": "gsi1",
            "ExpressionAttributeValues": { ":pk": { "S": "KEYS#abc" } } });
        let needed = needed("Query", &body);
        assert_eq!(needed[0].action, "dynamodb:Query");
        assert_eq!(
            needed[0].resource,
            Resource::Table {
                table: "t".into(),
                index: Some("gsi1".into())
            }
        );
        assert_eq!(needed[0].leading_key.as_deref(), Some("KEYS#{bucket}"));
    }

    #[test]
    fn a_batch_needs_its_action_for_each_key() {
        let body = json!({ "RequestItems": { "t": [
            { "PutRequest": { "Item": { "pk": { "S": "RATE#x" } } } },
            { "DeleteRequest": { "Key": { "pk": { "S": "AUDIT#y" } } } },
        ]}});
        assert_eq!(
            actions("BatchWriteItem", body),
            [
                (
                    "dynamodb:BatchWriteItem".into(),
                    Some("RATE#{bucket}".into())
                ),
                (
                    "dynamodb:BatchWriteItem".into(),
                    Some("AUDIT#{bucket}".into())
                ),
            ]
        );
    }
}
