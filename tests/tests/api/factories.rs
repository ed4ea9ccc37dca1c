use api_tests::{TestOrg, ids, new_key, org, run, send};
use http::Method;
use serde_json::{Value, json};
use shared::auth::Scope;
use uuid::Uuid;

use crate::sites::geo_entries;

async fn new_factory(t: &TestOrg, body: Value) -> String {
    let reply = send(t, Method::POST, "/api/v1/factories", Some(body)).await;
    reply.expect(201, None);
    reply.body["data"]["id"].as_str().unwrap().to_owned()
}

#[test]
fn create_returns_the_factory() {
    run(async {
        let t = org().await;
        let reply = send(
            &t,
            Method::POST,
            "/api/v1/factories",
            Some(json!({"name": " Plant 1 ", "street_address": "Tehdastie 2", "city": "Vantaa", "lat": 60.29, "lng": 25.04})),
        )
        .await;
        reply.expect(201, None);
        let d = &reply.body["data"];
        assert_eq!(d["name"], "Plant 1");
        assert_eq!(d["status"], "active");
        assert_eq!(d["org_id"], t.id().to_string());
        assert_eq!(d["coordinates"], json!({"lat": 60.29, "lng": 25.04}));
        let id = d["id"].as_str().unwrap();
        assert_eq!(reply.header("location"), format!("/api/v1/factories/{id}"));
        let read = send(&t, Method::GET, &format!("/api/v1/factories/{id}"), None).await;
        read.expect(200, None);
        assert_eq!(&read.body["data"], d);
        assert!(
            read.ddb_calls <= 3,
            "single read cost {} calls",
            read.ddb_calls
        );
        let list = send(&t, Method::GET, "/api/v1/factories", None).await;
        assert_eq!(&list.body["data"][0], d);
        assert!(
            list.ddb_calls <= 2 + api_tests::SPREAD_LIST_QUERIES,
            "list cost {} calls",
            list.ddb_calls
        );
        assert_eq!(geo_entries(t.id(), "FACTORY", id, (60.29, 25.04)).await, 1);
    });
}

#[test]
fn create_validation() {
    run(async {
        let t = org().await;
        for (body, field) in [
            (json!({}), "name"),
            (json!({"name": ""}), "name"),
            (json!({"name": "x", "lat": 60.0}), "lat and lng"),
            (json!({"name": "x", "lat": 60.0, "lng": 200.0}), "lng"),
            (json!({"name": "x", "city": 7}), "city"),
        ] {
            let reply = send(&t, Method::POST, "/api/v1/factories", Some(body.clone())).await;
            reply.expect(422, Some("validation_error"));
            assert!(
                reply.body["message"].as_str().unwrap().contains(field),
                "{body}: {}",
                reply.text
            );
        }
        assert_eq!(
            send(&t, Method::GET, "/api/v1/factories?status=all", None)
                .await
                .body["meta"]["count"],
            0
        );
    });
}

#[test]
fn archive_state_table() {
    run(async {
        let t = org().await;
        let first = new_factory(&t, json!({"name": "A", "lat": 61.0, "lng": 25.0})).await;
        let second = new_factory(&t, json!({"name": "B"})).await;
        let path = format!("/api/v1/factories/{first}");
        send(&t, Method::POST, &format!("{path}/restore"), None)
            .await
            .expect(409, Some("not_archived"));
        let archived = send(&t, Method::DELETE, &path, None).await;
        archived.expect(200, None);
        assert_eq!(archived.body["data"]["status"], "archived");
        assert_eq!(
            geo_entries(t.id(), "FACTORY", &first, (61.0, 25.0)).await,
            0
        );
        send(&t, Method::DELETE, &path, None)
            .await
            .expect(409, Some("already_archived"));
        assert_eq!(
            ids(&send(&t, Method::GET, "/api/v1/factories", None).await),
            vec![second.clone()]
        );
        assert_eq!(
            ids(&send(&t, Method::GET, "/api/v1/factories?status=all", None).await),
            vec![second.clone(), first.clone()]
        );
        let restored = send(&t, Method::POST, &format!("{path}/restore"), None).await;
        restored.expect(200, None);
        assert_eq!(restored.body["data"]["status"], "active");
        assert_eq!(
            geo_entries(t.id(), "FACTORY", &first, (61.0, 25.0)).await,
            1
        );
        assert_eq!(
            ids(&send(&t, Method::GET, "/api/v1/factories", None).await),
            vec![second, first]
        );
        send(&t, Method::GET, "/api/v1/factories?status=deleted", None)
            .await
            .expect(422, Some("validation_error"));
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/factories/{}", Uuid::now_v7()),
            None,
        )
        .await
        .expect(404, Some("factory_not_found"));
        send(&t, Method::DELETE, "/api/v1/factories/x", None)
            .await
            .expect(400, Some("invalid_factory_id"));
    });
}

#[test]
fn another_organization_never_sees_or_changes_factories() {
    run(async {
        let owner = org().await;
        let other = org().await;
        let id = new_factory(&owner, json!({"name": "Plant"})).await;
        assert!(
            ids(&send(&other, Method::GET, "/api/v1/factories?status=all", None).await).is_empty()
        );
        send(
            &other,
            Method::GET,
            &format!("/api/v1/factories/{id}"),
            None,
        )
        .await
        .expect(404, Some("factory_not_found"));
        send(
            &other,
            Method::DELETE,
            &format!("/api/v1/factories/{id}"),
            None,
        )
        .await
        .expect(404, Some("factory_not_found"));
        send(
            &other,
            Method::POST,
            &format!("/api/v1/factories/{id}/restore"),
            None,
        )
        .await
        .expect(404, Some("factory_not_found"));
        let list = send(&owner, Method::GET, "/api/v1/factories", None).await;
        assert_eq!(list.body["data"][0]["status"], "active");
        let reader = TestOrg {
            org: owner.org.clone(),
            key: new_key(owner.id(), &[Scope::ReadData]).await,
        };
        send(&reader, Method::GET, "/api/v1/factories", None)
            .await
            .expect(200, None);
        send(
            &reader,
            Method::POST,
            "/api/v1/factories",
            Some(json!({"name": "x"})),
        )
        .await
        .expect(403, Some("insufficient_scope"));
        send(
            &reader,
            Method::DELETE,
            &format!("/api/v1/factories/{id}"),
            None,
        )
        .await
        .expect(403, Some("insufficient_scope"));
    });
}
