use api_tests::{Reply, TestOrg, harness, ids, org, person, run, send};
use http::Method;
use serde_json::{Value, json};
use shared::model::member::Role;
use uuid::Uuid;

pub async fn create_truck(t: &TestOrg, body: Value) -> Reply {
    let mut body = body;
    if body.get("orgId").is_none() {
        body["orgId"] = json!(t.id());
    }
    if body.get("country").is_none() {
        body["country"] = json!("fi");
    }
    send(t, Method::POST, "/api/v1/trucks", Some(body)).await
}

pub async fn new_truck(t: &TestOrg, body: Value) -> String {
    let reply = create_truck(t, body).await;
    reply.expect(201, None);
    reply.body["data"]["id"].as_str().unwrap().to_owned()
}

/// A plate no other test uses.
pub fn plate() -> String {
    let n = Uuid::new_v4().as_u128();
    format!("T{}-{}", n % 1000, (n / 1000) % 1_000_000)
}

async fn plate_taken(org: uuid::Uuid, country: &str, normalized: &str) -> bool {
    let h = harness().await;
    let db = aws_sdk_dynamodb::Client::new(&h.sdk);
    db.get_item()
        .table_name(h.store().table())
        .key(
            "pk",
            shared::store::engine::item::s(shared::store::engine::keys::plate_pk(
                org, country, normalized,
            )),
        )
        .key("sk", shared::store::engine::item::s("UNIQUE"))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .is_some()
}

fn normalized(plate: &str) -> String {
    plate.replace(['-', ' '], "").to_uppercase()
}

async fn truck(t: &TestOrg, id: &str) -> Reply {
    send(t, Method::GET, &format!("/api/v1/trucks/{id}"), None).await
}

#[test]
fn create_returns_201_with_the_truck() {
    run(async {
        let t = org().await;
        let driver = person(t.id(), Role::Driver).await;
        let factory = send(
            &t,
            Method::POST,
            "/api/v1/factories",
            Some(json!({"name": "Plant"})),
        )
        .await;
        let factory = factory.body["data"]["id"].as_str().unwrap().to_owned();
        let license = plate();
        let reply = create_truck(
            &t,
            json!({"license": format!(" {} ", license.to_lowercase()), "country": "se", "capacity": 8.5,
                   "name": " Mixer 7 ", "driverId": driver.profile_id, "factoryId": factory, "notes": "Night shift"}),
        )
        .await;
        reply.expect(201, None);
        let d = &reply.body["data"];
        api_tests::assert_millisecond_timestamps(d);
        assert_eq!(d["license"], license.to_lowercase(), "as written, trimmed");
        assert_eq!(d["country"], "se");
        assert_eq!(d["capacity_m3"], 8.5);
        assert_eq!(d["name"], "Mixer 7");
        assert_eq!(d["driver_id"], driver.profile_id.to_string());
        assert_eq!(d["factory_id"], factory);
        assert_eq!(d["notes"], "Night shift");
        assert_eq!(d["coordinates"], Value::Null);
        assert_eq!(d["position_updated_at"], Value::Null);
        for camel in ["orgId", "driverId", "factoryId", "capacity", "org_id"] {
            assert!(d.get(camel).is_none(), "{camel} in the response");
        }
        let id = d["id"].as_str().unwrap();
        assert_eq!(reply.header("location"), format!("/api/v1/trucks/{id}"));
        assert!(
            reply.ddb_calls <= 4,
            "create cost {} calls",
            reply.ddb_calls
        );
        assert!(plate_taken(t.id(), "se", &normalized(&license)).await);
        let read = truck(&t, id).await;
        read.expect(200, None);
        assert_eq!(&read.body["data"], d);
        assert!(read.ddb_calls <= 3, "read cost {} calls", read.ddb_calls);
        // The driver's membership names the truck.
        let stored = harness()
            .await
            .store()
            .members()
            .require(t.id(), driver.profile_id)
            .await
            .unwrap();
        assert_eq!(stored.truck_id.map(|u| u.to_string()).as_deref(), Some(id));
    });
}

#[test]
fn org_id_must_be_the_keys_organization() {
    run(async {
        let t = org().await;
        let other = org().await;
        let license = plate();
        create_truck(&t, json!({"orgId": other.id(), "license": license}))
            .await
            .expect(403, Some("org_id_mismatch"));
        assert!(!plate_taken(t.id(), "fi", &normalized(&license)).await);
        assert_eq!(
            send(&t, Method::GET, "/api/v1/trucks", None).await.body["meta"]["count"],
            0
        );
    });
}

#[test]
fn create_validation() {
    run(async {
        let t = org().await;
        for (body, field) in [
            (json!({"country": "fi"}), "license"),
            (json!({"license": plate(), "country": "no"}), "country"),
            (json!({"license": plate(), "capacity": 100.01}), "capacity"),
            (json!({"license": plate(), "capacity": -1}), "capacity"),
            (json!({"license": plate(), "capacity": "8"}), "capacity"),
            (json!({"license": "A"}), "license"),
            (json!({"license": "AB.123"}), "license"),
            (json!({"license": plate(), "name": "x".repeat(501)}), "name"),
            (
                json!({"license": plate(), "driverId": "not-a-uuid"}),
                "driverId",
            ),
        ] {
            let reply = create_truck(&t, body.clone()).await;
            reply.expect(422, Some("validation_error"));
            assert!(
                reply.body["message"].as_str().unwrap().starts_with(field),
                "{body}: {}",
                reply.text
            );
        }
        // 0, 100 and null are capacities; the answer rounds to 2 decimals.
        for (sent, shown) in [
            (json!(0), json!(0.0)),
            (json!(100), json!(100.0)),
            (json!(null), Value::Null),
            (json!(7.255), json!(7.26)),
        ] {
            let reply = create_truck(&t, json!({"license": plate(), "capacity": sent})).await;
            reply.expect(201, None);
            assert_eq!(reply.body["data"]["capacity_m3"], shown);
        }
    });
}

#[test]
fn a_plate_is_unique_per_country_in_any_spelling_within_the_fleet() {
    run(async {
        let t = org().await;
        let other = org().await;
        let license = plate();
        new_truck(&t, json!({"license": license})).await;
        for spelling in [
            license.to_lowercase(),
            license.replace('-', " "),
            license.replace('-', ""),
        ] {
            let reply = create_truck(&t, json!({"license": spelling})).await;
            reply.expect(409, Some("license_conflict"));
        }
        // Another country's plate may read the same.
        create_truck(&t, json!({"license": license, "country": "ee"}))
            .await
            .expect(201, None);
        // Another organization's fleet is its own: no 409 tells it whose
        // plate this is, and nobody can squat a rival's plates.
        create_truck(&other, json!({"license": license}))
            .await
            .expect(201, None);
        assert_eq!(
            send(&other, Method::GET, "/api/v1/trucks", None).await.body["meta"]["count"],
            1
        );
    });
}

#[test]
fn concurrent_creates_of_one_plate_admit_one() {
    run(async {
        let t = org().await;
        let license = plate();
        let replies = futures::future::join_all((0..5).map(|i| {
            let spelling = if i % 2 == 0 {
                license.clone()
            } else {
                license.to_lowercase()
            };
            create_truck(&t, json!({"license": spelling}))
        }))
        .await;
        let created = replies.iter().filter(|r| r.status == 201).count();
        let conflicts = replies
            .iter()
            .filter(|r| r.code() == "license_conflict")
            .count();
        assert_eq!((created, conflicts), (1, 4));
        assert_eq!(
            send(&t, Method::GET, "/api/v1/trucks", None).await.body["meta"]["count"],
            1
        );
    });
}

#[test]
fn the_driver_is_an_active_member_and_drives_one_truck() {
    run(async {
        let t = org().await;
        let other = org().await;
        let stranger = person(other.id(), Role::Driver).await;
        create_truck(
            &t,
            json!({"license": plate(), "driverId": stranger.profile_id}),
        )
        .await
        .expect(422, Some("driver_not_found"));
        create_truck(&t, json!({"license": plate(), "driverId": Uuid::now_v7()}))
            .await
            .expect(422, Some("driver_not_found"));
        let gone = person(t.id(), Role::Driver).await;
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/members/{}", gone.profile_id),
            None,
        )
        .await
        .expect(200, None);
        create_truck(&t, json!({"license": plate(), "driverId": gone.profile_id}))
            .await
            .expect(422, Some("driver_not_found"));
        assert_eq!(
            send(&t, Method::GET, "/api/v1/trucks", None).await.body["meta"]["count"],
            0
        );
        // A driver taken by a new truck leaves the old one.
        let driver = person(t.id(), Role::Driver).await;
        let first = new_truck(
            &t,
            json!({"license": plate(), "driverId": driver.profile_id}),
        )
        .await;
        let second = new_truck(
            &t,
            json!({"license": plate(), "driverId": driver.profile_id}),
        )
        .await;
        assert_eq!(
            truck(&t, &first).await.body["data"]["driver_id"],
            Value::Null
        );
        assert_eq!(
            truck(&t, &second).await.body["data"]["driver_id"],
            driver.profile_id.to_string()
        );
    });
}

#[test]
fn the_factory_is_an_active_factory_of_this_organization() {
    run(async {
        let t = org().await;
        let other = org().await;
        let theirs = send(
            &other,
            Method::POST,
            "/api/v1/factories",
            Some(json!({"name": "Theirs"})),
        )
        .await;
        create_truck(
            &t,
            json!({"license": plate(), "factoryId": theirs.body["data"]["id"]}),
        )
        .await
        .expect(422, Some("factory_not_found"));
        let ours = send(
            &t,
            Method::POST,
            "/api/v1/factories",
            Some(json!({"name": "Ours"})),
        )
        .await;
        let ours = ours.body["data"]["id"].as_str().unwrap().to_owned();
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/factories/{ours}"),
            None,
        )
        .await
        .expect(200, None);
        create_truck(&t, json!({"license": plate(), "factoryId": ours}))
            .await
            .expect(422, Some("factory_archived"));
        assert_eq!(
            send(&t, Method::GET, "/api/v1/trucks", None).await.body["meta"]["count"],
            0
        );
    });
}

#[test]
fn list_shows_trucks_in_service_with_their_last_position() {
    run(async {
        let t = org().await;
        let store = harness().await.store();
        let a = new_truck(&t, json!({"license": plate()})).await;
        let license = plate();
        let b = new_truck(&t, json!({"license": license})).await;
        let at = shared::model::Timestamp::now();
        let position = shared::model::geo::Coordinates::new(60.2, 24.9).unwrap();
        store
            .trucks()
            .record_position(t.id(), a.parse().unwrap(), position, at)
            .await
            .unwrap();
        let list = send(&t, Method::GET, "/api/v1/trucks", None).await;
        list.expect(200, None);
        assert_eq!(ids(&list), vec![b.clone(), a.clone()], "newest first");
        assert!(list.ddb_calls <= 3, "list cost {} calls", list.ddb_calls);
        let row = &list.body["data"][1];
        assert_eq!(row["coordinates"], json!({"lat": 60.2, "lng": 24.9}));
        assert_eq!(row["position_updated_at"], at.to_string());
        // Out of service: gone from the list, 404 by id, the plate free again.
        store
            .trucks()
            .retire(t.id(), b.parse().unwrap())
            .await
            .unwrap();
        assert_eq!(
            ids(&send(&t, Method::GET, "/api/v1/trucks", None).await),
            vec![a]
        );
        truck(&t, &b).await.expect(404, Some("truck_not_found"));
        send(
            &t,
            Method::PATCH,
            &format!("/api/v1/trucks/{b}"),
            Some(json!({"name": "x"})),
        )
        .await
        .expect(404, Some("truck_not_found"));
        assert!(!plate_taken(t.id(), "fi", &normalized(&license)).await);
        new_truck(&t, json!({"license": license})).await;
    });
}

#[test]
fn another_organizations_truck_is_404_and_unlisted() {
    run(async {
        let t = org().await;
        let other = org().await;
        let id = new_truck(&t, json!({"license": plate()})).await;
        let path = format!("/api/v1/trucks/{id}");
        send(&other, Method::GET, &path, None)
            .await
            .expect(404, Some("truck_not_found"));
        send(
            &other,
            Method::PATCH,
            &path,
            Some(json!({"name": "Mine now"})),
        )
        .await
        .expect(404, Some("truck_not_found"));
        assert_eq!(
            send(&other, Method::GET, "/api/v1/trucks", None).await.body["meta"]["count"],
            0
        );
        assert_eq!(truck(&t, &id).await.body["data"]["name"], Value::Null);
        send(&t, Method::GET, "/api/v1/trucks/not-a-uuid", None)
            .await
            .expect(400, Some("invalid_truck_id"));
    });
}

#[test]
fn patch_changes_fields_in_either_spelling() {
    run(async {
        let t = org().await;
        let id = new_truck(&t, json!({"license": plate(), "capacity": 8})).await;
        let path = format!("/api/v1/trucks/{id}");
        let reply = send(
            &t,
            Method::PATCH,
            &path,
            Some(json!({"capacity": 9.5, "name": "Mixer", "notes": "n"})),
        )
        .await;
        reply.expect(200, None);
        assert!(reply.ddb_calls <= 4, "patch cost {} calls", reply.ddb_calls);
        assert_eq!(reply.body["data"]["capacity_m3"], 9.5);
        let reply = send(
            &t,
            Method::PATCH,
            &path,
            Some(json!({"capacity_m3": null, "notes": null})),
        )
        .await;
        reply.expect(200, None);
        assert_eq!(
            (
                &reply.body["data"]["capacity_m3"],
                &reply.body["data"]["notes"]
            ),
            (&Value::Null, &Value::Null)
        );
        assert_eq!(reply.body["data"]["name"], "Mixer");
        for (body, field) in [
            (json!({}), "the body"),
            (
                json!({"capacity": 1, "capacity_m3": 1}),
                "capacity_m3 and capacity",
            ),
            (
                json!({"driver_id": null, "driverId": null}),
                "driver_id and driverId",
            ),
            (json!({"license": null}), "license"),
            (json!({"country": "dk"}), "country"),
            (json!({"capacity_m3": 101}), "capacity_m3"),
            (
                json!({"name": "x", "coordinates": {"lat": 1, "lng": 2}}),
                "coordinates",
            ),
            (
                json!({"position_updated_at": "2026-01-01T00:00:00.000Z"}),
                "position_updated_at",
            ),
            (json!({"factoryId": Uuid::now_v7()}), "factoryId"),
        ] {
            let reply = send(&t, Method::PATCH, &path, Some(body.clone())).await;
            reply.expect(422, Some("validation_error"));
            assert!(
                reply.body["message"].as_str().unwrap().starts_with(field),
                "{body}: {}",
                reply.text
            );
        }
        assert_eq!(
            truck(&t, &id).await.body["data"]["name"],
            "Mixer",
            "nothing changed"
        );
    });
}

#[test]
fn patch_moves_the_plate_in_one_transaction() {
    run(async {
        let t = org().await;
        let (old, new, taken) = (plate(), plate(), plate());
        let id = new_truck(&t, json!({"license": old})).await;
        new_truck(&t, json!({"license": taken})).await;
        let path = format!("/api/v1/trucks/{id}");
        send(
            &t,
            Method::PATCH,
            &path,
            Some(json!({"license": taken.to_lowercase(), "name": "x"})),
        )
        .await
        .expect(409, Some("license_conflict"));
        assert!(
            plate_taken(t.id(), "fi", &normalized(&old)).await,
            "the old plate is still this truck's"
        );
        assert_eq!(truck(&t, &id).await.body["data"]["license"], old);
        let reply = send(&t, Method::PATCH, &path, Some(json!({"license": new}))).await;
        reply.expect(200, None);
        assert!(!plate_taken(t.id(), "fi", &normalized(&old)).await);
        assert!(plate_taken(t.id(), "fi", &normalized(&new)).await);
        // A country change moves it too.
        send(&t, Method::PATCH, &path, Some(json!({"country": "ee"})))
            .await
            .expect(200, None);
        assert!(!plate_taken(t.id(), "fi", &normalized(&new)).await);
        assert!(plate_taken(t.id(), "ee", &normalized(&new)).await);
        // The old plate is free for anyone.
        new_truck(&t, json!({"license": old})).await;
    });
}

#[test]
fn assigning_a_driver_releases_the_drivers_other_truck() {
    run(async {
        let t = org().await;
        let driver = person(t.id(), Role::Driver).await;
        let other_driver = person(t.id(), Role::Driver).await;
        let first = new_truck(
            &t,
            json!({"license": plate(), "driverId": driver.profile_id}),
        )
        .await;
        let second = new_truck(
            &t,
            json!({"license": plate(), "driverId": other_driver.profile_id}),
        )
        .await;
        let reply = send(
            &t,
            Method::PATCH,
            &format!("/api/v1/trucks/{second}"),
            Some(json!({"driver_id": driver.profile_id})),
        )
        .await;
        reply.expect(200, None);
        assert!(
            reply.ddb_calls <= 4,
            "assignment cost {} calls",
            reply.ddb_calls
        );
        assert_eq!(
            truck(&t, &first).await.body["data"]["driver_id"],
            Value::Null
        );
        assert_eq!(
            truck(&t, &second).await.body["data"]["driver_id"],
            driver.profile_id.to_string()
        );
        let members = harness().await.store().members();
        let moved = members.require(t.id(), driver.profile_id).await.unwrap();
        assert_eq!(moved.truck_id.map(|u| u.to_string()), Some(second.clone()));
        let let_go = members
            .require(t.id(), other_driver.profile_id)
            .await
            .unwrap();
        assert_eq!(let_go.truck_id, None);
        // null unassigns.
        send(
            &t,
            Method::PATCH,
            &format!("/api/v1/trucks/{second}"),
            Some(json!({"driverId": null})),
        )
        .await
        .expect(200, None);
        assert_eq!(
            truck(&t, &second).await.body["data"]["driver_id"],
            Value::Null
        );
        assert_eq!(
            members
                .require(t.id(), driver.profile_id)
                .await
                .unwrap()
                .truck_id,
            None
        );
        // Another organization's member is no driver here.
        let stranger = person(org().await.id(), Role::Driver).await;
        send(
            &t,
            Method::PATCH,
            &format!("/api/v1/trucks/{second}"),
            Some(json!({"driver_id": stranger.profile_id})),
        )
        .await
        .expect(422, Some("driver_not_found"));
    });
}
