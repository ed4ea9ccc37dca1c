//! A load's log keeps its first entry ("created as new") on the load
//! itself (`SurplusRecord::created_as`): a new load is one item, not
//! two, and its log reads the same as before, oldest first, with the same
//! entry each time. A load stored before keeps its first entry as an item
//! of its log and shows it once.

use api_tests::{TestOrg, harness, org, run, send};
use aws_sdk_dynamodb::types::AttributeValue;
use http::Method;
use serde_json::{Value, json};
use shared::store::engine::item::to_item;
use shared::store::engine::keys;
use uuid::Uuid;

use crate::sites::new_site;
use crate::surpluses::{create_load, patch};

/// Load `id`'s log as its route answers it.
async fn log(t: &TestOrg, id: &str) -> Vec<Value> {
    let reply = send(t, Method::GET, &format!("/api/v1/surpluses/{id}/log"), None).await;
    reply.expect(200, None);
    reply.body["data"].as_array().unwrap().clone()
}

/// The items of load `id`'s log in the table (its partition, `LOG#<id>#`).
async fn log_items(t: &TestOrg, id: Uuid) -> usize {
    let h = harness().await;
    let db = aws_sdk_dynamodb::Client::new(&h.sdk);
    let found = db
        .query()
        .table_name(h.store().table())
        .key_condition_expression("pk = :pk AND begins_with(sk, :log)")
        .expression_attribute_values(":pk", AttributeValue::S(keys::record_pk(t.id(), id)))
        .expression_attribute_values(":log", AttributeValue::S(keys::surplus_log_prefix(id)))
        .send()
        .await
        .unwrap();
    found.items().len()
}

#[test]
fn a_new_load_keeps_its_first_entry_on_itself() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let created = create_load(&t, json!({"site_id": site, "volume_m3": 2})).await;
        created.expect(201, None);
        // A transaction writes each item twice: the load and its two list
        // keys, its site's check, and the rate limit's counting write at
        // most (9). No log item: two units more before.
        assert!(
            created.units.write <= 9.0,
            "a new load consumed {} write units",
            created.units.write
        );
        let id = created.body["data"]["id"].as_str().unwrap().to_owned();
        let uuid: Uuid = id.parse().unwrap();
        assert_eq!(log_items(&t, uuid).await, 0, "no item of its log yet");

        let first = log(&t, &id).await;
        assert_eq!(first.len(), 1);
        let entry = &first[0];
        assert_eq!(
            (
                &entry["status_from"],
                &entry["status_to"],
                &entry["message"]
            ),
            (&Value::Null, &json!("new"), &json!("created as new"))
        );
        assert_eq!(entry["created_at"], created.body["data"]["created_at"]);
        assert_eq!(entry["user_id"], Value::Null);
        assert_eq!(entry["id"], id, "the first entry's id is the load's");
        assert_eq!(log(&t, &id).await, first, "the same entry each time");

        // A status change stores its entry after the first, which stays.
        patch(&t, &id, json!({"status": "in_progress"}))
            .await
            .expect(200, None);
        patch(&t, &id, json!({"notes": "gate B"}))
            .await
            .expect(200, None);
        let entries = log(&t, &id).await;
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[0], first[0],
            "the first entry outlives the load's writes"
        );
        assert_eq!(
            (&entries[1]["status_from"], &entries[1]["status_to"]),
            (&json!("new"), &json!("in_progress"))
        );
        assert_eq!(log_items(&t, uuid).await, 1);

        // Another organization's key sees neither the load nor its log.
        let other = org().await;
        send(
            &other,
            Method::GET,
            &format!("/api/v1/surpluses/{id}/log"),
            None,
        )
        .await
        .expect(404, Some("surplus_not_found"));
    });
}

#[test]
fn a_load_stored_before_shows_its_first_entry_once() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let created = create_load(&t, json!({"site_id": site, "volume_m3": 2})).await;
        created.expect(201, None);
        let id = created.body["data"]["id"].as_str().unwrap().to_owned();
        let uuid: Uuid = id.parse().unwrap();
        let before = log(&t, &id).await;

        // As a version from before stored it: the load without the entry,
        // the entry an item of its log.
        let h = harness().await;
        let db = aws_sdk_dynamodb::Client::new(&h.sdk);
        let pk = keys::record_pk(t.id(), uuid);
        db.update_item()
            .table_name(h.store().table())
            .key("pk", AttributeValue::S(pk.clone()))
            .key("sk", AttributeValue::S(keys::surplus_sk(uuid)))
            .condition_expression("attribute_exists(created_as)")
            .update_expression("REMOVE created_as")
            .send()
            .await
            .unwrap();
        let entry: shared::model::surplus::LogEntry =
            serde_json::from_value(before[0].clone()).unwrap();
        let mut item = to_item(&entry).unwrap();
        item.insert("pk".into(), AttributeValue::S(pk));
        item.insert(
            "sk".into(),
            AttributeValue::S(keys::surplus_log_sk(uuid, entry.id)),
        );
        db.put_item()
            .table_name(h.store().table())
            .set_item(Some(item))
            .send()
            .await
            .unwrap();

        assert_eq!(log(&t, &id).await, before, "shown once, as before");
        patch(&t, &id, json!({"status": "rejected"}))
            .await
            .expect(200, None);
        let entries = log(&t, &id).await;
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0], before[0]);
        assert_eq!(entries[1]["status_to"], json!("rejected"));
    });
}
