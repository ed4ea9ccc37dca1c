//! The store's capacity trace, for `make capacity`: with the `store_trace`
//! target's debug level on (never in AWS), the call counter's interceptor
//! notes, before each call goes, every partition it touches (the table's,
//! and an index's for an item written with that index's key) and, once
//! answered, splits the units DynamoDB reported for the table and for
//! each index (`ReturnConsumedCapacity=INDEXES`) evenly over them: one
//! line per partition. Keys are written as classes, never values: each
//! literal part kept, an id or a hash `{id}`, an hour's shard (`SHARD07`)
//! `{shard}`, anything else (an hour, a map cell, a plate) `{bucket}`.

use crate::store::engine::schema;
use aws_sdk_dynamodb::types::ConsumedCapacity;
use serde_json::Value;

/// The target whose debug level turns the trace on.
pub const TARGET: &str = "store_trace";

/// Whether the trace is on.
pub fn enabled() -> bool {
    tracing::enabled!(target: TARGET, tracing::Level::DEBUG)
}

/// A partition a call touches: `table` or an index's name, and its key's
/// class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Touch {
    pub index: String,
    pub key: String,
}

/// A call's touches, kept in its config bag from before it is sent to
/// after it is answered.
#[derive(Clone, Debug)]
pub(in crate::store) struct Touches(pub Vec<Touch>);

impl aws_smithy_types::config_bag::Storable for Touches {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

/// A key's class: its literal parts, `{id}` for an id or a hash, and
/// `{bucket}` for any other value.
pub fn class(key: &str) -> String {
    key.split('#')
        .map(|part| {
            if !part.is_empty() && part.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
                part.to_owned()
            } else if numbered(part, "SHARD") {
                "{shard}".to_owned()
            } else if numbered(part, "COPY") {
                "{copy}".to_owned()
            } else if is_id(part) {
                "{id}".to_owned()
            } else {
                "{bucket}".to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("#")
}

/// `prefix` and a number: a shard of an hour (`SHARD07`), a copy of a
/// public cell (`COPY3`).
fn numbered(part: &str, prefix: &str) -> bool {
    part.strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Holds a UUID, or 32 or more hex digits (a hash): alone, or as a
/// segment of a path (`waybills/<org>/<load>/<file>`).
fn is_id(part: &str) -> bool {
    part.split(['/', '.']).any(|segment| {
        let uuid = segment.len() == 36 && segment.bytes().filter(|b| *b == b'-').count() == 4;
        let hash = segment.len() >= 32 && segment.bytes().all(|b| b.is_ascii_hexdigit());
        uuid || hash
    })
}

/// The partitions a call's JSON body touches.
pub fn touches(body: &Value) -> Vec<Touch> {
    let mut found = Vec::new();
    if let Some(pk) = body["ExpressionAttributeValues"][":pk"]["S"].as_str() {
        let index = body["IndexName"].as_str().unwrap_or("table");
        push(&mut found, index, pk);
    }
    walk(body, &mut found);
    found
}

fn push(found: &mut Vec<Touch>, index: &str, key: &str) {
    found.push(Touch {
        index: index.to_owned(),
        key: class(key),
    });
}

/// Every `Key` or `Item` (an object with a `pk`) under `value`: the
/// table's partition; an item's index keys, and those an update sets.
fn walk(value: &Value, found: &mut Vec<Touch>) {
    match value {
        Value::Object(fields) => {
            if let Some(pk) = fields.get("pk").and_then(|v| v["S"].as_str()) {
                push(found, "table", pk);
                for gsi in schema::GSIS {
                    if let Some(key) = fields
                        .get(&format!("{gsi}pk"))
                        .and_then(|v| v["S"].as_str())
                    {
                        push(found, gsi, key);
                    }
                }
                return;
            }
            if let Some(update) = fields.get("UpdateExpression").and_then(Value::as_str) {
                for (gsi, key) in set_index_keys(update, value) {
                    push(found, gsi, &key);
                }
            }
            for (name, field) in fields {
                if name != "ExpressionAttributeValues" {
                    walk(field, found);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| walk(item, found)),
        _ => {}
    }
}

/// The index keys an update's `SET` gives values (`gsi1pk = :v`, or
/// through a `#name`).
fn set_index_keys(update: &str, call: &Value) -> Vec<(&'static str, String)> {
    let names = &call["ExpressionAttributeNames"];
    let values = &call["ExpressionAttributeValues"];
    let mut found = Vec::new();
    for assignment in update.split([',', ' ']).collect::<Vec<_>>().windows(3) {
        let [name, "=", value] = assignment else {
            continue;
        };
        let name = names[*name].as_str().unwrap_or(name);
        let Some(gsi) = schema::GSIS
            .into_iter()
            .find(|gsi| name == format!("{gsi}pk"))
        else {
            continue;
        };
        if let Some(key) = values[*value]["S"].as_str() {
            found.push((gsi, key.to_owned()));
        }
    }
    found
}

/// Writes the trace of a call: each touch's even share of the units its
/// table or index consumed (write units for a write, else read units).
pub(in crate::store) fn emit(
    operation: &str,
    touches: &[Touch],
    consumed: &[ConsumedCapacity],
    write: bool,
) {
    let units_of = |index: &str| -> f64 {
        consumed
            .iter()
            .map(|c| match index {
                "table" => c
                    .table
                    .as_ref()
                    .and_then(|t| t.capacity_units)
                    .or(c.capacity_units)
                    .unwrap_or(0.0),
                gsi => c
                    .global_secondary_indexes
                    .as_ref()
                    .and_then(|i| i.get(gsi))
                    .and_then(|i| i.capacity_units)
                    .unwrap_or(0.0),
            })
            .sum()
    };
    for touch in touches {
        let share = touches.iter().filter(|t| t.index == touch.index).count() as f64;
        let units = units_of(&touch.index) / share;
        let (read_units, write_units) = if write { (0.0, units) } else { (units, 0.0) };
        tracing::debug!(
            target: TARGET,
            operation,
            index = %touch.index,
            key = %touch.key,
            read_units,
            write_units,
            "store call traced"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_classes_never_values() {
        assert_eq!(
            class("ORG#0196aa2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b"),
            "ORG#{id}"
        );
        assert_eq!(class("OUTBOX#2026-11-27-22"), "OUTBOX#{bucket}");
        assert_eq!(
            class("OUTBOX#2026-11-27-22#SHARD07"),
            "OUTBOX#{bucket}#{shard}"
        );
        assert_eq!(class("GEO#PUBLIC#4#u6sc"), "GEO#PUBLIC#{bucket}#{bucket}");
        assert_eq!(
            class("GEO#PUBLIC#4#u6sc#COPY3"),
            "GEO#PUBLIC#{bucket}#{bucket}#{copy}"
        );
        let hash = "4fc94efa38f8401e011b4553346caa9af02291b1c3d4e5f60718293a4b5c6d7e";
        assert_eq!(class(&format!("RATE#{hash}")), "RATE#{id}");
        let path = "waybills/0196aa2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b/0196aa2b-3c4d-7e5f-8a9b-0c1d2e3f4a5c/w.png";
        assert_eq!(class(&format!("FILE#{path}")), "FILE#{id}");
    }

    #[test]
    fn a_write_touches_its_table_partition_and_each_index_it_keys() {
        let org = "ORG#0196aa2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b";
        let tx = serde_json::json!({"TransactItems": [
            {"Put": {"Item": {"pk": {"S": org}, "sk": {"S": "OUTBOX#1"},
                              "gsi1pk": {"S": "OUTBOX#2026-11-27-22"}, "gsi1sk": {"S": "x"}}}},
            {"Update": {"Key": {"pk": {"S": org}, "sk": {"S": "SURPLUS#1"}},
                        "UpdateExpression": "SET #s = :s, gsi2pk = :g",
                        "ExpressionAttributeNames": {"#s": "status"},
                        "ExpressionAttributeValues": {":s": {"S": "delivered"}, ":g": {"S": "SITE#abc"}}}},
        ]});
        let touch = |index: &str, key: &str| Touch {
            index: index.into(),
            key: key.into(),
        };
        assert_eq!(
            touches(&tx),
            vec![
                touch("table", "ORG#{id}"),
                touch("gsi1", "OUTBOX#{bucket}"),
                touch("gsi2", "SITE#{bucket}"),
                touch("table", "ORG#{id}"),
            ]
        );
        let query = serde_json::json!({"IndexName": "gsi3",
            "ExpressionAttributeValues": {":pk": {"S": "BILL#0196aa2b-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}}});
        assert_eq!(touches(&query), vec![touch("gsi3", "BILL#{id}")]);
    }
}
