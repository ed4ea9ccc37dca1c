use api_tests::{Reply, TestOrg, harness, org, person, run, send, stored, unique_phone};
use http::Method;
use serde_json::{Value, json};
use shared::model::member::Role;
use uuid::Uuid;

use crate::trucks::{new_truck, plate};

async fn create_member(t: &TestOrg, body: Value) -> Reply {
    send(t, Method::POST, "/api/v1/members", Some(body)).await
}

fn body(phone: &str) -> Value {
    json!({"first_name": "Ann", "last_name": "Lee", "phone": phone})
}

async fn member(t: &TestOrg, id: impl std::fmt::Display) -> Reply {
    send(t, Method::GET, &format!("/api/v1/members/{id}"), None).await
}

async fn list(t: &TestOrg, query: &str) -> Reply {
    send(t, Method::GET, &format!("/api/v1/members{query}"), None).await
}

async fn truck_driver(t: &TestOrg, truck: &str) -> Value {
    send(t, Method::GET, &format!("/api/v1/trucks/{truck}"), None)
        .await
        .body["data"]["driver_id"]
        .clone()
}

#[test]
fn create_makes_a_person_with_an_active_membership() {
    run(async {
        let t = org().await;
        let phone = unique_phone();
        let email = format!("ann.{}@Example.com", Uuid::new_v4());
        let mut sent = body(&phone);
        sent["role"] = json!("driver");
        sent["email"] = json!(email);
        sent["password"] = json!("correct horse battery");
        let reply = create_member(&t, sent).await;
        reply.expect(201, None);
        let d = &reply.body["data"];
        let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "active",
                "created_at",
                "first_name",
                "id",
                "last_name",
                "phone",
                "role",
                "site_id",
                "updated_at"
            ]
        );
        assert_eq!(
            (&d["role"], &d["active"], &d["phone"]),
            (&json!("driver"), &json!(true), &json!(phone))
        );
        let id = d["id"].as_str().unwrap();
        assert_eq!(reply.header("location"), format!("/api/v1/members/{id}"));
        // The key (read and counted at once), the password's quota, one
        // transaction.
        assert!(
            reply.ddb_calls <= 4,
            "create cost {} calls",
            reply.ddb_calls
        );
        // The profile keeps the e-mail and an argon2id hash, never the password.
        let profile = stored(format!("PROFILE#{id}"), "PROFILE").await.unwrap();
        let hash = profile["password_hash"].as_s().unwrap();
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(shared::auth::password::verify(
            "correct horse battery",
            hash
        ));
        assert!(!format!("{profile:?}").contains("correct horse battery"));
        assert!(
            stored(
                format!("EMAIL#{}#{}", t.id(), email.to_lowercase()),
                "UNIQUE"
            )
            .await
            .is_some()
        );
        let read = member(&t, id).await;
        read.expect(200, None);
        assert_eq!(&read.body["data"], d);
        assert!(read.ddb_calls <= 3, "read cost {} calls", read.ddb_calls);
        assert!(!read.text.contains("email") && !read.text.contains("platform_role"));
    });
}

#[test]
fn create_validation() {
    run(async {
        let t = org().await;
        for (change, field) in [
            (json!({"first_name": null}), "first_name"),
            (json!({"last_name": "  "}), "last_name"),
            (json!({"phone": "0401234567"}), "phone"),
            (json!({"role": "org_admin"}), "role"),
            (json!({"role": "boss"}), "role"),
            (json!({"email": "a@b.fi"}), "email and password"),
            (
                json!({"password": "correct horse battery"}),
                "email and password",
            ),
            (
                json!({"email": "a@b.fi", "password": "too short"}),
                "password",
            ),
            (
                json!({"email": "not-an-email", "password": "correct horse battery"}),
                "email",
            ),
        ] {
            let mut sent = body(&unique_phone());
            for (k, v) in change.as_object().unwrap() {
                sent[k] = v.clone();
            }
            let reply = create_member(&t, sent.clone()).await;
            reply.expect(422, Some("validation_error"));
            assert!(
                reply.body["message"].as_str().unwrap().starts_with(field),
                "{sent}: {}",
                reply.text
            );
        }
        assert_eq!(
            list(&t, "?include_inactive=true").await.body["meta"]["count"],
            0
        );
    });
}

#[test]
fn phones_and_emails_are_unique_within_the_organization_and_tell_nothing_of_others() {
    run(async {
        let t = org().await;
        let other = org().await;
        let phone = unique_phone();
        create_member(&t, body(&phone)).await.expect(201, None);
        create_member(&t, body(&phone))
            .await
            .expect(409, Some("phone_conflict"));
        // Another organization's member may have it: no 409 tells one
        // organization whose number belongs to another's people.
        create_member(&other, body(&phone)).await.expect(201, None);
        let email = format!("{}@example.com", Uuid::new_v4());
        let with = |phone: &str, email: &str| {
            let mut b = body(phone);
            b["email"] = json!(email);
            b["password"] = json!("correct horse battery");
            b
        };
        create_member(&t, with(&unique_phone(), &email))
            .await
            .expect(201, None);
        // Another case of the same address; nothing of this person is kept.
        let second_phone = unique_phone();
        create_member(&t, with(&second_phone, &email.to_uppercase()))
            .await
            .expect(409, Some("email_conflict"));
        assert!(
            stored(format!("PHONE#{}#{second_phone}", t.id()), "UNIQUE")
                .await
                .is_none()
        );
        create_member(&t, body(&second_phone))
            .await
            .expect(201, None);
        create_member(&other, with(&unique_phone(), &email))
            .await
            .expect(201, None);
    });
}

#[test]
fn concurrent_creates_with_one_phone_admit_one() {
    run(async {
        let t = org().await;
        let phone = unique_phone();
        let replies =
            futures::future::join_all((0..5).map(|_| create_member(&t, body(&phone)))).await;
        let created = replies.iter().filter(|r| r.status == 201).count();
        let conflicts = replies
            .iter()
            .filter(|r| r.code() == "phone_conflict")
            .count();
        assert_eq!((created, conflicts), (1, 4));
        assert_eq!(
            list(&t, "?include_inactive=true").await.body["meta"]["count"],
            1
        );
    });
}

#[test]
fn list_shows_active_members_by_name_and_inactive_on_request() {
    run(async {
        let t = org().await;
        let mut ids = Vec::new();
        for last in ["Virtanen", "Aalto", "Mäki"] {
            let mut b = body(&unique_phone());
            b["last_name"] = json!(last);
            ids.push(
                create_member(&t, b).await.body["data"]["id"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/members/{}", ids[2]),
            None,
        )
        .await
        .expect(200, None);
        let active = list(&t, "").await;
        active.expect(200, None);
        assert!(
            active.ddb_calls <= 3,
            "list cost {} calls",
            active.ddb_calls
        );
        let names: Vec<&str> = active.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["last_name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Aalto", "Virtanen"]);
        let all = list(&t, "?include_inactive=true").await;
        assert_eq!(all.body["meta"]["count"], 3);
        assert_eq!(
            list(&t, "?include_inactive=false").await.body["meta"]["count"],
            2
        );
        let bad = list(&t, "?include_inactive=yes").await;
        bad.expect(422, Some("validation_error"));
        assert!(
            bad.body["message"]
                .as_str()
                .unwrap()
                .starts_with("include_inactive")
        );
    });
}

#[test]
fn another_organizations_member_is_404_and_unlisted() {
    run(async {
        let t = org().await;
        let other = org().await;
        let id = create_member(&t, body(&unique_phone())).await.body["data"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let path = format!("/api/v1/members/{id}");
        member(&other, &id)
            .await
            .expect(404, Some("member_not_found"));
        for (method, path, body) in [
            (
                Method::PATCH,
                path.clone(),
                Some(json!({"first_name": "Mine"})),
            ),
            (Method::DELETE, path.clone(), None),
            (
                Method::PUT,
                format!("{path}/role"),
                Some(json!({"role": "driver"})),
            ),
            (Method::DELETE, format!("{path}/role"), None),
        ] {
            send(&other, method, &path, body)
                .await
                .expect(404, Some("member_not_found"));
        }
        assert_eq!(
            list(&other, "?include_inactive=true").await.body["meta"]["count"],
            0
        );
        let mine = member(&t, &id).await;
        assert_eq!(
            (
                &mine.body["data"]["first_name"],
                &mine.body["data"]["active"]
            ),
            (&json!("Ann"), &json!(true))
        );
        member(&t, "nope")
            .await
            .expect(400, Some("invalid_member_id"));
    });
}

#[test]
fn patch_changes_the_person_and_the_membership() {
    run(async {
        let t = org().await;
        let (old_phone, new_phone) = (unique_phone(), unique_phone());
        let id = create_member(&t, body(&old_phone)).await.body["data"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let path = format!("/api/v1/members/{id}");
        let reply = send(
            &t,
            Method::PATCH,
            &path,
            Some(json!({"first_name": " Anna ", "phone": new_phone, "role": "site_manager"})),
        )
        .await;
        reply.expect(200, None);
        let d = &reply.body["data"];
        assert_eq!(
            (&d["first_name"], &d["phone"], &d["role"]),
            (&json!("Anna"), &json!(new_phone), &json!("site_manager"))
        );
        // The phone moved: the old one is free, the new one taken.
        assert!(
            stored(format!("PHONE#{}#{old_phone}", t.id()), "UNIQUE")
                .await
                .is_none()
        );
        assert!(
            stored(format!("PHONE#{}#{new_phone}", t.id()), "UNIQUE")
                .await
                .is_some()
        );
        let profile = stored(format!("PROFILE#{id}"), "PROFILE").await.unwrap();
        assert_eq!(profile["first_name"].as_s().unwrap(), "Anna");
        create_member(&t, body(&old_phone)).await.expect(201, None);
        // role: null resets to member; a taken phone is 409 and changes nothing.
        let taken = unique_phone();
        create_member(&t, body(&taken)).await.expect(201, None);
        send(
            &t,
            Method::PATCH,
            &path,
            Some(json!({"phone": taken, "role": null})),
        )
        .await
        .expect(409, Some("phone_conflict"));
        assert_eq!(member(&t, &id).await.body["data"]["role"], "site_manager");
        let reply = send(&t, Method::PATCH, &path, Some(json!({"role": null}))).await;
        assert_eq!(reply.body["data"]["role"], "member");
        for bad in [
            json!({}),
            json!({"role": "org_admin"}),
            json!({"active": null}),
            json!({"phone": "12"}),
        ] {
            send(&t, Method::PATCH, &path, Some(bad))
                .await
                .expect(422, Some("validation_error"));
        }
    });
}

#[test]
fn leaving_and_rejoining() {
    run(async {
        let t = org().await;
        let id = create_member(&t, body(&unique_phone())).await.body["data"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let path = format!("/api/v1/members/{id}");
        let left = send(&t, Method::DELETE, &path, None).await;
        left.expect(200, None);
        assert_eq!(left.body["data"]["active"], false);
        send(&t, Method::DELETE, &path, None)
            .await
            .expect(409, Some("already_inactive"));
        // Inactive members stay readable by id.
        assert_eq!(member(&t, &id).await.body["data"]["active"], false);
        let back = send(&t, Method::PATCH, &path, Some(json!({"active": true}))).await;
        back.expect(200, None);
        assert_eq!(back.body["data"]["active"], true);
        let left = send(&t, Method::PATCH, &path, Some(json!({"active": false}))).await;
        assert_eq!(left.body["data"]["active"], false);
    });
}

#[test]
fn role_routes_set_and_reset_one_role() {
    run(async {
        let t = org().await;
        let id = create_member(&t, body(&unique_phone())).await.body["data"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let path = format!("/api/v1/members/{id}/role");
        let set = send(
            &t,
            Method::PUT,
            &path,
            Some(json!({"role": "additive_supplier"})),
        )
        .await;
        set.expect(200, None);
        assert_eq!(set.body["data"]["role"], "additive_supplier");
        for bad in [
            json!({"role": "org_admin"}),
            json!({"role": null}),
            json!({}),
        ] {
            send(&t, Method::PUT, &path, Some(bad))
                .await
                .expect(422, Some("validation_error"));
        }
        let reset = send(&t, Method::DELETE, &path, None).await;
        reset.expect(200, None);
        assert_eq!(
            (&reset.body["data"]["role"], &reset.body["data"]["active"]),
            (&json!("member"), &json!(true))
        );
    });
}

#[test]
fn org_admins_are_the_admin_applications() {
    run(async {
        let t = org().await;
        let admin = person(t.id(), Role::OrgAdmin).await;
        let path = format!("/api/v1/members/{}", admin.profile_id);
        member(&t, admin.profile_id).await.expect(200, None);
        for (method, path, body) in [
            (
                Method::PATCH,
                path.clone(),
                Some(json!({"first_name": "Eve"})),
            ),
            (Method::DELETE, path.clone(), None),
            (
                Method::PUT,
                format!("{path}/role"),
                Some(json!({"role": "member"})),
            ),
            (Method::DELETE, format!("{path}/role"), None),
        ] {
            send(&t, method, &path, body)
                .await
                .expect(403, Some("org_admin_managed"));
        }
        let read = member(&t, admin.profile_id).await;
        assert_eq!(
            (&read.body["data"]["role"], &read.body["data"]["active"]),
            (&json!("org_admin"), &json!(true))
        );
    });
}

#[test]
fn leaving_or_ceasing_to_drive_releases_the_truck() {
    run(async {
        let t = org().await;
        // Each trigger, with its own driver and truck.
        let triggers: [(Method, &str, Option<Value>); 6] = [
            (Method::DELETE, "", None),
            (Method::PATCH, "", Some(json!({"active": false}))),
            (Method::PATCH, "", Some(json!({"role": "factory_manager"}))),
            (Method::PATCH, "", Some(json!({"role": null}))),
            (Method::PUT, "/role", Some(json!({"role": "site_manager"}))),
            (Method::DELETE, "/role", None),
        ];
        for (method, suffix, body) in triggers {
            let driver = person(t.id(), Role::Driver).await;
            let truck = new_truck(
                &t,
                json!({"license": plate(), "driverId": driver.profile_id}),
            )
            .await;
            let reply = send(
                &t,
                method.clone(),
                &format!("/api/v1/members/{}{suffix}", driver.profile_id),
                body,
            )
            .await;
            reply.expect(200, None);
            assert!(
                reply.ddb_calls <= 4,
                "{method} {suffix} cost {} calls",
                reply.ddb_calls
            );
            assert_eq!(
                truck_driver(&t, &truck).await,
                Value::Null,
                "{method} {suffix}"
            );
            let membership = harness()
                .await
                .store()
                .members()
                .require(t.id(), driver.profile_id)
                .await
                .unwrap();
            assert_eq!(membership.truck_id, None);
        }
        // A change that keeps the driver driving keeps the truck.
        let driver = person(t.id(), Role::Driver).await;
        let truck = new_truck(
            &t,
            json!({"license": plate(), "driverId": driver.profile_id}),
        )
        .await;
        send(
            &t,
            Method::PATCH,
            &format!("/api/v1/members/{}", driver.profile_id),
            Some(json!({"last_name": "Renamed"})),
        )
        .await
        .expect(200, None);
        assert_eq!(truck_driver(&t, &truck).await, json!(driver.profile_id));
    });
}

#[test]
fn a_key_hashes_at_most_100_passwords_an_hour_created_or_not() {
    run(async {
        let t = org().await;
        let with_password = |phone: &str| {
            let mut b = body(phone);
            b["email"] = json!(format!("{}@example.com", Uuid::new_v4()));
            b["password"] = json!("correct horse battery");
            b
        };
        api_tests::use_quota(&t, &shared::model::quota::PASSWORD_HASHING, 98).await;
        let taken = unique_phone();
        create_member(&t, with_password(&taken))
            .await
            .expect(201, None);
        // A 409 after the hash still spent it.
        create_member(&t, with_password(&taken))
            .await
            .expect(409, Some("phone_conflict"));
        let refused = create_member(&t, with_password(&unique_phone())).await;
        refused.expect(429, Some("password_rate_limited"));
        assert!(!refused.header("retry-after").is_empty());
        // Members without a password are not held back, and nothing of the
        // refused one was stored.
        create_member(&t, body(&unique_phone()))
            .await
            .expect(201, None);
        assert_eq!(
            list(&t, "?include_inactive=true").await.body["meta"]["count"],
            2
        );
    });
}
