use api_tests::{TestOrg, call, harness, new_key, org, run, unique};
use aws_sdk_dynamodb::types::AttributeValue;
use http::Method;
use serde_json::{Value, json};
use shared::auth::Scope;
use shared::model::member::Role;
use uuid::Uuid;

const FIELDS: [&str; 12] = [
    "id",
    "name",
    "status",
    "parent_id",
    "children",
    "business_code",
    "street_address",
    "postal_code",
    "city",
    "invoice_email",
    "created_at",
    "updated_at",
];

fn assert_org_shape(value: &Value) {
    let object = value.as_object().expect("organization object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut want = FIELDS.to_vec();
    want.sort_unstable();
    assert_eq!(keys, want);
    assert_eq!(value["status"], "active");
    assert!(value["children"].is_array());
    api_tests::assert_millisecond_timestamps(value);
}

async fn create_child(parent: &TestOrg, body: Value) -> api_tests::Reply {
    call(Method::POST, "/api/v1/orgs")
        .key(&parent.key)
        .json(&body)
        .send()
        .await
}

async fn patch(t: &TestOrg, id: impl std::fmt::Display, body: Value) -> api_tests::Reply {
    call(Method::PATCH, &format!("/api/v1/orgs/{id}"))
        .key(&t.key)
        .json(&body)
        .send()
        .await
}

async fn get(t: &TestOrg, id: impl std::fmt::Display) -> api_tests::Reply {
    call(Method::GET, &format!("/api/v1/orgs/{id}"))
        .key(&t.key)
        .send()
        .await
}

#[test]
fn list_is_the_keys_organization_only() {
    run(async {
        let t = org().await;
        let _other = org().await;
        let reply = call(Method::GET, "/api/v1/orgs").key(&t.key).send().await;
        reply.expect(200, None);
        assert_eq!(reply.body["meta"], json!({"count": 1}));
        let rows = reply.body["data"].as_array().unwrap();
        assert_eq!(rows.len(), 1);
        assert_org_shape(&rows[0]);
        assert_eq!(rows[0]["id"], t.id().to_string());
        assert_eq!(rows[0]["name"], t.org.name);
        assert_eq!(rows[0]["parent_id"], Value::Null);
        assert_eq!(rows[0]["invoice_email"], "billing@example.com");
        assert!(
            reply.ddb_calls <= 3,
            "GET /orgs cost {} DynamoDB calls",
            reply.ddb_calls
        );
    });
}

#[test]
fn list_shows_direct_children() {
    run(async {
        let t = org().await;
        let name = unique("Child");
        let child = create_child(&t, json!({"name": name})).await;
        child.expect(201, None);
        let reply = call(Method::GET, "/api/v1/orgs").key(&t.key).send().await;
        let children = &reply.body["data"][0]["children"];
        assert_eq!(
            children,
            &json!([{"id": child.body["data"]["id"], "name": name, "status": "active"}])
        );
        assert_eq!(
            reply.ddb_calls, 3,
            "the key and its budget at once, and one query"
        );
        // The key is warm on this instance: its admission and the query
        // start together (warm.rs pins the one round trip).
        assert!(reply.round_trips <= 2, "{} round trips", reply.round_trips);
    });
}

#[test]
fn read_own_and_direct_child_only() {
    run(async {
        let t = org().await;
        let own = get(&t, t.id()).await;
        own.expect(200, None);
        assert_org_shape(&own.body["data"]);
        assert!(
            own.ddb_calls <= 3,
            "single read cost {} DynamoDB calls",
            own.ddb_calls
        );

        let child = create_child(&t, json!({"name": unique("Child")})).await;
        let child_id = child.body["data"]["id"].as_str().unwrap().to_owned();
        let read = get(&t, &child_id).await;
        read.expect(200, None);
        assert_eq!(read.body["data"]["parent_id"], t.id().to_string());

        // A grandchild is not a direct child.
        let child_org = TestOrg {
            org: serde_json::from_value(read.body["data"].clone()).unwrap(),
            key: new_key(child_id.parse().unwrap(), &[Scope::All]).await,
        };
        let grandchild = create_child(&child_org, json!({"name": unique("Grandchild")})).await;
        grandchild.expect(201, None);
        get(&t, grandchild.body["data"]["id"].as_str().unwrap())
            .await
            .expect(404, Some("org_not_found"));
        // The child does not see its parent.
        get(&child_org, t.id())
            .await
            .expect(404, Some("org_not_found"));
    });
}

#[test]
fn another_organization_is_404() {
    run(async {
        let t = org().await;
        let other = org().await;
        get(&t, other.id()).await.expect(404, Some("org_not_found"));
        get(&t, Uuid::now_v7())
            .await
            .expect(404, Some("org_not_found"));
    });
}

#[test]
fn malformed_org_id_is_400_invalid_org_id() {
    run(async {
        let t = org().await;
        get(&t, "not-a-uuid")
            .await
            .expect(400, Some("invalid_org_id"));
        patch(&t, "12345", json!({"name": "x"}))
            .await
            .expect(400, Some("invalid_org_id"));
    });
}

#[test]
fn create_makes_a_sub_organization() {
    run(async {
        let t = org().await;
        let name = unique("Sub");
        let reply = create_child(
            &t,
            json!({"name": format!("  {name} "), "business_code": "7654321-0", "city": "Tampere", "invoice_email": "ap@example.com"}),
        )
        .await;
        reply.expect(201, None);
        let data = &reply.body["data"];
        assert_org_shape(data);
        assert_eq!(data["name"], name);
        assert_eq!(data["parent_id"], t.id().to_string());
        assert_eq!(data["city"], "Tampere");
        assert_eq!(data["street_address"], "");
        assert_eq!(data["invoice_email"], "ap@example.com");
        assert_eq!(
            reply.header("location"),
            format!("/api/v1/orgs/{}", data["id"].as_str().unwrap())
        );
        // Stored: readable by id, listed as a child.
        let stored = get(&t, data["id"].as_str().unwrap()).await;
        assert_eq!(&stored.body["data"], data);
        // parent_id may name the key's organization.
        create_child(&t, json!({"name": unique("Sub"), "parent_id": t.id()}))
            .await
            .expect(201, None);
    });
}

#[test]
fn create_copies_active_org_admins_only() {
    run(async {
        let t = org().await;
        let members = harness().await.store().members();
        let admin = api_tests::person(t.id(), Role::OrgAdmin).await;
        let plain = api_tests::person(t.id(), Role::Member).await;
        let reply = create_child(&t, json!({"name": unique("Sub")})).await;
        reply.expect(201, None);
        let child: Uuid = reply.body["data"]["id"].as_str().unwrap().parse().unwrap();
        let copied = members
            .get(child, admin.profile_id)
            .await
            .unwrap()
            .expect("admin copied");
        assert_eq!(
            (copied.role, copied.active, copied.org_id),
            (Role::OrgAdmin, true, child)
        );
        assert_eq!(copied.phone, admin.phone);
        assert!(
            members
                .get(child, plain.profile_id)
                .await
                .unwrap()
                .is_none()
        );
    });
}

#[test]
fn taken_name_is_409_and_nothing_is_stored() {
    run(async {
        let t = org().await;
        let name = unique("Taken");
        create_child(&t, json!({"name": name}))
            .await
            .expect(201, None);
        let variant = format!("  {}  ", name.to_uppercase().replace(' ', "   "));
        create_child(&t, json!({"name": variant}))
            .await
            .expect(409, Some("org_name_conflict"));
        let list = call(Method::GET, "/api/v1/orgs").key(&t.key).send().await;
        assert_eq!(
            list.body["data"][0]["children"].as_array().unwrap().len(),
            1
        );
    });
}

#[test]
fn names_are_unique_among_siblings_only() {
    run(async {
        let t = org().await;
        let other = org().await;
        let name = unique("Branch");
        // Another customer's child may carry the same name: no 409 tells a
        // customer what names others use.
        for parent in [&t, &other] {
            create_child(parent, json!({"name": name}))
                .await
                .expect(201, None);
        }
        // A child may share its parent's (top-level) name.
        create_child(&t, json!({"name": t.org.name}))
            .await
            .expect(201, None);
        // Top-level names are not unique: one namespace across customers
        // would tell each whether another uses a name.
        let store = harness().await.store();
        store
            .orgs()
            .create_top_level(&api_tests::named(&other.org.name.to_lowercase()), true)
            .await
            .unwrap();
    });
}

#[test]
fn concurrent_creates_with_one_name_admit_one() {
    run(async {
        let t = org().await;
        let name = unique("Race");
        let replies =
            futures::future::join_all((0..5).map(|_| create_child(&t, json!({"name": name}))))
                .await;
        let created = replies.iter().filter(|r| r.status == 201).count();
        let conflicts = replies.iter().filter(|r| r.status == 409).count();
        assert_eq!((created, conflicts), (1, 4));
    });
}

#[test]
fn create_rules() {
    run(async {
        let t = org().await;
        let other = org().await;
        create_child(&t, json!({"name": unique("X"), "parent_id": other.id()}))
            .await
            .expect(403, Some("org_id_mismatch"));
        let missing = create_child(&t, json!({"city": "Oulu"})).await;
        missing.expect(422, Some("validation_error"));
        assert!(missing.body["message"].as_str().unwrap().contains("name"));
        create_child(&t, json!({"name": "   "}))
            .await
            .expect(422, Some("validation_error"));
        create_child(&t, json!({"name": "x".repeat(501)}))
            .await
            .expect(422, Some("validation_error"));
        let email = create_child(
            &t,
            json!({"name": unique("X"), "invoice_email": "not-an-email"}),
        )
        .await;
        email.expect(422, Some("validation_error"));
        assert!(
            email.body["message"]
                .as_str()
                .unwrap()
                .starts_with("invoice_email")
        );
        let typed = create_child(&t, json!({"name": 42})).await;
        typed.expect(422, Some("validation_error"));
        assert!(typed.body["message"].as_str().unwrap().starts_with("name"));
        call(Method::POST, "/api/v1/orgs")
            .key(&t.key)
            .raw("{not json")
            .send()
            .await
            .expect(400, Some("invalid_json"));
        call(Method::POST, "/api/v1/orgs")
            .key(&t.key)
            .send()
            .await
            .expect(400, Some("invalid_json"));
        call(Method::POST, "/api/v1/orgs")
            .key(&t.key)
            .json(&json!(["a"]))
            .send()
            .await
            .expect(422, Some("validation_error"));
        let huge = json!({"name": "x", "city": "y".repeat(1_100_000)});
        call(Method::POST, "/api/v1/orgs")
            .key(&t.key)
            .json(&huge)
            .send()
            .await
            .expect(413, Some("payload_too_large"));
        let reader = new_key(t.id(), &[Scope::ReadOrgs, Scope::WriteData]).await;
        call(Method::POST, "/api/v1/orgs")
            .key(&reader)
            .json(&json!({"name": unique("X")}))
            .send()
            .await
            .expect(403, Some("insufficient_scope"));
        // None of the refused requests stored a child.
        let list = call(Method::GET, "/api/v1/orgs").key(&t.key).send().await;
        assert_eq!(list.body["data"][0]["children"], json!([]));
    });
}

#[test]
fn patch_updates_writable_fields() {
    run(async {
        let t = org().await;
        let name = unique("Renamed");
        let reply = patch(
            &t,
            t.id(),
            json!({"name": format!("  {name}  "), "city": " Oulu ", "business_code": null, "invoice_email": null,
                   "status": "deleted", "parent_id": Uuid::now_v7(), "id": Uuid::now_v7(), "created_at": "2000-01-01T00:00:00Z"}),
        )
        .await;
        reply.expect(200, None);
        let data = &reply.body["data"];
        assert_org_shape(data);
        assert_eq!(data["name"], name);
        assert_eq!(data["city"], "Oulu");
        assert_eq!(data["business_code"], Value::Null);
        assert_eq!(data["invoice_email"], Value::Null);
        assert_eq!(data["status"], "active");
        assert_eq!(data["id"], t.id().to_string());
        assert_eq!(data["parent_id"], Value::Null);
        assert_eq!(data["street_address"], "Testikatu 1");
        assert_ne!(data["updated_at"], data["created_at"]);
        // Stored.
        let read = get(&t, t.id()).await;
        assert_eq!(&read.body["data"], data);
    });
}

#[test]
fn patch_rename_to_a_siblings_name_is_409_and_changes_nothing() {
    run(async {
        let t = org().await;
        let taken = create_child(&t, json!({"name": unique("Sibling")})).await;
        let taken = taken.body["data"]["name"].as_str().unwrap().to_owned();
        let child = create_child(&t, json!({"name": unique("Branch"), "city": "Oulu"})).await;
        let id: Uuid = child.body["data"]["id"].as_str().unwrap().parse().unwrap();
        let child_key = api_tests::new_key(id, &[shared::auth::Scope::All]).await;
        let child_org = api_tests::TestOrg {
            key: child_key,
            org: serde_json::from_value(child.body["data"].clone()).unwrap(),
        };
        patch(
            &child_org,
            id,
            json!({"name": taken.to_uppercase(), "city": "Vaasa"}),
        )
        .await
        .expect(409, Some("org_name_conflict"));
        let read = get(&t, id).await;
        assert_eq!(read.body["data"]["city"], "Oulu");
        // Changing only the letter case keeps the same name.
        let upper = read.body["data"]["name"].as_str().unwrap().to_uppercase();
        patch(&child_org, id, json!({"name": upper}))
            .await
            .expect(200, None);
    });
}

#[test]
fn a_top_level_rename_never_tells_whether_another_customer_uses_the_name() {
    run(async {
        let t = org().await;
        let other = org().await;
        let reply = patch(&t, t.id(), json!({"name": other.org.name, "city": "Vaasa"})).await;
        reply.expect(200, None);
        assert_eq!(reply.body["data"]["name"], other.org.name);
        // Both keep working under the one name.
        assert_eq!(
            get(&other, other.id()).await.body["data"]["name"],
            other.org.name
        );
    });
}

#[test]
fn patch_rename_of_a_child_updates_the_parents_children() {
    run(async {
        let t = org().await;
        let child = create_child(&t, json!({"name": unique("Child")})).await;
        let child_id: Uuid = child.body["data"]["id"].as_str().unwrap().parse().unwrap();
        let child_org = TestOrg {
            org: serde_json::from_value(child.body["data"].clone()).unwrap(),
            key: new_key(child_id, &[Scope::All]).await,
        };
        let name = unique("Renamed child");
        patch(&child_org, child_id, json!({"name": name}))
            .await
            .expect(200, None);
        let list = call(Method::GET, "/api/v1/orgs").key(&t.key).send().await;
        assert_eq!(list.body["data"][0]["children"][0]["name"], name);
    });
}

#[test]
fn patch_errors() {
    run(async {
        let t = org().await;
        let other = org().await;
        let url_self = t.id();
        patch(&t, other.id(), json!({"name": "x"}))
            .await
            .expect(403, Some("org_id_mismatch"));
        let child = create_child(&t, json!({"name": unique("Child")})).await;
        patch(
            &t,
            child.body["data"]["id"].as_str().unwrap(),
            json!({"city": "x"}),
        )
        .await
        .expect(403, Some("org_id_mismatch"));
        call(Method::PATCH, &format!("/api/v1/orgs/{url_self}"))
            .key(&t.key)
            .raw("nope")
            .send()
            .await
            .expect(400, Some("invalid_json"));
        for body in [
            json!({}),
            json!({"status": "suspended"}),
            json!({"name": ""}),
            json!({"name": "  "}),
            json!({"name": null}),
            json!({"name": "x".repeat(501)}),
            json!({"street_address": "x".repeat(501)}),
            // The limit counts what was sent: 500 characters and padding.
            json!({"name": format!("   {}   ", "x".repeat(500))}),
            json!({"city": format!("{} ", "x".repeat(500))}),
            json!({"invoice_email": "no-at-sign"}),
            json!({"invoice_email": ""}),
            json!({"city": 5}),
        ] {
            patch(&t, url_self, body.clone())
                .await
                .expect(422, Some("validation_error"));
        }
        // 500 characters is still fine.
        patch(&t, url_self, json!({"street_address": "é".repeat(500)}))
            .await
            .expect(200, None);
        // Another organization's key changed nothing.
        let read = get(&other, other.id()).await;
        assert_eq!(read.body["data"]["name"], other.org.name);
    });
}

#[test]
fn missing_organization_is_404_org_not_found() {
    run(async {
        let t = org().await;
        let h = harness().await;
        // Soft-delete the organization behind the key's back.
        aws_sdk_dynamodb::Client::new(&h.sdk)
            .update_item()
            .table_name(h.store().table())
            .key("pk", AttributeValue::S(format!("ORG#{}", t.id())))
            .key("sk", AttributeValue::S("ORG".into()))
            .update_expression("SET #s = :deleted")
            .expression_attribute_names("#s", "status")
            .expression_attribute_values(":deleted", AttributeValue::S("deleted".into()))
            .send()
            .await
            .unwrap();
        call(Method::GET, "/api/v1/orgs")
            .key(&t.key)
            .send()
            .await
            .expect(404, Some("org_not_found"));
        get(&t, t.id()).await.expect(404, Some("org_not_found"));
        patch(&t, t.id(), json!({"city": "x"}))
            .await
            .expect(404, Some("org_not_found"));
        create_child(&t, json!({"name": unique("Orphan")}))
            .await
            .expect(404, Some("org_not_found"));
    });
}
