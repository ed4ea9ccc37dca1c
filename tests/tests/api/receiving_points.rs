use api_tests::{Reply, TestOrg, harness, ids, new_key, org, run, send};
use http::Method;
use serde_json::{Value, json};
use shared::auth::Scope;
use uuid::Uuid;

use crate::sites::{geo_entries, new_site};

async fn create(t: &TestOrg, body: Value) -> Reply {
    send(t, Method::POST, "/api/v1/receiving-points", Some(body)).await
}

pub async fn new_point(t: &TestOrg, body: Value) -> String {
    let reply = create(t, body).await;
    reply.expect(201, None);
    reply.body["data"]["id"].as_str().unwrap().to_owned()
}

/// A week of opening hours: weekdays, a short Saturday, closed on Sunday.
pub fn week() -> Value {
    let mut week = serde_json::Map::new();
    for day in ["monday", "tuesday", "wednesday", "thursday", "friday"] {
        week.insert(
            day.into(),
            json!({"closed": false, "from": "06:30", "to": "17:00"}),
        );
    }
    week.insert(
        "saturday".into(),
        json!({"closed": false, "from": "08:00", "to": "12:00"}),
    );
    week.insert(
        "sunday".into(),
        json!({"closed": true, "from": null, "to": null}),
    );
    week.into()
}

#[test]
fn create_under_an_active_site_with_every_field() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Terminal"})).await;
        let reply = create(
            &t,
            json!({"site_id": site, "name": " Gate 3 ", "lat": 60.45, "lng": 22.27, "capacity_m3": 40, "is_public": true,
                   "notes": "Call ahead", "directions": "Second left", "open_hours": week()}),
        )
        .await;
        reply.expect(201, None);
        let d = &reply.body["data"];
        assert_eq!(d["name"], "Gate 3");
        assert_eq!(d["site_id"], site);
        assert_eq!(d["capacity_m3"], 40);
        assert_eq!(d["is_public"], true);
        assert_eq!(d["status"], "active");
        assert_eq!(d["coordinates"], json!({"lat": 60.45, "lng": 22.27}));
        assert_eq!(d["open_hours"], week());
        assert_eq!(d["photos"], json!([]));
        let id = d["id"].as_str().unwrap();
        assert_eq!(
            reply.header("location"),
            format!("/api/v1/receiving-points/{id}")
        );
        let read = send(
            &t,
            Method::GET,
            &format!("/api/v1/receiving-points/{id}"),
            None,
        )
        .await;
        read.expect(200, None);
        assert_eq!(&read.body["data"], d);
        assert!(
            read.ddb_calls <= 3,
            "single read cost {} calls",
            read.ddb_calls
        );
        // Public: indexed for this organization and for everyone.
        assert_eq!(geo_entries(t.id(), "RP", id, (60.45, 22.27)).await, 2);
        // Defaults.
        let plain = create(&t, json!({"site_id": site, "name": "Back gate"})).await;
        assert_eq!(plain.body["data"]["is_public"], false);
        assert_eq!(plain.body["data"]["capacity_m3"], Value::Null);
        assert_eq!(plain.body["data"]["open_hours"], Value::Null);
    });
}

#[test]
fn site_must_be_an_active_site_of_the_organization() {
    run(async {
        let t = org().await;
        let other = org().await;
        let foreign = new_site(&other, json!({"name": "Theirs"})).await;
        create(&t, json!({"site_id": foreign, "name": "x"}))
            .await
            .expect(422, Some("site_not_found"));
        create(&t, json!({"site_id": Uuid::now_v7(), "name": "x"}))
            .await
            .expect(422, Some("site_not_found"));
        let site = new_site(&t, json!({"name": "Ours"})).await;
        send(&t, Method::DELETE, &format!("/api/v1/sites/{site}"), None)
            .await
            .expect(200, None);
        create(&t, json!({"site_id": site, "name": "x"}))
            .await
            .expect(422, Some("site_archived"));
        assert_eq!(
            send(&t, Method::GET, "/api/v1/receiving-points?status=all", None)
                .await
                .body["meta"]["count"],
            0
        );
    });
}

#[test]
fn create_validation() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Yard"})).await;
        let mut bad_hours = week();
        bad_hours["monday"] = json!({"closed": false, "from": "18:00", "to": "7:00"});
        let mut missing_day = week();
        missing_day.as_object_mut().unwrap().remove("friday");
        for (body, field) in [
            (json!({"name": "x"}), "site_id"),
            (json!({"site_id": site}), "name"),
            (
                json!({"site_id": site, "name": "x", "capacity_m3": 12.5}),
                "capacity_m3",
            ),
            (
                json!({"site_id": site, "name": "x", "capacity_m3": -1}),
                "capacity_m3",
            ),
            (
                json!({"site_id": site, "name": "x", "capacity_m3": "40"}),
                "capacity_m3",
            ),
            (
                json!({"site_id": site, "name": "x", "is_public": "yes"}),
                "is_public",
            ),
            (
                json!({"site_id": site, "name": "x", "open_hours": bad_hours}),
                "open_hours.monday.to",
            ),
            (
                json!({"site_id": site, "name": "x", "open_hours": missing_day}),
                "open_hours",
            ),
            (
                json!({"site_id": site, "name": "x", "open_hours": {"monday": "always"}}),
                "open_hours",
            ),
            (
                json!({"site_id": site, "name": "x", "lng": 24.0}),
                "lat and lng",
            ),
        ] {
            let reply = create(&t, body.clone()).await;
            reply.expect(422, Some("validation_error"));
            assert!(
                reply.body["message"].as_str().unwrap().contains(field),
                "{body}: {}",
                reply.text
            );
        }
    });
}

#[test]
fn list_is_newest_first_and_hides_archived_by_default() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Yard"})).await;
        let a = new_point(
            &t,
            json!({"site_id": site, "name": "A", "open_hours": week()}),
        )
        .await;
        let b = new_point(&t, json!({"site_id": site, "name": "B"})).await;
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/receiving-points/{a}"),
            None,
        )
        .await
        .expect(200, None);
        let active = send(&t, Method::GET, "/api/v1/receiving-points", None).await;
        assert_eq!(ids(&active), vec![b.clone()]);
        assert!(
            active.body["data"][0].get("open_hours").is_none(),
            "rows carry no open_hours"
        );
        assert!(active.ddb_calls <= 2 + api_tests::SPREAD_LIST_QUERIES);
        assert_eq!(
            ids(&send(&t, Method::GET, "/api/v1/receiving-points?status=all", None).await),
            vec![b, a]
        );
        send(&t, Method::GET, "/api/v1/receiving-points?status=x", None)
            .await
            .expect(422, Some("validation_error"));
    });
}

#[test]
fn patch_rules() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Yard"})).await;
        let other_site = new_site(&t, json!({"name": "Other"})).await;
        let id = new_point(
            &t,
            json!({"site_id": site, "name": "Gate", "lat": 60.1, "lng": 24.1, "capacity_m3": 10}),
        )
        .await;
        let path = format!("/api/v1/receiving-points/{id}");
        let reply = send(
            &t,
            Method::PATCH,
            &path,
            Some(json!({"capacity_m3": null, "is_public": true, "open_hours": week(), "site_id": site})),
        )
        .await;
        reply.expect(200, None);
        assert_eq!(reply.body["data"]["capacity_m3"], Value::Null);
        assert_eq!(reply.body["data"]["is_public"], true);
        assert_eq!(reply.body["data"]["open_hours"], week());
        assert_eq!(reply.body["data"]["name"], "Gate");
        assert_eq!(
            geo_entries(t.id(), "RP", &id, (60.1, 24.1)).await,
            2,
            "now public"
        );
        send(&t, Method::PATCH, &path, Some(json!({"is_public": false})))
            .await
            .expect(200, None);
        assert_eq!(
            geo_entries(t.id(), "RP", &id, (60.1, 24.1)).await,
            1,
            "private again"
        );
        let moved = send(
            &t,
            Method::PATCH,
            &path,
            Some(json!({"site_id": other_site})),
        )
        .await;
        moved.expect(422, Some("immutable_field"));
        assert!(
            moved.body["message"]
                .as_str()
                .unwrap()
                .starts_with("site_id")
        );
        for body in [
            json!({}),
            json!({"name": null}),
            json!({"capacity_m3": 1.5}),
            json!({"open_hours": {"monday": {}}}),
        ] {
            send(&t, Method::PATCH, &path, Some(body))
                .await
                .expect(422, Some("validation_error"));
        }
        assert_eq!(
            send(&t, Method::GET, &path, None).await.body["data"]["site_id"],
            site
        );
    });
}

#[test]
fn archive_state_table() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Yard"})).await;
        let id = new_point(
            &t,
            json!({"site_id": site, "name": "Gate", "lat": 60.2, "lng": 24.2, "is_public": true}),
        )
        .await;
        let path = format!("/api/v1/receiving-points/{id}");
        send(&t, Method::POST, &format!("{path}/restore"), None)
            .await
            .expect(409, Some("not_archived"));
        let archived = send(&t, Method::DELETE, &path, None).await;
        archived.expect(200, None);
        assert_eq!(archived.body["data"]["status"], "archived");
        assert_eq!(
            geo_entries(t.id(), "RP", &id, (60.2, 24.2)).await,
            0,
            "archived points leave the index"
        );
        send(&t, Method::DELETE, &path, None)
            .await
            .expect(409, Some("already_archived"));
        send(&t, Method::PATCH, &path, Some(json!({"name": "New"})))
            .await
            .expect(409, Some("record_archived"));
        let read = send(&t, Method::GET, &path, None).await;
        read.expect(200, None);
        assert_eq!(read.body["data"]["name"], "Gate");
        send(&t, Method::POST, &format!("{path}/restore"), None)
            .await
            .expect(200, None);
        assert_eq!(geo_entries(t.id(), "RP", &id, (60.2, 24.2)).await, 2);
        send(&t, Method::PATCH, &path, Some(json!({"name": "New"})))
            .await
            .expect(200, None);
        send(
            &t,
            Method::GET,
            &format!("/api/v1/receiving-points/{}", Uuid::now_v7()),
            None,
        )
        .await
        .expect(404, Some("receiving_point_not_found"));
        send(&t, Method::GET, "/api/v1/receiving-points/123", None)
            .await
            .expect(400, Some("invalid_receiving_point_id"));
    });
}

#[test]
fn photos_are_signed_links_valid_for_a_day() {
    run(async {
        let t = org().await;
        let h = harness().await;
        let site = new_site(&t, json!({"name": "Yard"})).await;
        let id: Uuid = new_point(&t, json!({"site_id": site, "name": "Gate"}))
            .await
            .parse()
            .unwrap();
        // Operators add photos: the object in the bucket, its path on the record.
        let path = format!("receiving-points/{}/{id}/gate.jpg", t.id());
        let s3 = shared::links::s3_client(&h.sdk);
        s3.put_object()
            .bucket(&h.state.config.files.bucket)
            .key(&path)
            .body(vec![0xff, 0xd8, 0xff, 0xe0].into())
            .send()
            .await
            .unwrap();
        let stored = path.clone();
        h.store()
            .receiving_points()
            .modify(t.id(), id, move |p| {
                p.photos.push(stored.clone());
                Ok(())
            })
            .await
            .unwrap();
        let read = send(
            &t,
            Method::GET,
            &format!("/api/v1/receiving-points/{id}"),
            None,
        )
        .await;
        read.expect(200, None);
        let photo = &read.body["data"]["photos"][0];
        assert_eq!(photo["storage_path"], path);
        let url = photo["url"].as_str().unwrap();
        assert!(
            url.contains(&path) && url.contains(&h.state.config.files.bucket),
            "{url}"
        );
        assert!(
            url.contains("X-Amz-Expires=86400") && url.contains("X-Amz-Signature="),
            "{url}"
        );
        let expires: chrono::DateTime<chrono::Utc> =
            photo["url_expires_at"].as_str().unwrap().parse().unwrap();
        assert!(((expires - chrono::Utc::now()).num_seconds() - 86_400).abs() < 60);
        // Lists show no photos.
        let list = send(&t, Method::GET, "/api/v1/receiving-points", None).await;
        assert!(list.body["data"][0].get("photos").is_none());
    });
}

#[test]
fn another_organization_never_sees_or_changes_a_point() {
    run(async {
        let owner = org().await;
        let other = org().await;
        let site = new_site(&owner, json!({"name": "Yard"})).await;
        let id = new_point(
            &owner,
            json!({"site_id": site, "name": "Gate", "is_public": true}),
        )
        .await;
        let path = format!("/api/v1/receiving-points/{id}");
        send(&other, Method::GET, &path, None)
            .await
            .expect(404, Some("receiving_point_not_found"));
        send(&other, Method::PATCH, &path, Some(json!({"name": "Mine"})))
            .await
            .expect(404, Some("receiving_point_not_found"));
        send(&other, Method::DELETE, &path, None)
            .await
            .expect(404, Some("receiving_point_not_found"));
        send(&other, Method::POST, &format!("{path}/restore"), None)
            .await
            .expect(404, Some("receiving_point_not_found"));
        assert_eq!(
            send(
                &other,
                Method::GET,
                "/api/v1/receiving-points?status=all",
                None
            )
            .await
            .body["meta"]["count"],
            0
        );
        assert_eq!(
            send(&owner, Method::GET, &path, None).await.body["data"]["name"],
            "Gate"
        );
        let reader = TestOrg {
            org: owner.org.clone(),
            key: new_key(owner.id(), &[Scope::ReadData]).await,
        };
        send(&reader, Method::GET, &path, None)
            .await
            .expect(200, None);
        send(&reader, Method::DELETE, &path, None)
            .await
            .expect(403, Some("insufficient_scope"));
    });
}

/// A new point of `t`'s with one photo added as an operator adds it
/// (`admin add-photo`): its id.
pub async fn point_with_photo(t: &TestOrg) -> String {
    let site = new_site(t, json!({"name": "Yard"})).await;
    let id = new_point(t, json!({"site_id": site, "name": "Gate"})).await;
    let file = std::env::temp_dir().join(format!("{}.jpg", Uuid::now_v7()));
    std::fs::write(
        &file,
        [0xff, 0xd8, 0xff, 0xe0, 0, 0x10, b'J', b'F', b'I', b'F'],
    )
    .unwrap();
    let done = crate::audit::admin(&[
        "add-photo",
        "--org",
        &t.id().to_string(),
        "--receiving-point",
        &id,
        "--file",
        file.to_str().unwrap(),
    ])
    .await
    .unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(
        done.lines[0]["storage_path"].is_string(),
        "{:?}",
        done.lines
    );
    id
}

/// An operator's photo is uploaded under `uploads/` and reaches its place
/// under `receiving-points/` once the point names it (as waybills do):
/// the link downloads it, and nothing is left for the sweeper.
#[test]
fn a_photo_is_in_its_place_once_its_point_names_it() {
    run(async {
        let t = org().await;
        let id = point_with_photo(&t).await;
        let read = send(
            &t,
            Method::GET,
            &format!("/api/v1/receiving-points/{id}"),
            None,
        )
        .await;
        read.expect(200, None);
        let photo = &read.body["data"]["photos"][0];
        let path = photo["storage_path"].as_str().unwrap();
        assert!(
            path.starts_with(&format!("receiving-points/{}/{id}/", t.id())),
            "{path}"
        );
        let (status, bytes) =
            api_tests::http("GET", photo["url"].as_str().unwrap(), &[], b"").await;
        assert_eq!((status, &bytes[..4]), (200, &[0xff, 0xd8, 0xff, 0xe0][..]));
        let h = harness().await;
        assert_eq!(h.store().staged().get(path).await.unwrap(), None);
    });
}

/// An operator's command meets an archived point as a request does: a
/// photo for it is refused (`record_archived`) and the point names none;
/// once restored, the same command adds it.
#[test]
fn an_operators_photo_for_an_archived_point_is_refused_and_added_once_restored() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Yard"})).await;
        let id = new_point(&t, json!({"site_id": site, "name": "Gate"})).await;
        let path = format!("/api/v1/receiving-points/{id}");
        send(&t, Method::DELETE, &path, None)
            .await
            .expect(200, None);
        let file = std::env::temp_dir().join(format!("{}.jpg", Uuid::now_v7()));
        std::fs::write(
            &file,
            [0xff, 0xd8, 0xff, 0xe0, 0, 0x10, b'J', b'F', b'I', b'F'],
        )
        .unwrap();
        let org_id = t.id().to_string();
        let args = [
            "add-photo",
            "--org",
            &org_id,
            "--receiving-point",
            &id,
            "--file",
            file.to_str().unwrap(),
        ];
        let refused = crate::audit::admin(&args).await;
        let Err(error) = refused else {
            panic!("an archived point takes no photo")
        };
        assert!(format!("{error:#}").contains("archived"), "{error:#}");
        let read = send(&t, Method::GET, &path, None).await;
        read.expect(200, None);
        assert_eq!(read.body["data"]["photos"], json!([]), "named none");

        send(&t, Method::POST, &format!("{path}/restore"), None)
            .await
            .expect(200, None);
        let added = crate::audit::admin(&args).await.unwrap();
        let _ = std::fs::remove_file(&file);
        let stored = added.lines[0]["storage_path"].as_str().unwrap().to_owned();
        let read = send(&t, Method::GET, &path, None).await;
        read.expect(200, None);
        let photos = read.body["data"]["photos"].as_array().unwrap().clone();
        assert_eq!(photos.len(), 1, "{photos:?}");
        assert_eq!(photos[0]["storage_path"], stored.as_str());
    });
}
