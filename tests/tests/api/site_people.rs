//! The people at a worksite (`members` of the single site read, and
//! GET /sites/{siteId}/members): the site's contact person, then the
//! organization's active members whose membership names the site
//! (`site_id`, set on member create and PATCH). docs/decisions/sites-receiving-points-factories-grants.md, "The
//! people at a worksite".

use api_tests::{TestOrg, org, send, unique_phone};
use http::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::sites::new_site;

async fn people(t: &TestOrg, site: &str) -> (Value, Value) {
    let read = send(t, Method::GET, &format!("/api/v1/sites/{site}"), None).await;
    read.expect(200, None);
    let list = send(
        t,
        Method::GET,
        &format!("/api/v1/sites/{site}/members"),
        None,
    )
    .await;
    list.expect(200, None);
    assert_eq!(
        list.body["meta"]["count"],
        list.body["data"].as_array().unwrap().len()
    );
    (
        read.body["data"]["members"].clone(),
        list.body["data"].clone(),
    )
}

/// The people of `site`, the same in both reads.
async fn people_at(t: &TestOrg, site: &str) -> Value {
    let (read, list) = people(t, site).await;
    assert_eq!(read, list, "the single read and the list disagree");
    list
}

async fn new_member(t: &TestOrg, last: &str, extra: Value) -> (String, String) {
    let phone = unique_phone();
    let mut body =
        json!({"first_name": "Ann", "last_name": last, "phone": phone, "role": "site_manager"});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let reply = send(t, Method::POST, "/api/v1/members", Some(body)).await;
    reply.expect(201, None);
    (reply.body["data"]["id"].as_str().unwrap().to_owned(), phone)
}

fn person(id: &str, last: &str, phone: &str, role: &str) -> Value {
    json!({"member_id": id, "first_name": "Ann", "last_name": last, "phone": phone, "role": role})
}

#[test]
fn the_people_at_a_site_are_its_contact_then_the_members_who_work_there() {
    api_tests::run(async {
        let t = org().await;
        let site = new_site(
            &t,
            json!({"name": "Yard", "contact_first_name": "Cy", "contact_phone": "+358409990000"}),
        )
        .await;
        let elsewhere = new_site(&t, json!({"name": "Elsewhere"})).await;
        let (lee, lee_phone) = new_member(&t, "Lee", json!({"site_id": site})).await;
        let (kim, kim_phone) = new_member(&t, "Kim", json!({})).await;
        new_member(&t, "Other", json!({"site_id": elsewhere})).await;
        let contact = json!({"member_id": null, "first_name": "Cy", "last_name": null, "phone": "+358409990000", "role": "site_contact"});
        assert_eq!(
            people_at(&t, &site).await,
            json!([contact, person(&lee, "Lee", &lee_phone, "site_manager")])
        );

        // PATCH assigns a member; the member shows the site; by last name.
        let reply = send(
            &t,
            Method::PATCH,
            &format!("/api/v1/members/{kim}"),
            Some(json!({"site_id": site, "role": "driver"})),
        )
        .await;
        reply.expect(200, None);
        assert_eq!(reply.body["data"]["site_id"], site);
        assert_eq!(
            people_at(&t, &site).await,
            json!([
                contact,
                person(&kim, "Kim", &kim_phone, "driver"),
                person(&lee, "Lee", &lee_phone, "site_manager")
            ])
        );

        // `site_id: null` takes a member off the site; leaving the
        // organization takes it off too.
        send(
            &t,
            Method::PATCH,
            &format!("/api/v1/members/{kim}"),
            Some(json!({"site_id": null})),
        )
        .await
        .expect(200, None);
        let left = send(&t, Method::DELETE, &format!("/api/v1/members/{lee}"), None).await;
        left.expect(200, None);
        assert_eq!(
            left.body["data"]["site_id"], site,
            "the membership keeps its site"
        );
        assert_eq!(people_at(&t, &site).await, json!([contact]));
        let member = send(&t, Method::GET, &format!("/api/v1/members/{kim}"), None).await;
        assert_eq!(member.body["data"]["site_id"], Value::Null);

        // Coming back brings the member back to the site.
        send(
            &t,
            Method::PATCH,
            &format!("/api/v1/members/{lee}"),
            Some(json!({"active": true})),
        )
        .await
        .expect(200, None);
        assert_eq!(
            people_at(&t, &site).await,
            json!([contact, person(&lee, "Lee", &lee_phone, "site_manager")])
        );
    });
}

#[test]
fn a_member_works_only_at_an_active_site_of_its_organization() {
    api_tests::run(async {
        let t = org().await;
        let other = org().await;
        let theirs = new_site(&other, json!({"name": "Theirs"})).await;
        let archived = new_site(&t, json!({"name": "Closed"})).await;
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/sites/{archived}"),
            None,
        )
        .await
        .expect(200, None);
        let before = send(
            &t,
            Method::GET,
            "/api/v1/members?include_inactive=true",
            None,
        )
        .await;
        for (site, code) in [
            (theirs.clone(), "site_not_found"),
            (Uuid::now_v7().to_string(), "site_not_found"),
            (archived.clone(), "site_archived"),
        ] {
            let phone = unique_phone();
            let body =
                json!({"first_name": "Ann", "last_name": "Lee", "phone": phone, "site_id": site});
            send(&t, Method::POST, "/api/v1/members", Some(body.clone()))
                .await
                .expect(422, Some(code));
            // Nothing was stored: the phone is still free.
            let mut fresh = body;
            fresh.as_object_mut().unwrap().remove("site_id");
            let made = send(&t, Method::POST, "/api/v1/members", Some(fresh)).await;
            made.expect(201, None);
            let id = made.body["data"]["id"].as_str().unwrap().to_owned();
            send(
                &t,
                Method::PATCH,
                &format!("/api/v1/members/{id}"),
                Some(json!({"site_id": site})),
            )
            .await
            .expect(422, Some(code));
            let member = send(&t, Method::GET, &format!("/api/v1/members/{id}"), None).await;
            assert_eq!(member.body["data"]["site_id"], Value::Null);
            assert_eq!(
                member.body["data"]["updated_at"],
                made.body["data"]["updated_at"]
            );
        }
        let after = send(
            &t,
            Method::GET,
            "/api/v1/members?include_inactive=true",
            None,
        )
        .await;
        assert_eq!(
            after.body["meta"]["count"].as_u64().unwrap(),
            before.body["meta"]["count"].as_u64().unwrap() + 3
        );
        // The other organization's site has no people of ours.
        assert_eq!(people_at(&other, &theirs).await, json!([]));
        send(
            &t,
            Method::POST,
            "/api/v1/members",
            Some(json!({"first_name": "A", "last_name": "B", "phone": unique_phone(), "site_id": "nope"})),
        )
        .await
        .expect(422, Some("validation_error"));
    });
}

#[test]
fn an_archived_site_keeps_its_people_and_site_writes_answer_them() {
    api_tests::run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Yard"})).await;
        let (lee, phone) = new_member(&t, "Lee", json!({"site_id": site})).await;
        let expected = json!([person(&lee, "Lee", &phone, "site_manager")]);
        let patched = send(
            &t,
            Method::PATCH,
            &format!("/api/v1/sites/{site}"),
            Some(json!({"city": "Oulu"})),
        )
        .await;
        patched.expect(200, None);
        assert_eq!(patched.body["data"]["members"], expected);
        let archived = send(&t, Method::DELETE, &format!("/api/v1/sites/{site}"), None).await;
        archived.expect(200, None);
        assert_eq!(archived.body["data"]["members"], expected);
        assert_eq!(people_at(&t, &site).await, expected);
        let restored = send(
            &t,
            Method::POST,
            &format!("/api/v1/sites/{site}/restore"),
            None,
        )
        .await;
        assert_eq!(restored.body["data"]["members"], expected);
    });
}
