use api_tests::{Reply, TestOrg, org, run, send};
use http::Method;
use serde_json::json;
use uuid::Uuid;

use crate::sites::new_site;

async fn grant(granter: &TestOrg, grantee: Uuid, scope: Option<&str>) -> Reply {
    let mut body = json!({"grantee_org_id": grantee});
    if let Some(scope) = scope {
        body["scope"] = scope.into();
    }
    send(
        granter,
        Method::POST,
        "/api/v1/org-access-grants",
        Some(body),
    )
    .await
}

#[test]
fn create_is_an_idempotent_upsert_per_grantee() {
    run(async {
        let granter = org().await;
        let haulier = org().await;
        let created = grant(&granter, haulier.id(), None).await;
        created.expect(201, None);
        let g = &created.body["data"];
        assert_eq!(g["scope"], "read");
        assert_eq!(g["granter_org_id"], granter.id().to_string());
        assert_eq!(g["grantee_org_id"], haulier.id().to_string());
        let again = grant(&granter, haulier.id(), Some("full")).await;
        again.expect(200, None);
        assert_eq!(again.body["data"]["id"], g["id"]);
        assert_eq!(again.body["data"]["created_at"], g["created_at"]);
        assert_eq!(again.body["data"]["scope"], "full");
        let list = send(&granter, Method::GET, "/api/v1/org-access-grants", None).await;
        list.expect(200, None);
        assert!(list.ddb_calls <= 3, "list cost {} calls", list.ddb_calls);
        assert_eq!(list.body["meta"]["count"], 1);
        assert_eq!(list.body["data"][0]["scope"], "full");
    });
}

#[test]
fn grants_to_oneself_or_unknown_organizations_are_refused() {
    run(async {
        let t = org().await;
        grant(&t, t.id(), None)
            .await
            .expect(422, Some("grant_to_self"));
        grant(&t, Uuid::now_v7(), None)
            .await
            .expect(422, Some("grantee_not_found"));
        let other = org().await;
        grant(&t, other.id(), Some("admin"))
            .await
            .expect(422, Some("validation_error"));
        send(
            &t,
            Method::POST,
            "/api/v1/org-access-grants",
            Some(json!({"grantee_org_id": "nope"})),
        )
        .await
        .expect(422, Some("validation_error"));
        send(
            &t,
            Method::POST,
            "/api/v1/org-access-grants",
            Some(json!({})),
        )
        .await
        .expect(422, Some("validation_error"));
        assert_eq!(
            send(&t, Method::GET, "/api/v1/org-access-grants", None)
                .await
                .body["meta"]["count"],
            0
        );
    });
}

#[test]
fn revoke_removes_the_grant() {
    run(async {
        let granter = org().await;
        let haulier = org().await;
        grant(&granter, haulier.id(), None).await.expect(201, None);
        let path = format!("/api/v1/org-access-grants/{}", haulier.id());
        let revoked = send(&granter, Method::DELETE, &path, None).await;
        revoked.expect(204, None);
        assert!(revoked.text.is_empty());
        send(&granter, Method::DELETE, &path, None)
            .await
            .expect(404, Some("grant_not_found"));
        assert_eq!(
            send(&granter, Method::GET, "/api/v1/org-access-grants", None)
                .await
                .body["meta"]["count"],
            0
        );
        send(
            &granter,
            Method::DELETE,
            "/api/v1/org-access-grants/xyz",
            None,
        )
        .await
        .expect(400, Some("invalid_org_id"));
    });
}

#[test]
fn a_grant_lets_the_grantee_read_the_granters_sites_by_id_only() {
    run(async {
        let granter = org().await;
        let haulier = org().await;
        let stranger = org().await;
        let site = new_site(
            &granter,
            json!({"name": "Granted yard", "contact_first_name": "Ann"}),
        )
        .await;
        let path = format!("/api/v1/sites/{site}");
        send(&haulier, Method::GET, &path, None)
            .await
            .expect(404, Some("site_not_found"));

        grant(&granter, haulier.id(), None).await.expect(201, None);
        let read = send(&haulier, Method::GET, &path, None).await;
        read.expect(200, None);
        assert_eq!(read.body["data"]["customer_id"], granter.id().to_string());
        send(&haulier, Method::GET, &format!("{path}/members"), None)
            .await
            .expect(200, None);
        // Nothing else crosses: no lists, no writes, not the other way round, not to strangers.
        assert_eq!(
            send(&haulier, Method::GET, "/api/v1/sites?status=all", None)
                .await
                .body["meta"]["count"],
            0
        );
        send(
            &haulier,
            Method::PATCH,
            &path,
            Some(json!({"name": "Mine"})),
        )
        .await
        .expect(404, Some("site_not_found"));
        send(&haulier, Method::DELETE, &path, None)
            .await
            .expect(404, Some("site_not_found"));
        send(&haulier, Method::POST, &format!("{path}/restore"), None)
            .await
            .expect(404, Some("site_not_found"));
        assert_eq!(
            send(&haulier, Method::GET, "/api/v1/org-access-grants", None)
                .await
                .body["meta"]["count"],
            0
        );
        let haulier_site = new_site(&haulier, json!({"name": "Haulier depot"})).await;
        send(
            &granter,
            Method::GET,
            &format!("/api/v1/sites/{haulier_site}"),
            None,
        )
        .await
        .expect(404, Some("site_not_found"));
        send(&stranger, Method::GET, &path, None)
            .await
            .expect(404, Some("site_not_found"));
        let rp = send(
            &granter,
            Method::POST,
            "/api/v1/receiving-points",
            Some(json!({"site_id": site, "name": "Gate"})),
        )
        .await;
        rp.expect(201, None);
        let rp_path = format!(
            "/api/v1/receiving-points/{}",
            rp.body["data"]["id"].as_str().unwrap()
        );
        send(&haulier, Method::GET, &rp_path, None)
            .await
            .expect(404, Some("receiving_point_not_found"));
        assert_eq!(
            send(&granter, Method::GET, &path, None).await.body["data"]["name"],
            "Granted yard"
        );

        // Revocation takes the access away.
        send(
            &granter,
            Method::DELETE,
            &format!("/api/v1/org-access-grants/{}", haulier.id()),
            None,
        )
        .await
        .expect(204, None);
        send(&haulier, Method::GET, &path, None)
            .await
            .expect(404, Some("site_not_found"));
    });
}

#[test]
fn scopes_are_enforced() {
    run(async {
        let t = org().await;
        let other = org().await;
        let reader = TestOrg {
            org: t.org.clone(),
            key: api_tests::new_key(t.id(), &[shared::auth::Scope::ReadData]).await,
        };
        send(&reader, Method::GET, "/api/v1/org-access-grants", None)
            .await
            .expect(200, None);
        grant(&reader, other.id(), None)
            .await
            .expect(403, Some("insufficient_scope"));
        send(
            &reader,
            Method::DELETE,
            &format!("/api/v1/org-access-grants/{}", other.id()),
            None,
        )
        .await
        .expect(403, Some("insufficient_scope"));
    });
}

#[test]
fn another_organization_cannot_see_or_revoke_a_grant() {
    run(async {
        let granter = org().await;
        let haulier = org().await;
        let other = org().await;
        grant(&granter, haulier.id(), None).await.expect(201, None);
        // The other organization's own grant list is empty and its DELETE only ever names its own grants.
        assert_eq!(
            send(&other, Method::GET, "/api/v1/org-access-grants", None)
                .await
                .body["meta"]["count"],
            0
        );
        send(
            &other,
            Method::DELETE,
            &format!("/api/v1/org-access-grants/{}", haulier.id()),
            None,
        )
        .await
        .expect(404, Some("grant_not_found"));
        // Neither can the grantee revoke it.
        send(
            &haulier,
            Method::DELETE,
            &format!("/api/v1/org-access-grants/{}", haulier.id()),
            None,
        )
        .await
        .expect(404, Some("grant_not_found"));
        let list = send(&granter, Method::GET, "/api/v1/org-access-grants", None).await;
        assert_eq!(list.body["meta"]["count"], 1);
        assert_eq!(
            list.body["data"][0]["grantee_org_id"],
            haulier.id().to_string()
        );
    });
}
