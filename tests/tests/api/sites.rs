use api_tests::{Reply, TestOrg, call, harness, ids, new_key, org, run, send};
use aws_sdk_dynamodb::types::AttributeValue;
use http::Method;
use serde_json::{Value, json};
use shared::auth::Scope;
use uuid::Uuid;

pub async fn create_site(t: &TestOrg, body: Value) -> Reply {
    call(Method::POST, "/api/v1/sites")
        .key(&t.key)
        .json(&body)
        .send()
        .await
}

pub async fn new_site(t: &TestOrg, body: Value) -> String {
    let reply = create_site(t, body).await;
    reply.expect(201, None);
    reply.body["data"]["id"].as_str().unwrap().to_owned()
}

async fn get(t: &TestOrg, path: &str) -> Reply {
    call(Method::GET, path).key(&t.key).send().await
}

/// The scopes (own cells, public cells) a record is indexed under, read
/// straight from the table: each with an entry at every index precision.
pub async fn geo_entries(org: Uuid, kind: &str, id: &str, coordinates: (f64, f64)) -> usize {
    let h = harness().await;
    let db = aws_sdk_dynamodb::Client::new(&h.sdk);
    let c = shared::model::geo::Coordinates::new(coordinates.0, coordinates.1).unwrap();
    let mut found = 0;
    let own_sk = format!("{kind}#{id}");
    let public_sk = shared::store::records::geo::public_sk(
        shared::model::place::PlaceKind::from_tag(kind).unwrap(),
        &c,
        id.parse().unwrap(),
    );
    for (scope, sk) in [(org.to_string(), &own_sk), ("PUBLIC".into(), &public_sk)] {
        for precision in shared::model::geo::INDEX_PRECISIONS {
            let out = db
                .get_item()
                .table_name(h.store().table())
                .key(
                    "pk",
                    AttributeValue::S(shared::store::records::geo::cell_pk(
                        &scope,
                        precision,
                        &c.geohash(precision),
                    )),
                )
                .key("sk", AttributeValue::S(sk.clone()))
                .send()
                .await
                .unwrap();
            // An entry for these coordinates (a move within one coarse
            // cell keeps the key and changes the position).
            let here = out.item.is_some_and(|item| {
                let number = |name: &str| item[name].as_n().unwrap().parse::<f64>().unwrap();
                (number("lat"), number("lng")) == (c.lat, c.lng)
            });
            found += usize::from(here);
        }
    }
    let precisions = shared::model::geo::INDEX_PRECISIONS.len();
    assert_eq!(found % precisions, 0, "an entry at every precision or none");
    found / precisions
}

#[test]
fn create_returns_201_with_every_field() {
    run(async {
        let t = org().await;
        let reply = create_site(
            &t,
            json!({
                "name": "  Harbour pier  ", "street_address": "Satamakatu 1", "postal_code": "00160", "city": "Helsinki",
                "lat": 60.1653, "lng": 24.9569, "construction_id": "C-1", "external_id": "E-1",
                "metadata": {"project": "P7", "phase": "2"}, "contact_first_name": "Ann", "contact_last_name": "Lee",
                "contact_phone": "+358401112222", "info": "Gate B", "site_role": "construction_site", "type": "harbour",
                "customer_id": t.id()
            }),
        )
        .await;
        reply.expect(201, None);
        let d = &reply.body["data"];
        api_tests::assert_millisecond_timestamps(d);
        assert_eq!(d["name"], "Harbour pier");
        assert_eq!(d["status"], "active");
        assert_eq!(d["city"], "Helsinki");
        assert_eq!(d["coordinates"], json!({"lat": 60.1653, "lng": 24.9569}));
        assert_eq!(d["customer_id"], t.id().to_string());
        assert_eq!(d["type"], "harbour");
        assert_eq!(d["site_role"], "construction_site");
        assert_eq!(d["metadata"], json!({"project": "P7", "phase": "2"}));
        assert_eq!(
            d["members"],
            json!([{"member_id": null, "first_name": "Ann", "last_name": "Lee", "phone": "+358401112222", "role": "site_contact"}])
        );
        let id = d["id"].as_str().unwrap();
        assert_eq!(reply.header("location"), format!("/api/v1/sites/{id}"));
        // Stored, and indexed for the nearby search in the same write.
        let read = get(&t, &format!("/api/v1/sites/{id}")).await;
        assert_eq!(&read.body["data"], d);
        assert_eq!(geo_entries(t.id(), "SITE", id, (60.1653, 24.9569)).await, 1);
    });
}

#[test]
fn customer_id_defaults_to_and_must_equal_the_keys_organization() {
    run(async {
        let t = org().await;
        let other = org().await;
        let reply = create_site(&t, json!({"name": "Depot"})).await;
        reply.expect(201, None);
        assert_eq!(reply.body["data"]["customer_id"], t.id().to_string());
        assert_eq!(reply.body["data"]["coordinates"], Value::Null);
        assert_eq!(reply.body["data"]["members"], json!([]));
        assert_eq!(reply.body["data"]["metadata"], json!({}));
        create_site(&t, json!({"name": "Depot", "customer_id": other.id()}))
            .await
            .expect(403, Some("org_id_mismatch"));
        let list = get(&t, "/api/v1/sites").await;
        assert_eq!(list.body["meta"]["count"], 1);
    });
}

#[test]
fn create_validation() {
    run(async {
        let t = org().await;
        for (body, field) in [
            (json!({}), "name"),
            (json!({"name": "  "}), "name"),
            (json!({"name": "x".repeat(501)}), "name"),
            (json!({"name": "x", "metadata": {"a": 1}}), "metadata.a"),
            (json!({"name": "x", "metadata": "a=b"}), "metadata"),
            (json!({"name": "x", "metadata": {"a": null}}), "metadata.a"),
            (json!({"name": "x", "lat": 60.0}), "lat and lng"),
            (json!({"name": "x", "lat": 95.0, "lng": 20.0}), "lat"),
            (json!({"name": "x", "lat": "60", "lng": 20.0}), "lat"),
            (json!({"name": "x", "site_role": "warehouse"}), "site_role"),
            (
                json!({"name": "x", "contact_phone": "0401234567"}),
                "contact_phone",
            ),
            (
                json!({"name": "x", "customer_id": "not-a-uuid"}),
                "customer_id",
            ),
        ] {
            let reply = create_site(&t, body.clone()).await;
            reply.expect(422, Some("validation_error"));
            assert!(
                reply.body["message"].as_str().unwrap().contains(field),
                "{body}: {}",
                reply.text
            );
        }
        call(Method::POST, "/api/v1/sites")
            .key(&t.key)
            .raw("{")
            .send()
            .await
            .expect(400, Some("invalid_json"));
        assert_eq!(
            get(&t, "/api/v1/sites?status=all").await.body["meta"]["count"],
            0,
            "nothing stored"
        );
    });
}

#[test]
fn list_is_newest_first_and_hides_archived_by_default() {
    run(async {
        let t = org().await;
        let first = new_site(&t, json!({"name": "First"})).await;
        let second = new_site(&t, json!({"name": "Second"})).await;
        let third = new_site(&t, json!({"name": "Third"})).await;
        send(&t, Method::DELETE, &format!("/api/v1/sites/{second}"), None)
            .await
            .expect(200, None);
        let active = get(&t, "/api/v1/sites").await;
        active.expect(200, None);
        assert_eq!(ids(&active), vec![third.clone(), first.clone()]);
        assert_eq!(active.body["meta"]["count"], 2);
        assert!(
            active.body["data"][0].get("metadata").is_none(),
            "list rows carry no metadata"
        );
        assert!(
            active.ddb_calls <= 2 + api_tests::SPREAD_LIST_QUERIES,
            "list cost {} calls",
            active.ddb_calls
        );
        assert_eq!(
            ids(&get(&t, "/api/v1/sites?status=active").await),
            vec![third.clone(), first.clone()]
        );
        let all = get(&t, "/api/v1/sites?status=all").await;
        assert_eq!(ids(&all), vec![third, second, first]);
        assert_eq!(all.body["data"][1]["status"], "archived");
        get(&t, "/api/v1/sites?status=archived")
            .await
            .expect(422, Some("validation_error"));
    });
}

#[test]
fn single_read_includes_archived_and_costs_four_calls() {
    run(async {
        let t = org().await;
        let id = new_site(&t, json!({"name": "Yard"})).await;
        let read = get(&t, &format!("/api/v1/sites/{id}")).await;
        read.expect(200, None);
        // The key and its counters, then the site and its people, at once.
        assert!(
            read.ddb_calls <= 4,
            "single read cost {} calls",
            read.ddb_calls
        );
        send(&t, Method::DELETE, &format!("/api/v1/sites/{id}"), None)
            .await
            .expect(200, None);
        let archived = get(&t, &format!("/api/v1/sites/{id}")).await;
        archived.expect(200, None);
        assert_eq!(archived.body["data"]["status"], "archived");
        get(&t, &format!("/api/v1/sites/{}", Uuid::now_v7()))
            .await
            .expect(404, Some("site_not_found"));
        get(&t, "/api/v1/sites/nope")
            .await
            .expect(400, Some("invalid_site_id"));
    });
}

#[test]
fn patch_is_partial_and_replaces_metadata() {
    run(async {
        let t = org().await;
        let id = new_site(
            &t,
            json!({"name": "Yard", "city": "Espoo", "metadata": {"a": "1", "b": "2"}, "lat": 60.2, "lng": 24.8}),
        )
        .await;
        let path = format!("/api/v1/sites/{id}");
        let reply = send(
            &t,
            Method::PATCH,
            &path,
            Some(json!({"metadata": {"c": "3"}, "info": "North gate", "lat": 61.5, "lng": 23.8})),
        )
        .await;
        reply.expect(200, None);
        let d = &reply.body["data"];
        assert_eq!(d["metadata"], json!({"c": "3"}));
        assert_eq!(d["name"], "Yard");
        assert_eq!(d["city"], "Espoo");
        assert_eq!(d["info"], "North gate");
        assert_eq!(d["coordinates"], json!({"lat": 61.5, "lng": 23.8}));
        assert_eq!(&get(&t, &path).await.body["data"], d);
        // The index moved with the site.
        assert_eq!(geo_entries(t.id(), "SITE", &id, (60.2, 24.8)).await, 0);
        assert_eq!(geo_entries(t.id(), "SITE", &id, (61.5, 23.8)).await, 1);
        // null clears optional fields; customer_id may be repeated but not changed.
        let cleared = send(
            &t,
            Method::PATCH,
            &path,
            Some(json!({"city": null, "lat": null, "lng": null, "customer_id": t.id()})),
        )
        .await;
        cleared.expect(200, None);
        assert_eq!(cleared.body["data"]["city"], Value::Null);
        assert_eq!(cleared.body["data"]["coordinates"], Value::Null);
        assert_eq!(geo_entries(t.id(), "SITE", &id, (61.5, 23.8)).await, 0);
        let other = org().await;
        send(
            &t,
            Method::PATCH,
            &path,
            Some(json!({"customer_id": other.id()})),
        )
        .await
        .expect(403, Some("org_id_mismatch"));
        for body in [
            json!({}),
            json!({"name": ""}),
            json!({"name": null}),
            json!({"metadata": {"k": 5}}),
            json!({"lat": 1.0}),
        ] {
            send(&t, Method::PATCH, &path, Some(body))
                .await
                .expect(422, Some("validation_error"));
        }
        send(
            &t,
            Method::PATCH,
            &format!("/api/v1/sites/{}", Uuid::now_v7()),
            Some(json!({"name": "x"})),
        )
        .await
        .expect(404, Some("site_not_found"));
    });
}

#[test]
fn archive_state_table() {
    run(async {
        let t = org().await;
        let id = new_site(&t, json!({"name": "Yard", "lat": 60.3, "lng": 25.0})).await;
        let path = format!("/api/v1/sites/{id}");
        let restore = format!("{path}/restore");
        // active + restore -> 409, unchanged
        send(&t, Method::POST, &restore, None)
            .await
            .expect(409, Some("not_archived"));
        // active + DELETE -> archived, out of the default list and the index
        let archived = send(&t, Method::DELETE, &path, None).await;
        archived.expect(200, None);
        assert_eq!(archived.body["data"]["status"], "archived");
        assert_eq!(geo_entries(t.id(), "SITE", &id, (60.3, 25.0)).await, 0);
        assert!(ids(&get(&t, "/api/v1/sites").await).is_empty());
        // archived + DELETE -> 409, unchanged
        send(&t, Method::DELETE, &path, None)
            .await
            .expect(409, Some("already_archived"));
        // archived + PATCH -> 409, unchanged
        send(&t, Method::PATCH, &path, Some(json!({"name": "Renamed"})))
            .await
            .expect(409, Some("record_archived"));
        assert_eq!(get(&t, &path).await.body["data"]["name"], "Yard");
        // archived + restore -> active, back in the list and the index
        let restored = send(&t, Method::POST, &restore, None).await;
        restored.expect(200, None);
        assert_eq!(restored.body["data"]["status"], "active");
        assert_eq!(ids(&get(&t, "/api/v1/sites").await), vec![id.clone()]);
        assert_eq!(geo_entries(t.id(), "SITE", &id, (60.3, 25.0)).await, 1);
        send(&t, Method::PATCH, &path, Some(json!({"name": "Renamed"})))
            .await
            .expect(200, None);
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/sites/{}", Uuid::now_v7()),
            None,
        )
        .await
        .expect(404, Some("site_not_found"));
        send(
            &t,
            Method::POST,
            &format!("/api/v1/sites/{}/restore", Uuid::now_v7()),
            None,
        )
        .await
        .expect(404, Some("site_not_found"));
    });
}

#[test]
fn members_lists_people_without_email() {
    run(async {
        let t = org().await;
        let id = new_site(
            &t,
            json!({"name": "Yard", "contact_first_name": "Ann", "contact_phone": "+358409998888"}),
        )
        .await;
        let reply = get(&t, &format!("/api/v1/sites/{id}/members")).await;
        reply.expect(200, None);
        assert_eq!(
            reply.body,
            json!({"data": [{"member_id": null, "first_name": "Ann", "last_name": null, "phone": "+358409998888", "role": "site_contact"}], "meta": {"count": 1, "next_cursor": null}})
        );
        let empty = new_site(&t, json!({"name": "Empty"})).await;
        assert_eq!(
            get(&t, &format!("/api/v1/sites/{empty}/members"))
                .await
                .body["meta"]["count"],
            0
        );
        get(&t, &format!("/api/v1/sites/{}/members", Uuid::now_v7()))
            .await
            .expect(404, Some("site_not_found"));
    });
}

#[test]
fn scopes_are_enforced() {
    run(async {
        let t = org().await;
        let id = new_site(&t, json!({"name": "Yard"})).await;
        let reader = TestOrg {
            org: t.org.clone(),
            key: new_key(t.id(), &[Scope::ReadData]).await,
        };
        get(&reader, &format!("/api/v1/sites/{id}"))
            .await
            .expect(200, None);
        create_site(&reader, json!({"name": "No"}))
            .await
            .expect(403, Some("insufficient_scope"));
        send(
            &reader,
            Method::DELETE,
            &format!("/api/v1/sites/{id}"),
            None,
        )
        .await
        .expect(403, Some("insufficient_scope"));
        let orgs_only = TestOrg {
            org: t.org.clone(),
            key: new_key(t.id(), &[Scope::ReadOrgs, Scope::WriteOrgsSelf]).await,
        };
        get(&orgs_only, "/api/v1/sites")
            .await
            .expect(403, Some("insufficient_scope"));
    });
}

#[test]
fn another_organizations_key_never_sees_or_changes_a_site() {
    run(async {
        let owner = org().await;
        let other = org().await;
        let id = new_site(&owner, json!({"name": "Private", "metadata": {"k": "v"}})).await;
        let path = format!("/api/v1/sites/{id}");
        get(&other, &path).await.expect(404, Some("site_not_found"));
        get(&other, &format!("{path}/members"))
            .await
            .expect(404, Some("site_not_found"));
        send(&other, Method::PATCH, &path, Some(json!({"name": "Mine"})))
            .await
            .expect(404, Some("site_not_found"));
        send(&other, Method::DELETE, &path, None)
            .await
            .expect(404, Some("site_not_found"));
        send(&other, Method::POST, &format!("{path}/restore"), None)
            .await
            .expect(404, Some("site_not_found"));
        assert!(ids(&get(&other, "/api/v1/sites?status=all").await).is_empty());
        let read = get(&owner, &path).await;
        assert_eq!(read.body["data"]["name"], "Private");
        assert_eq!(read.body["data"]["status"], "active");
    });
}
