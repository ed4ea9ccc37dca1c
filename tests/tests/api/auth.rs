use api_tests::{call, harness, new_key, org, org_with, run};
use chrono::{Duration, Utc};
use http::Method;
use shared::auth::Scope;

fn orgs() -> api_tests::Call {
    call(Method::GET, "/api/v1/orgs")
}

#[test]
fn missing_key_is_401_missing_api_key_with_rate_headers() {
    run(async {
        let reply = orgs().send().await;
        reply.expect(401, Some("missing_api_key"));
        assert_eq!(reply.body["error"], "Unauthorized");
        assert_eq!(reply.header("x-ratelimit-limit"), "100");
        assert_eq!(reply.header("x-ratelimit-remaining"), "100");
        assert!(
            reply.header("x-ratelimit-reset").parse::<u64>().unwrap()
                > Utc::now().timestamp() as u64
        );
    });
}

#[test]
fn malformed_keys_are_missing_api_key() {
    run(async {
        let t = org().await;
        let wrong_prefix = t.key.replacen("svc_", "xyz_", 1);
        for bad in ["svc_app_tooshort", wrong_prefix.as_str(), "", "Bearer"] {
            orgs()
                .header("x-api-key", bad)
                .send()
                .await
                .expect(401, Some("missing_api_key"));
        }
        orgs()
            .header("authorization", &format!("Basic {}", t.key))
            .send()
            .await
            .expect(401, Some("missing_api_key"));
    });
}

#[test]
fn unknown_key_is_401_invalid_api_key() {
    run(async {
        let unknown = shared::auth::key::generate("svc_app_").plaintext;
        orgs()
            .key(&unknown)
            .send()
            .await
            .expect(401, Some("invalid_api_key"));
    });
}

#[test]
fn x_api_key_header_works_and_both_headers_must_agree() {
    run(async {
        let t = org().await;
        orgs()
            .header("x-api-key", &t.key)
            .send()
            .await
            .expect(200, None);
        orgs()
            .key(&t.key)
            .header("x-api-key", &t.key)
            .send()
            .await
            .expect(200, None);
        let other = org().await;
        orgs()
            .key(&t.key)
            .header("x-api-key", &other.key)
            .send()
            .await
            .expect(401, Some("conflicting_api_keys"));
    });
}

#[test]
fn repeated_key_headers_are_all_read() {
    run(async {
        let t = org().await;
        let other = org().await;
        orgs()
            .header("x-api-key", &t.key)
            .header("x-api-key", &other.key)
            .send()
            .await
            .expect(401, Some("conflicting_api_keys"));
        orgs()
            .key(&t.key)
            .key(&other.key)
            .send()
            .await
            .expect(401, Some("conflicting_api_keys"));
        orgs()
            .header("x-api-key", &t.key)
            .header("x-api-key", &t.key)
            .send()
            .await
            .expect(200, None);
    });
}

#[test]
fn a_proxys_basic_authorization_beside_x_api_key_is_ignored() {
    run(async {
        let t = org().await;
        let reply = orgs()
            .header("authorization", "Basic cHJveHk6c2VjcmV0")
            .header("x-api-key", &t.key)
            .send()
            .await;
        reply.expect(200, None);
        assert_eq!(reply.body["data"][0]["id"], t.id().to_string());
    });
}

#[test]
fn a_key_longer_than_the_format_is_malformed() {
    run(async {
        let t = org().await;
        orgs()
            .header("x-api-key", &format!("{}{}", t.key, "A".repeat(10)))
            .send()
            .await
            .expect(401, Some("missing_api_key"));
    });
}

#[test]
fn revoked_key_fails_on_the_very_next_request() {
    run(async {
        let t = org().await;
        orgs().key(&t.key).send().await.expect(200, None);
        let store = harness().await.store();
        let key_id = store.api_keys().list(t.id()).await.unwrap()[0].key_id;
        store.api_keys().revoke(t.id(), key_id).await.unwrap();
        orgs()
            .key(&t.key)
            .send()
            .await
            .expect(401, Some("api_key_revoked"));
        // Revocation is permanent.
        let again = store.api_keys().revoke(t.id(), key_id).await.unwrap_err();
        assert_eq!(again.code(), "already_revoked");
    });
}

#[test]
fn a_rotated_key_and_its_successor_both_work_until_the_old_is_revoked() {
    run(async {
        let t = org().await;
        let store = harness().await.store();
        let old_id = store.api_keys().list(t.id()).await.unwrap()[0].key_id;
        // Rotation: a new key with the same scopes, then the old one revoked.
        let successor = new_key(t.id(), &[Scope::All]).await;
        for key in [&t.key, &successor] {
            orgs().key(key).send().await.expect(200, None);
        }
        store.api_keys().revoke(t.id(), old_id).await.unwrap();
        orgs()
            .key(&t.key)
            .send()
            .await
            .expect(401, Some("api_key_revoked"));
        let reply = orgs().key(&successor).send().await;
        reply.expect(200, None);
        assert_eq!(reply.body["data"][0]["id"], t.id().to_string());
    });
}

#[test]
fn expired_key_is_401_api_key_expired() {
    run(async {
        let t = org().await;
        let h = harness().await;
        let (key, _) = h
            .store()
            .api_keys()
            .create(
                t.id(),
                vec![Scope::All],
                Some((Utc::now() - Duration::seconds(1)).into()),
                None,
                "svc_app_",
            )
            .await
            .unwrap();
        orgs()
            .key(&key)
            .send()
            .await
            .expect(401, Some("api_key_expired"));
        let (fresh, _) = h
            .store()
            .api_keys()
            .create(
                t.id(),
                vec![Scope::All],
                Some((Utc::now() + Duration::hours(1)).into()),
                None,
                "svc_app_",
            )
            .await
            .unwrap();
        orgs().key(&fresh).send().await.expect(200, None);
    });
}

#[test]
fn missing_scope_is_403_insufficient_scope() {
    run(async {
        let t = org_with(&[Scope::ReadData]).await;
        orgs()
            .key(&t.key)
            .send()
            .await
            .expect(403, Some("insufficient_scope"));
        let reader = new_key(t.id(), &[Scope::ReadOrgs]).await;
        orgs().key(&reader).send().await.expect(200, None);
        call(Method::PATCH, &format!("/api/v1/orgs/{}", t.id()))
            .key(&reader)
            .json(&serde_json::json!({"city": "Turku"}))
            .send()
            .await
            .expect(403, Some("insufficient_scope"));
        let writer = new_key(t.id(), &[Scope::WriteOrgsSelf]).await;
        call(Method::PATCH, &format!("/api/v1/orgs/{}", t.id()))
            .key(&writer)
            .json(&serde_json::json!({"city": "Turku"}))
            .send()
            .await
            .expect(200, None);
    });
}

#[test]
fn organization_without_entitlement_is_403_feature_not_enabled() {
    run(async {
        let t = org().await;
        let narrow = new_key(t.id(), &[Scope::ReadData]).await;
        let store = harness().await.store();
        store
            .api_keys()
            .set_entitlement(t.id(), false)
            .await
            .unwrap();
        orgs()
            .key(&t.key)
            .send()
            .await
            .expect(403, Some("feature_not_enabled"));
        // Scopes are checked first.
        orgs()
            .key(&narrow)
            .send()
            .await
            .expect(403, Some("insufficient_scope"));
        // Keys issued while disabled carry the setting too.
        let later = new_key(t.id(), &[Scope::All]).await;
        orgs()
            .key(&later)
            .send()
            .await
            .expect(403, Some("feature_not_enabled"));
        store
            .api_keys()
            .set_entitlement(t.id(), true)
            .await
            .unwrap();
        orgs().key(&t.key).send().await.expect(200, None);
        orgs().key(&later).send().await.expect(200, None);
    });
}

#[test]
fn disabled_deployment_is_403_public_api_disabled() {
    run(async {
        let t = org().await;
        let router = harness()
            .await
            .router_with(|c| c.http.public_api_enabled = false);
        orgs()
            .key(&t.key)
            .send_to(&router)
            .await
            .expect(403, Some("public_api_disabled"));
        // Key errors still come first.
        orgs()
            .send_to(&router)
            .await
            .expect(401, Some("missing_api_key"));
        // Health stays up.
        call(Method::GET, "/api/health")
            .send_to(&router)
            .await
            .expect(200, None);
    });
}

#[test]
fn refused_requests_use_no_budget() {
    run(async {
        let t = org_with(&[Scope::ReadData]).await;
        for _ in 0..3 {
            orgs()
                .key(&t.key)
                .send()
                .await
                .expect(403, Some("insufficient_scope"));
        }
        let reader = new_key(t.id(), &[Scope::ReadOrgs]).await;
        let reply = orgs().key(&reader).send().await;
        reply.expect(200, None);
        assert_eq!(reply.header("x-ratelimit-remaining"), "99");
    });
}

#[test]
fn store_failures_are_500_internal_error_without_details() {
    run(async {
        let t = org().await;
        let router = harness()
            .await
            .router_with(|c| c.store.table = "no-such-table".into());
        let reply = orgs().key(&t.key).send_to(&router).await;
        reply.expect(500, Some("internal_error"));
        assert_eq!(reply.body["error"], "Internal Server Error");
        assert!(!reply.text.contains("no-such-table"), "{}", reply.text);
        assert!(
            !reply.text.to_lowercase().contains("dynamo"),
            "{}",
            reply.text
        );
        assert!(!reply.header("x-request-id").is_empty());
        assert!(!reply.header("x-ratelimit-limit").is_empty());
    });
}
