//! Organizations that stop existing stop working; the entitlement and the
//! key and child caps hold under concurrency.

use api_tests::{TestOrg, call, harness, new_key, org, run, send, unique};
use http::Method;
use serde_json::json;
use shared::auth::Scope;
use shared::store::records::orgs::{MAX_CHILDREN, MAX_COPIED_ADMINS};

use crate::sites::new_site;

async fn child(parent: &TestOrg, name: &str) -> TestOrg {
    let reply = send(
        parent,
        Method::POST,
        "/api/v1/orgs",
        Some(json!({"name": name})),
    )
    .await;
    reply.expect(201, None);
    let org: shared::model::org::Organization =
        serde_json::from_value(reply.body["data"].clone()).unwrap();
    let key = new_key(org.id, &[Scope::All]).await;
    TestOrg { org, key }
}

#[test]
fn a_deactivated_organizations_keys_are_refused_with_org_inactive() {
    run(async {
        let t = org().await;
        // One minute's window whatever the hour: the remaining budget is
        // what the one counted request left.
        let (router, _) = crate::rate_limit::in_a_frozen_minute(|_| {}).await;
        let send = |t: &api_tests::TestOrg, method, path: &str, body| {
            let call = call(method, path).key(&t.key);
            let call = match body {
                Some(body) => call.json(&body),
                None => call,
            };
            call.send_to(&router)
        };
        send(&t, Method::GET, "/api/v1/sites", None)
            .await
            .expect(200, None);
        harness()
            .await
            .store()
            .orgs()
            .deactivate(t.id())
            .await
            .unwrap();
        for (method, path, body) in [
            (Method::GET, "/api/v1/sites", None),
            (Method::POST, "/api/v1/sites", Some(json!({"name": "Yard"}))),
            (
                Method::POST,
                "/api/v1/factories",
                Some(json!({"name": "Plant"})),
            ),
            (Method::GET, "/api/v1/orgs/{id}", None),
        ] {
            let path = path.replace("{id}", &t.id().to_string());
            let reply = send(&t, method, &path, body).await;
            reply.expect(403, Some("org_inactive"));
            assert_eq!(reply.header("x-ratelimit-remaining"), "99", "{path}");
        }
        // The contract's one exception: GET /api/v1/orgs of a soft-deleted
        // organization is 404 org_not_found ("missing or soft-deleted").
        let own = send(&t, Method::GET, "/api/v1/orgs", None).await;
        own.expect(404, Some("org_not_found"));
        assert_eq!(own.header("x-ratelimit-remaining"), "99");
        assert!(!own.text.contains(&t.org.name));
        // Nothing was written meanwhile.
        let sites = harness()
            .await
            .store()
            .sites()
            .list(t.id(), shared::model::archive::StatusFilter::All)
            .await
            .unwrap();
        assert!(sites.is_empty());
        // A key issued before or after: deactivation is for good.
        let again = harness().await.store().orgs().deactivate(t.id()).await;
        assert_eq!(again.unwrap_err().code(), "org_not_found");
        let late = harness()
            .await
            .store()
            .api_keys()
            .create(t.id(), vec![Scope::All], None, None, "svc_app_")
            .await;
        assert_eq!(late.unwrap_err().code(), "org_not_found");
    });
}

#[test]
fn a_deactivated_organizations_grants_stop_working() {
    run(async {
        let granter = org().await;
        let partner = org().await;
        let site = new_site(&granter, json!({"name": "Shared yard"})).await;
        send(
            &granter,
            Method::POST,
            "/api/v1/org-access-grants",
            Some(json!({"grantee_org_id": partner.id()})),
        )
        .await
        .expect(201, None);
        let path = format!("/api/v1/sites/{site}");
        send(&partner, Method::GET, &path, None)
            .await
            .expect(200, None);
        harness()
            .await
            .store()
            .orgs()
            .deactivate(granter.id())
            .await
            .unwrap();
        send(&partner, Method::GET, &path, None)
            .await
            .expect(404, Some("site_not_found"));
        send(&partner, Method::GET, &format!("{path}/members"), None)
            .await
            .expect(404, Some("site_not_found"));
    });
}

#[test]
fn a_deactivated_child_leaves_its_parent_and_frees_its_name() {
    run(async {
        let parent = org().await;
        let name = unique("Branch");
        let c = child(&parent, &name).await;
        let listed = send(&parent, Method::GET, "/api/v1/orgs", None).await;
        assert_eq!(
            listed.body["data"][0]["children"][0]["id"],
            c.id().to_string()
        );
        harness()
            .await
            .store()
            .orgs()
            .deactivate(c.id())
            .await
            .unwrap();
        let listed = send(&parent, Method::GET, "/api/v1/orgs", None).await;
        assert_eq!(listed.body["data"][0]["children"], json!([]));
        send(
            &parent,
            Method::GET,
            &format!("/api/v1/orgs/{}", c.id()),
            None,
        )
        .await
        .expect(404, Some("org_not_found"));
        // The stored summary says so too.
        let h = harness().await;
        let db = aws_sdk_dynamodb::Client::new(&h.sdk);
        let summary = db
            .get_item()
            .table_name(h.store().table())
            .key(
                "pk",
                shared::store::engine::item::s(format!("ORG#{}", parent.id())),
            )
            .key(
                "sk",
                shared::store::engine::item::s(format!("ORG#CHILD#{}", c.id())),
            )
            .send()
            .await
            .unwrap()
            .item
            .unwrap();
        assert_eq!(
            shared::store::engine::item::get_s(&summary, "status"),
            Some("deleted")
        );
        // The name may be used again, and the child count went back down.
        child(&parent, &name).await;
        let record = h.store().orgs().get(parent.id()).await.unwrap().unwrap();
        assert_eq!(record.child_count, 1);
    });
}

#[test]
fn an_entitlement_switch_reaches_keys_created_meanwhile() {
    run(async {
        let store = harness().await.store();
        for _ in 0..4 {
            let t = org().await;
            let creates = futures::future::join_all((0..6).map(|_| {
                let id = t.id();
                tokio::spawn(async move { new_key(id, &[Scope::All]).await })
            }));
            let keys_store = store.api_keys();
            let switch = keys_store.set_entitlement(t.id(), false);
            let (keys, switched) = tokio::join!(creates, switch);
            switched.unwrap();
            let mut keys: Vec<String> = keys.into_iter().map(Result::unwrap).collect();
            keys.push(t.key.clone());
            for key in keys {
                call(Method::GET, "/api/v1/orgs")
                    .key(&key)
                    .send()
                    .await
                    .expect(403, Some("feature_not_enabled"));
            }
        }
    });
}

#[test]
fn a_child_inherits_the_parents_entitlement_as_it_is_when_made() {
    run(async {
        let store = harness().await.store();
        let t = org().await;
        store
            .api_keys()
            .set_entitlement(t.id(), false)
            .await
            .unwrap();
        let made = store
            .orgs()
            .create_child(t.id(), &api_tests::named(&unique("Late child")))
            .await
            .unwrap();
        let key = new_key(made.id, &[Scope::All]).await;
        call(Method::GET, "/api/v1/orgs")
            .key(&key)
            .send()
            .await
            .expect(403, Some("feature_not_enabled"));
    });
}

#[test]
fn switches_reach_every_key_of_an_organization_with_many_keys() {
    run(async {
        // More keys than one transaction changes (49).
        let t = org().await;
        let store = harness().await.store();
        let mut keys = vec![t.key.clone()];
        for _ in 1..60 {
            keys.push(new_key(t.id(), &[Scope::ReadOrgs]).await);
        }
        // Rotation: revoke one, issue one.
        let live = store.api_keys().list(t.id()).await.unwrap();
        store
            .api_keys()
            .revoke(t.id(), live[1].key_id)
            .await
            .unwrap();
        keys.remove(1);
        keys.push(new_key(t.id(), &[Scope::All]).await);
        let record = store.orgs().get(t.id()).await.unwrap().unwrap();
        assert_eq!(record.live_keys, 60);
        // The entitlement switch is effective on every key's next request.
        store
            .api_keys()
            .set_entitlement(t.id(), false)
            .await
            .unwrap();
        for key in &keys {
            call(Method::GET, "/api/v1/orgs")
                .key(key)
                .send()
                .await
                .expect(403, Some("feature_not_enabled"));
        }
        store
            .api_keys()
            .set_entitlement(t.id(), true)
            .await
            .unwrap();
        call(Method::GET, "/api/v1/orgs")
            .key(&keys[59])
            .send()
            .await
            .expect(200, None);
        // Deactivation reaches every live key too.
        store.orgs().deactivate(t.id()).await.unwrap();
        for key in store.api_keys().list(t.id()).await.unwrap() {
            let hash = shared::auth::key::KeyHash::from_hex(&key.key_hash).unwrap();
            let stored = store.api_keys().lookup(&hash).await.unwrap().unwrap();
            if stored.revoked_at.is_none() {
                assert!(!stored.org_active, "live key {} still active", key.key_id);
            }
        }
        for key in &keys {
            call(Method::GET, "/api/v1/sites")
                .key(key)
                .send()
                .await
                .expect(403, Some("org_inactive"));
        }
    });
}

#[test]
fn children_are_capped_per_organization() {
    run(async {
        let t = org().await;
        let store = harness().await.store();
        let mut first = None;
        for i in 0..MAX_CHILDREN {
            let made = store
                .orgs()
                .create_child(t.id(), &api_tests::named(&format!("Child {i}")))
                .await
                .unwrap();
            first.get_or_insert(made.id);
        }
        let reply = send(
            &t,
            Method::POST,
            "/api/v1/orgs",
            Some(json!({"name": "One more"})),
        )
        .await;
        reply.expect(409, Some("child_limit_reached"));
        store.orgs().deactivate(first.unwrap()).await.unwrap();
        send(
            &t,
            Method::POST,
            "/api/v1/orgs",
            Some(json!({"name": "One more"})),
        )
        .await
        .expect(201, None);
    });
}

#[test]
fn a_parent_with_more_admins_than_one_transaction_holds_gets_a_clear_409() {
    run(async {
        let t = org().await;
        // As many as one transaction holds: the child's transaction is
        // DynamoDB's 100 actions (DynamoDB Local refuses 101, as AWS does).
        for _ in 0..MAX_COPIED_ADMINS {
            api_tests::person(t.id(), shared::model::member::Role::OrgAdmin).await;
        }
        let fits = send(
            &t,
            Method::POST,
            "/api/v1/orgs",
            Some(json!({"name": unique("Child")})),
        )
        .await;
        fits.expect(201, None);
        let child = fits.body["data"]["id"].as_str().unwrap().to_owned();
        api_tests::person(t.id(), shared::model::member::Role::OrgAdmin).await;
        let reply = send(
            &t,
            Method::POST,
            "/api/v1/orgs",
            Some(json!({"name": unique("Child")})),
        )
        .await;
        reply.expect(409, Some("too_many_org_admins"));
        let listed = send(&t, Method::GET, "/api/v1/orgs", None).await;
        let children = listed.body["data"][0]["children"].as_array().unwrap();
        let ids: Vec<&str> = children.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            [child.as_str()],
            "the first child, and no half-made second"
        );
    });
}

/// `admin deactivate-org` run again (after a run cut before its answer,
/// or one that stopped before the keys) finishes and says the organization
/// is deactivated, as the first run would have, so an operator retrying
/// it is done; an organization that never was stays 404.
#[test]
fn a_deactivation_run_again_is_done_and_one_of_no_organization_is_404() {
    run(async {
        let t = org().await;
        let id = t.id().to_string();
        for _ in 0..2 {
            let done = crate::audit::admin(&["deactivate-org", "--org", &id])
                .await
                .expect("deactivated");
            assert_eq!(done.lines[0]["status"], "deleted");
        }
        send(&t, Method::GET, "/api/v1/sites", None)
            .await
            .expect(403, Some("org_inactive"));
        let none = uuid::Uuid::now_v7().to_string();
        let refused = crate::audit::admin(&["deactivate-org", "--org", &none]).await;
        assert!(format!("{:#}", refused.unwrap_err()).contains("org"));
    });
}
