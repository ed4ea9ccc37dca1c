//! Surplus loads: create, read, the status machine, the route lock, the
//! log, the race to `delivered`, and isolation. Waybills and pages have
//! modules of their own.

use api_tests::{Reply, TestOrg, harness, org, person, run, send};
use aws_sdk_dynamodb::types::AttributeValue;
use http::Method;
use serde_json::{Value, json};
use shared::model::member::Role;
use uuid::Uuid;

use crate::sites::new_site;
use crate::trucks::{new_truck, plate};

pub async fn create_load(t: &TestOrg, body: Value) -> Reply {
    send(t, Method::POST, "/api/v1/surpluses", Some(body)).await
}

pub async fn new_load(t: &TestOrg, site: &str) -> String {
    let reply = create_load(t, json!({"site_id": site, "volume_m3": 6.5})).await;
    reply.expect(201, None);
    reply.body["data"]["id"].as_str().unwrap().to_owned()
}

pub async fn patch(t: &TestOrg, id: &str, body: Value) -> Reply {
    send(
        t,
        Method::PATCH,
        &format!("/api/v1/surpluses/{id}"),
        Some(body),
    )
    .await
}

async fn read(t: &TestOrg, id: &str) -> Reply {
    send(t, Method::GET, &format!("/api/v1/surpluses/{id}"), None).await
}

async fn log(t: &TestOrg, id: &str) -> Vec<(Value, Value)> {
    let reply = send(t, Method::GET, &format!("/api/v1/surpluses/{id}/log"), None).await;
    reply.expect(200, None);
    reply.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["status_from"].clone(), e["status_to"].clone()))
        .collect()
}

/// A stored waybill, straight through the store (the upload routes are
/// tested on their own).
pub async fn give_waybill(t: &TestOrg, id: &str) {
    let path = format!("waybills/{}/{id}/w.png", t.id());
    let store = harness().await.store();
    api_tests::store_waybill(store, t.id(), id.parse().unwrap(), &path)
        .await
        .unwrap();
}

/// The organization's outbox records for load `id`.
async fn outbox_records(id: &str) -> usize {
    let h = harness().await;
    let db = aws_sdk_dynamodb::Client::new(&h.sdk);
    let now = chrono::Utc::now();
    let mut found = 0;
    let shards = (0..shared::store::engine::keys::HOUR_SHARDS).map(Some);
    let hours = [now, now - chrono::Duration::hours(1)];
    let partitions = hours.into_iter().flat_map(|hour| {
        let shards = shards.clone().chain([None]);
        shards.map(move |shard| shared::store::engine::keys::outbox_hour_pk(hour, shard))
    });
    for pk in partitions {
        let out = db
            .query()
            .table_name(h.store().table())
            .index_name("gsi1")
            .key_condition_expression("gsi1pk = :pk")
            .expression_attribute_values(":pk", AttributeValue::S(pk))
            .send()
            .await
            .unwrap();
        found += out
            .items()
            .iter()
            .filter(|i| {
                i.get("surplus_id")
                    .and_then(|v| v.as_s().ok())
                    .map(String::as_str)
                    == Some(id)
            })
            .count();
    }
    found
}

pub async fn public_point(owner: &TestOrg, public: bool) -> String {
    let site = new_site(owner, json!({"name": "Receiving yard"})).await;
    let reply = send(
        owner,
        Method::POST,
        "/api/v1/receiving-points",
        Some(json!({"site_id": site, "name": "Pit", "is_public": public})),
    )
    .await;
    reply.expect(201, None);
    reply.body["data"]["id"].as_str().unwrap().to_owned()
}

#[test]
fn create_returns_201_with_the_load() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let point = public_point(&t, false).await;
        let driver = person(t.id(), Role::Driver).await;
        let truck = new_truck(
            &t,
            json!({"license": plate(), "driverId": driver.profile_id}),
        )
        .await;
        let reply = create_load(
            &t,
            json!({"site_id": site, "volume_m3": 7.2555, "to_receiving_point_id": point, "truck_id": truck,
                   "additive": true, "material_grade": "C30/37", "manufacturer": "Acme", "description": "Left over",
                   "notes": "Gate B"}),
        )
        .await;
        reply.expect(201, None);
        assert!(
            reply.ddb_calls <= 6,
            "create cost {} calls",
            reply.ddb_calls
        );
        let d = &reply.body["data"];
        api_tests::assert_millisecond_timestamps(d);
        assert_eq!(d["status"], "new");
        assert_eq!(d["volume_m3"], 7.256, "kept to litres");
        assert_eq!(d["site_id"], site);
        assert_eq!(d["to_receiving_point_id"], point);
        assert!(d["to_site_id"].is_string(), "the receiving point's site");
        assert_eq!(d["truck_id"], truck);
        assert_eq!(
            d["driver_id"],
            driver.profile_id.to_string(),
            "the truck's driver now"
        );
        assert_eq!(d["additive"], true);
        assert_eq!(
            d["additive_billed_to"], "origin_site",
            "an additive's payer defaults to the origin"
        );
        assert_eq!(
            (&d["material_grade"], &d["manufacturer"]),
            (&json!("C30/37"), &json!("Acme"))
        );
        assert_eq!(
            (&d["description"], &d["notes"]),
            (&json!("Left over"), &json!("Gate B"))
        );
        assert_eq!(
            (&d["delivered_at"], &d["waybill"]),
            (&Value::Null, &Value::Null)
        );
        let id = d["id"].as_str().unwrap();
        assert_eq!(reply.header("location"), format!("/api/v1/surpluses/{id}"));
        let again = read(&t, id).await;
        again.expect(200, None);
        assert_eq!(&again.body["data"], d);
        assert!(again.ddb_calls <= 3, "read cost {} calls", again.ddb_calls);
        assert_eq!(log(&t, id).await, vec![(Value::Null, json!("new"))]);
    });
}

#[test]
fn create_checks_the_site_the_destination_and_the_truck() {
    run(async {
        let t = org().await;
        let other = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let theirs = new_site(&other, json!({"name": "Theirs"})).await;
        create_load(&t, json!({"site_id": theirs, "volume_m3": 1}))
            .await
            .expect(422, Some("site_not_found"));
        let archived = new_site(&t, json!({"name": "Closed"})).await;
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/sites/{archived}"),
            None,
        )
        .await
        .expect(200, None);
        create_load(&t, json!({"site_id": archived, "volume_m3": 1}))
            .await
            .expect(422, Some("site_archived"));
        // Another organization's receiving point: only a public one.
        let private = public_point(&other, false).await;
        create_load(
            &t,
            json!({"site_id": site, "volume_m3": 1, "to_receiving_point_id": private}),
        )
        .await
        .expect(422, Some("receiving_point_not_found"));
        let public = public_point(&other, true).await;
        let reply = create_load(
            &t,
            json!({"site_id": site, "volume_m3": 1, "to_receiving_point_id": public}),
        )
        .await;
        reply.expect(201, None);
        let own = public_point(&t, false).await;
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/receiving-points/{own}"),
            None,
        )
        .await
        .expect(200, None);
        create_load(
            &t,
            json!({"site_id": site, "volume_m3": 1, "to_receiving_point_id": own}),
        )
        .await
        .expect(422, Some("receiving_point_archived"));
        // A truck: this organization's, or a partner's that granted it
        // full access.
        let partner_truck = new_truck(&other, json!({"license": plate()})).await;
        create_load(
            &t,
            json!({"site_id": site, "volume_m3": 1, "truck_id": partner_truck}),
        )
        .await
        .expect(422, Some("truck_not_found"));
        send(
            &other,
            Method::POST,
            "/api/v1/org-access-grants",
            Some(json!({"grantee_org_id": t.id(), "scope": "full"})),
        )
        .await
        .expect(201, None);
        let reply = create_load(
            &t,
            json!({"site_id": site, "volume_m3": 1, "truck_id": partner_truck}),
        )
        .await;
        reply.expect(201, None);
        assert_eq!(reply.body["data"]["truck_id"], partner_truck);
        create_load(
            &t,
            json!({"site_id": site, "volume_m3": 1, "truck_id": Uuid::now_v7()}),
        )
        .await
        .expect(422, Some("truck_not_found"));
        for (body, field) in [
            (json!({"site_id": site}), "volume_m3"),
            (json!({"volume_m3": 1}), "site_id"),
            (json!({"site_id": site, "volume_m3": 0}), "volume_m3"),
            (json!({"site_id": site, "volume_m3": 100.001}), "volume_m3"),
            (
                json!({"site_id": site, "volume_m3": 1, "additive_billed_to": "driver"}),
                "additive_billed_to",
            ),
            (
                json!({"site_id": site, "volume_m3": 1, "notes": "x".repeat(2001)}),
                "notes",
            ),
        ] {
            let reply = create_load(&t, body.clone()).await;
            reply.expect(422, Some("validation_error"));
            assert!(
                reply.body["message"].as_str().unwrap().starts_with(field),
                "{body}: {}",
                reply.text
            );
        }
        let listed = send(&t, Method::GET, "/api/v1/surpluses", None).await;
        assert_eq!(
            listed.body["meta"]["count"], 2,
            "only the two valid loads exist"
        );
    });
}

#[test]
fn the_status_machine() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        // Allowed: new <-> in_progress, either to rejected or delivered.
        for path in [
            vec!["in_progress", "new", "in_progress", "rejected"],
            vec!["rejected"],
            vec!["in_progress", "delivered"],
            vec!["delivered"],
        ] {
            let id = new_load(&t, &site).await;
            give_waybill(&t, &id).await;
            let mut previous = "new";
            let mut expected = vec![(Value::Null, json!("new"))];
            for next in &path {
                let reply = patch(&t, &id, json!({"status": next})).await;
                reply.expect(200, None);
                assert_eq!(reply.body["data"]["status"], *next);
                expected.push((json!(previous), json!(next)));
                previous = next;
            }
            assert_eq!(log(&t, &id).await, expected);
            // Final states stay final; staying put is no transition.
            let last = *path.last().unwrap();
            for next in ["new", "in_progress", "delivered", "rejected"] {
                let reply = patch(&t, &id, json!({"status": next})).await;
                if next == last {
                    reply.expect(200, None);
                } else if last == "rejected" || last == "delivered" {
                    reply.expect(409, Some("invalid_status_transition"));
                }
                if matches!(last, "rejected" | "delivered") {
                    assert_eq!(read(&t, &id).await.body["data"]["status"], last);
                }
            }
            assert_eq!(
                log(&t, &id).await.len(),
                expected.len(),
                "refusals and no-ops write no entry"
            );
        }
    });
}

#[test]
fn delivery_needs_a_waybill_and_locks_the_route() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let other_site = new_site(&t, json!({"name": "Elsewhere"})).await;
        let point = public_point(&t, false).await;
        let id = new_load(&t, &site).await;
        patch(&t, &id, json!({"status": "delivered"}))
            .await
            .expect(409, Some("waybill_required"));
        assert_eq!(read(&t, &id).await.body["data"]["status"], "new");
        give_waybill(&t, &id).await;
        let delivered = patch(
            &t,
            &id,
            json!({"status": "delivered", "to_receiving_point_id": point}),
        )
        .await;
        delivered.expect(200, None);
        let d = &delivered.body["data"];
        assert_eq!(d["status"], "delivered");
        assert!(d["delivered_at"].is_string());
        assert_eq!(outbox_records(&id).await, 1);
        for change in [
            json!({"site_id": other_site}),
            json!({"to_receiving_point_id": null}),
            json!({"to_receiving_point_id": public_point(&t, false).await}),
        ] {
            patch(&t, &id, change.clone())
                .await
                .expect(422, Some("route_locked"));
        }
        // The same route, and the rest of the load, may still be written.
        let reply = patch(
            &t,
            &id,
            json!({"site_id": site, "to_receiving_point_id": point, "notes": "Signed"}),
        )
        .await;
        reply.expect(200, None);
        assert_eq!(reply.body["data"]["notes"], "Signed");
        assert_eq!(reply.body["data"]["delivered_at"], d["delivered_at"]);
        assert_eq!(
            outbox_records(&id).await,
            1,
            "one announcement per delivery"
        );
    });
}

#[test]
fn patch_takes_exactly_the_contracts_fields() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let id = new_load(&t, &site).await;
        let reply = patch(
            &t,
            &id,
            json!({"volume_m3": 9, "additive": true, "additive_billed_to": "truck", "material_grade": "C25",
                   "manufacturer": "M", "description": "D", "notes": "N"}),
        )
        .await;
        reply.expect(200, None);
        let d = &reply.body["data"];
        assert_eq!(
            (&d["volume_m3"], &d["additive_billed_to"], &d["notes"]),
            (&json!(9.0), &json!("truck"), &json!("N"))
        );
        for field in [
            "created_at",
            "delivered_at",
            "truck_id",
            "driver_id",
            "driverId",
        ] {
            let reply = patch(&t, &id, json!({"notes": "x", field: null})).await;
            reply.expect(422, Some("validation_error"));
            assert!(
                reply.body["message"].as_str().unwrap().starts_with(field),
                "{}",
                reply.text
            );
        }
        for bad in [
            json!({}),
            json!({"status": "lost"}),
            json!({"status": null}),
            json!({"volume_m3": -1}),
            json!({"site_id": null}),
        ] {
            patch(&t, &id, bad)
                .await
                .expect(422, Some("validation_error"));
        }
        patch(&t, &id, json!({"site_id": Uuid::now_v7()}))
            .await
            .expect(422, Some("site_not_found"));
        assert_eq!(
            read(&t, &id).await.body["data"]["notes"],
            "N",
            "nothing changed"
        );
    });
}

#[test]
fn racing_deliveries_make_one_transition() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let id = new_load(&t, &site).await;
        give_waybill(&t, &id).await;
        let replies = futures::future::join_all(
            (0..5).map(|_| patch(&t, &id, json!({"status": "delivered"}))),
        )
        .await;
        for reply in &replies {
            assert!(
                reply.status == 200 || reply.code() == "concurrent_update",
                "{}: {}",
                reply.status,
                reply.text
            );
            if reply.status == 200 {
                assert_eq!(reply.body["data"]["status"], "delivered");
            }
        }
        let entries = log(&t, &id).await;
        assert_eq!(
            entries.iter().filter(|(_, to)| to == "delivered").count(),
            1
        );
        assert_eq!(outbox_records(&id).await, 1);
    });
}

#[test]
fn archived_loads_and_other_organizations_loads_are_404() {
    run(async {
        let t = org().await;
        let other = org().await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let id = new_load(&t, &site).await;
        let path = format!("/api/v1/surpluses/{id}");
        for (method, path, body) in [
            (Method::GET, path.clone(), None),
            (Method::PATCH, path.clone(), Some(json!({"notes": "mine"}))),
            (Method::GET, format!("{path}/log"), None),
            (
                Method::POST,
                format!("{path}/waybill/upload"),
                Some(json!({"content_type": "image/png"})),
            ),
            (
                Method::POST,
                format!("{path}/waybill/confirm"),
                Some(
                    json!({"storage_path": format!("uploads/{}/{id}/{}.png", other.id(), uuid::Uuid::now_v7())}),
                ),
            ),
        ] {
            send(&other, method, &path, body)
                .await
                .expect(404, Some("surplus_not_found"));
        }
        let theirs = send(
            &other,
            Method::GET,
            &format!("/api/v1/surpluses?site_id={site}"),
            None,
        )
        .await;
        assert_eq!(theirs.body["meta"]["count"], 0);
        assert_eq!(
            send(&other, Method::GET, "/api/v1/surpluses", None)
                .await
                .body["meta"]["count"],
            0
        );
        assert_eq!(read(&t, &id).await.body["data"]["notes"], Value::Null);
        send(&t, Method::GET, "/api/v1/surpluses/nope", None)
            .await
            .expect(400, Some("invalid_surplus_id"));
        // An operator archives it: gone from the API.
        harness()
            .await
            .store()
            .surpluses()
            .archive(t.id(), id.parse().unwrap())
            .await
            .unwrap();
        read(&t, &id).await.expect(404, Some("surplus_not_found"));
        assert_eq!(
            send(&t, Method::GET, "/api/v1/surpluses", None).await.body["meta"]["count"],
            0
        );
        assert_eq!(
            send(
                &t,
                Method::GET,
                &format!("/api/v1/surpluses?site_id={site}"),
                None
            )
            .await
            .body["meta"]["count"],
            0
        );
    });
}
