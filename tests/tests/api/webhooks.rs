//! Webhook registration: the secret shown once and stored sealed, the
//! uniqueness per organization, event and URL, the refusals, delete, and
//! isolation.

use api_tests::{Reply, TestOrg, harness, ids, org, org_with, run, send};
use http::Method;
use serde_json::{Value, json};
use shared::auth::Scope;

const URL: &str = "https://hooks.example.com/concrete";

async fn register(t: &TestOrg, body: Value) -> Reply {
    send(t, Method::POST, "/api/v1/webhooks", Some(body)).await
}

async fn list(t: &TestOrg) -> Reply {
    let reply = send(t, Method::GET, "/api/v1/webhooks", None).await;
    reply.expect(200, None);
    reply
}

#[test]
fn registration_shows_the_secret_once_and_stores_it_sealed() {
    run(async {
        let t = org().await;
        let reply = register(&t, json!({"event": "surplus.delivered", "url": URL})).await;
        reply.expect(201, None);
        let data = &reply.body["data"];
        let id = data["id"].as_str().unwrap();
        let secret = data["secret"].as_str().unwrap();
        assert!(
            secret.starts_with("whsec_") && secret.len() == 50,
            "{secret}"
        );
        assert_eq!(reply.header("location"), format!("/api/v1/webhooks/{id}"));
        assert_eq!(data["event"], "surplus.delivered");
        assert_eq!(data["url"], URL);
        assert_eq!(data["verification_mode"], "hmac_sha256");

        // Never again: not in the list, not in the delete's answer.
        let listed = list(&t).await;
        assert_eq!(ids(&listed), [id]);
        assert!(!listed.text.contains(secret) && listed.body["data"][0].get("secret").is_none());

        // At rest: sealed, and it opens to the secret for this record only.
        let record = harness()
            .await
            .store()
            .webhooks()
            .require(t.id(), id.parse().unwrap())
            .await
            .unwrap();
        assert!(!record.sealed_secret.contains(&secret[6..]));
        let state = &harness().await.state;
        let id = uuid::Uuid::parse_str(id).unwrap();
        assert_eq!(
            state
                .sealer
                .open(id.as_bytes(), &record.sealed_secret)
                .await
                .unwrap(),
            secret
        );
        assert!(
            state
                .sealer
                .open(uuid::Uuid::nil().as_bytes(), &record.sealed_secret)
                .await
                .is_err()
        );

        let bearer = register(&t, json!({"event": "surplus.delivered", "url": format!("{URL}/2"), "verification_mode": "bearer_token"})).await;
        bearer.expect(201, None);
        assert_eq!(bearer.body["data"]["verification_mode"], "bearer_token");
        assert_ne!(bearer.body["data"]["secret"], secret);
    });
}

#[test]
fn one_webhook_per_organization_event_and_url() {
    run(async {
        let t = org().await;
        let body = json!({"event": "surplus.delivered", "url": URL});
        register(&t, body.clone()).await.expect(201, None);
        register(&t, body.clone())
            .await
            .expect(409, Some("webhook_already_exists"));
        assert_eq!(list(&t).await.body["data"].as_array().unwrap().len(), 1);
        // Another organization may register the same URL.
        let other = org().await;
        register(&other, body.clone()).await.expect(201, None);
        // Racing registrations: exactly one wins.
        let racer = org().await;
        let replies =
            futures::future::join_all((0..4).map(|_| register(&racer, body.clone()))).await;
        let created = replies.iter().filter(|r| r.status == 201).count();
        assert_eq!(created, 1);
        for reply in replies.iter().filter(|r| r.status != 201) {
            reply.expect(409, Some("webhook_already_exists"));
        }
        assert_eq!(list(&racer).await.body["data"].as_array().unwrap().len(), 1);
    });
}

#[test]
fn the_deprecated_event_is_refused_with_its_deprecation_and_sunset() {
    run(async {
        let t = org().await;
        // The contract's deprecated event, never sent by v1
        // (docs/compatibility.md): refused, with the notice's headers.
        let reply = register(&t, json!({"event": "surplus.created", "url": URL})).await;
        reply.expect(422, Some("event_deprecated"));
        assert_eq!(reply.header("deprecation"), "@1795219200");
        assert_eq!(reply.header("sunset"), "Sat, 21 Nov 2026 00:00:00 GMT");
        assert_eq!(
            reply.header("link"),
            "</docs#op-post-api-v1-webhooks>; rel=\"deprecation\"; type=\"text/html\""
        );
        // The link's target is on the reference page.
        let docs = api_tests::call(http::Method::GET, "/docs").send().await;
        assert!(
            docs.text.contains("id=\"op-post-api-v1-webhooks\""),
            "the reference has the anchor"
        );
        // Nothing stored; another refusal carries no deprecation.
        assert_eq!(list(&t).await.body["data"], json!([]));
        let other = register(&t, json!({"event": "surplus.updated", "url": URL})).await;
        other.expect(422, Some("validation_error"));
        assert_eq!(other.header("deprecation"), "");
    });
}

#[test]
fn refusals_name_the_field_and_store_nothing() {
    run(async {
        let t = org().await;
        register(&t, json!({"event": "surplus.created", "url": URL}))
            .await
            .expect(422, Some("event_deprecated"));
        for (body, field) in [
            (json!({"event": "surplus.updated", "url": URL}), "event"),
            (json!({"url": URL}), "event"),
            (json!({"event": "surplus.delivered"}), "url"),
            (
                json!({"event": "surplus.delivered", "url": "http://hooks.example.com/"}),
                "url",
            ),
            (
                json!({"event": "surplus.delivered", "url": "https://user:pw@hooks.example.com/"}),
                "url",
            ),
            (
                json!({"event": "surplus.delivered", "url": "https://127.0.0.1/hook"}),
                "url",
            ),
            (
                json!({"event": "surplus.delivered", "url": "https://[fd00:ec2::254]/"}),
                "url",
            ),
            (
                json!({"event": "surplus.delivered", "url": "https://localhost/hook"}),
                "url",
            ),
            // A local receiver needs the development setting (off here).
            (
                json!({"event": "surplus.delivered", "url": "http://127.0.0.1:8000/hook"}),
                "url",
            ),
            (
                json!({"event": "surplus.delivered", "url": format!("https://example.com/{}", "x".repeat(2048))}),
                "url",
            ),
            (
                json!({"event": "surplus.delivered", "url": URL, "verification_mode": "none"}),
                "verification_mode",
            ),
        ] {
            let reply = register(&t, body.clone()).await;
            reply.expect(422, Some("validation_error"));
            let message = reply.body["message"].as_str().unwrap();
            assert!(message.contains(field), "{body}: {message}");
        }
        assert_eq!(list(&t).await.body["data"], json!([]));
        let reader = org_with(&[Scope::ReadData]).await;
        register(&reader, json!({"event": "surplus.delivered", "url": URL}))
            .await
            .expect(403, Some("insufficient_scope"));
    });
}

#[test]
fn every_numeric_spelling_of_a_refused_address_is_refused_at_registration() {
    run(async {
        let t = org().await;
        // The two the security review reproduced first, then every form.
        let reproduced = ["0x7f.0x1", "0xa9.0xfe.0xa9.0xfe"];
        let forms = shared::net::NUMERIC_HOST_FORMS
            .iter()
            .map(|(host, _)| *host);
        for host in reproduced.into_iter().chain(forms) {
            let url = format!("https://{host}/h");
            let reply = register(&t, json!({"event": "surplus.delivered", "url": url})).await;
            reply.expect(422, Some("validation_error"));
            assert!(
                reply.body["message"].as_str().unwrap().starts_with("url"),
                "{url}"
            );
        }
        assert_eq!(list(&t).await.body["data"], json!([]));
    });
}

#[test]
fn delete_removes_the_webhook_and_frees_its_url() {
    run(async {
        let t = org().await;
        let body = json!({"event": "surplus.delivered", "url": URL});
        let created = register(&t, body.clone()).await;
        let id = created.body["data"]["id"].as_str().unwrap().to_owned();
        let path = format!("/api/v1/webhooks/{id}");
        let deleted = send(&t, Method::DELETE, &path, None).await;
        deleted.expect(200, None);
        assert_eq!(deleted.body["data"]["id"], id);
        assert!(deleted.body["data"].get("secret").is_none());
        assert_eq!(list(&t).await.body["data"], json!([]));
        send(&t, Method::DELETE, &path, None)
            .await
            .expect(404, Some("webhook_not_found"));
        register(&t, body).await.expect(201, None);
        send(&t, Method::DELETE, "/api/v1/webhooks/nope", None)
            .await
            .expect(400, Some("invalid_webhook_id"));
    });
}

#[test]
fn another_organization_never_sees_or_deletes_a_webhook() {
    run(async {
        let t = org().await;
        let other = org().await;
        let created = register(&t, json!({"event": "surplus.delivered", "url": URL})).await;
        let id = created.body["data"]["id"].as_str().unwrap().to_owned();
        assert_eq!(list(&other).await.body["data"], json!([]));
        send(
            &other,
            Method::DELETE,
            &format!("/api/v1/webhooks/{id}"),
            None,
        )
        .await
        .expect(404, Some("webhook_not_found"));
        assert_eq!(ids(&list(&t).await), [id]);
    });
}

#[test]
fn an_organization_has_at_most_20_webhooks() {
    run(async {
        let t = org().await;
        let url = |i: usize| format!("{URL}/{i}");
        for i in 0..20 {
            register(&t, json!({"event": "surplus.delivered", "url": url(i)}))
                .await
                .expect(201, None);
        }
        register(&t, json!({"event": "surplus.delivered", "url": url(20)}))
            .await
            .expect(409, Some("webhook_limit_reached"));
        let listed = list(&t).await;
        assert_eq!(listed.body["meta"]["count"], 20);
        // Deleting one makes room for one.
        let first = ids(&listed)[0].clone();
        send(
            &t,
            Method::DELETE,
            &format!("/api/v1/webhooks/{first}"),
            None,
        )
        .await
        .expect(200, None);
        register(&t, json!({"event": "surplus.delivered", "url": url(20)}))
            .await
            .expect(201, None);
        register(&t, json!({"event": "surplus.delivered", "url": url(21)}))
            .await
            .expect(409, Some("webhook_limit_reached"));
        // Another organization counts its own.
        let other = org().await;
        register(&other, json!({"event": "surplus.delivered", "url": url(0)}))
            .await
            .expect(201, None);
    });
}

#[test]
fn an_operator_manages_the_same_rows_through_the_cli() {
    run(async {
        use admin::webhooks::{Webhooks, run as operate};
        let t = org().await;
        let state = &harness().await.state;
        let created = register(&t, json!({"event": "surplus.delivered", "url": URL})).await;
        created.expect(201, None);
        let own = created.body["data"]["id"].as_str().unwrap().to_owned();
        // The organization's rows, no secret.
        let listed = operate(state, Webhooks::List { org: t.id() })
            .await
            .unwrap();
        assert_eq!(listed.lines.len(), 1);
        assert_eq!(listed.lines[0]["webhook"]["id"], own);
        assert!(listed.lines[0]["webhook"].get("secret").is_none());
        // An operator registers one: its secret shown once, the
        // organization sees it as its own.
        let registered = operate(
            state,
            Webhooks::Register {
                org: t.id(),
                url: format!("{URL}/operator"),
                event: "surplus.delivered".into(),
                verification_mode: None,
            },
        )
        .await
        .unwrap();
        let secret = registered.lines[0]["secret"].as_str().unwrap();
        assert!(secret.starts_with("whsec_"));
        api_tests::logs::remember(secret);
        let theirs = registered.lines[0]["webhook"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(ids(&list(&t).await), [own.clone(), theirs.clone()]);
        // The same rules as the API: an address no delivery may reach.
        let refused = operate(
            state,
            Webhooks::Register {
                org: t.id(),
                url: "https://0x7f.1/h".into(),
                event: "surplus.delivered".into(),
                verification_mode: None,
            },
        )
        .await;
        assert!(refused.is_err());
        // Deliveries and a retry of one that is not there.
        let attempts = operate(
            state,
            Webhooks::Deliveries {
                org: t.id(),
                webhook: own.parse().unwrap(),
                limit: 10,
                pings: false,
            },
        )
        .await
        .unwrap();
        assert_eq!(attempts.lines[0]["attempts"], 0);
        let retry = operate(
            state,
            Webhooks::Retry {
                org: t.id(),
                webhook: own.parse().unwrap(),
                delivery: uuid::Uuid::now_v7(),
            },
        )
        .await
        .unwrap_err();
        assert!(retry.to_string().contains("no delivery"), "{retry}");
        // Another organization's webhook is not this organization's row.
        let other = org().await;
        let foreign = operate(
            state,
            Webhooks::Delete {
                org: other.id(),
                webhook: own.parse().unwrap(),
            },
        )
        .await;
        assert!(foreign.is_err());
        // Delete: gone for the organization too.
        let deleted = operate(
            state,
            Webhooks::Delete {
                org: t.id(),
                webhook: theirs.parse().unwrap(),
            },
        )
        .await
        .unwrap();
        assert_eq!(deleted.lines[0]["deleted"]["id"], theirs);
        assert_eq!(ids(&list(&t).await), [own]);
    });
}
