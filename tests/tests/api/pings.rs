//! Pings (`POST /api/v1/webhooks/{webhookId}/ping`): a signed
//! `webhook.ping` reaches its one webhook the way a load's delivery does
//! (outbox, queue, both signatures, two during a roll, retries) and shows
//! in the pings list, not the deliveries list; it touches no load, report
//! or bill; another organization's webhook is 404; a receiver is pinged
//! at most 10 times a clock hour by one organization, whatever webhook
//! names it; an `Idempotency-Key` sends one ping; an
//! operator pings too, audited.

use std::time::Duration;

use api_tests::webhooks::{Receiver, Stack, keep_rolled, quick_policy};
use api_tests::{TestOrg, call, org, run};
use http::Method;
use serde_json::json;

use crate::deliveries::{register, send, verify};

async fn ping(stack: &Stack, t: &TestOrg, hook: &str) -> api_tests::Reply {
    send(
        stack,
        t,
        Method::POST,
        &format!("/api/v1/webhooks/{hook}/ping"),
        None,
    )
    .await
}

async fn list(stack: &Stack, t: &TestOrg, hook: &str, log: &str) -> api_tests::Reply {
    let reply = send(
        stack,
        t,
        Method::GET,
        &format!("/api/v1/webhooks/{hook}/{log}"),
        None,
    )
    .await;
    reply.expect(200, None);
    reply
}

#[test]
fn a_ping_reaches_its_webhook_alone_signed_and_shows_in_the_pings_list() {
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let t = org().await;
        let (pinged, other) = (Receiver::start(vec![]).await, Receiver::start(vec![]).await);
        let (hook, secret) =
            register(&stack, &t, &format!("{}/hook", pinged.base), "hmac_sha256").await;
        let (_, others) =
            register(&stack, &t, &format!("{}/hook", other.base), "hmac_sha256").await;

        let reply = ping(&stack, &t, &hook).await;
        reply.expect(202, None);
        let data = &reply.body["data"];
        assert_eq!(data["webhook_id"], hook.as_str());
        assert_eq!(data["event"], "webhook.ping");
        let delivery = data["delivery_id"].as_str().unwrap().to_owned();
        let requested_at = data["requested_at"].as_str().unwrap().to_owned();
        stack.drain_until_received(&pinged, 1).await;
        stack.drain().await;

        // The one webhook, signed both ways, with the ping's payload.
        assert_eq!(other.count(), 0, "only the pinged webhook gets it");
        let got = &pinged.requests()[0];
        verify(got, &secret);
        // The Standard Webhooks library and docs/webhooks.md's receivers
        // check it after `cargo test`: its secret's, not another's.
        keep_rolled("hmac_sha256", &others, &secret, &[("after", got)]);
        assert_eq!(got.header("x-svc-event"), "webhook.ping");
        assert_eq!(got.header("x-svc-delivery-id"), delivery);
        assert_eq!(got.header("webhook-id"), delivery);
        let body = got.json();
        assert_eq!(body["id"], delivery.as_str());
        assert_eq!(body["event"], "webhook.ping");
        assert_eq!(body["subject"], json!({"type": "webhook", "id": hook}));
        assert_eq!(
            body["data"],
            json!({"webhookId": hook, "event": "surplus.delivered", "requestedAt": requested_at})
        );

        // Its attempt in the pings list; the deliveries list shows loads'.
        let pings = list(&stack, &t, &hook, "pings").await;
        let rows = pings.body["data"].as_array().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["delivery_id"], delivery.as_str());
        assert_eq!(rows[0]["event"], "webhook.ping");
        assert_eq!(
            (&rows[0]["attempt"], &rows[0]["succeeded"]),
            (&json!(1), &json!(true))
        );
        assert!(rows[0].get("surplus_id").is_none());
        let deliveries = list(&stack, &t, &hook, "deliveries").await;
        assert_eq!(deliveries.body["data"], json!([]));

        // No load, no report, no bill.
        let loads = send(&stack, &t, Method::GET, "/api/v1/surpluses", None).await;
        assert_eq!(loads.body["data"], json!([]));
        let today = chrono::Utc::now().date_naive();
        let summary = send(
            &stack,
            &t,
            Method::GET,
            &format!("/api/v1/reports/summary?from={today}&to={today}"),
            None,
        )
        .await;
        summary.expect(200, None);
        assert_eq!(summary.body["data"]["loads_count"], 0);

        // A ping is pinged again, not retried: its delivery is no load's.
        let retry = format!("/api/v1/webhooks/{hook}/deliveries/{delivery}/retry");
        send(&stack, &t, Method::POST, &retry, None)
            .await
            .expect(404, Some("delivery_not_found"));
    });
}

#[test]
fn a_failed_ping_is_tried_again_with_the_same_delivery_id() {
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![500]).await;
        let (hook, _) = register(
            &stack,
            &t,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        let reply = ping(&stack, &t, &hook).await;
        reply.expect(202, None);
        let delivery = reply.body["data"]["delivery_id"].as_str().unwrap();
        stack.drain_until_received(&receiver, 2).await;
        let posts = receiver.requests();
        assert_eq!(posts.len(), 2);
        assert!(
            posts
                .iter()
                .all(|p| p.header("webhook-id") == delivery && p.json()["id"] == delivery)
        );
        let pings = list(&stack, &t, &hook, "pings").await;
        let rows = pings.body["data"].as_array().unwrap();
        let attempts: Vec<_> = rows
            .iter()
            .map(|r| (r["attempt"].clone(), r["status_code"].clone()))
            .collect();
        assert_eq!(attempts, [(json!(2), json!(204)), (json!(1), json!(500))]);
    });
}

#[test]
fn a_ping_during_a_secret_roll_is_signed_with_both_secrets() {
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let t = org().await;
        for mode in ["hmac_sha256", "bearer_token"] {
            let receiver = Receiver::start(vec![]).await;
            let url = format!("{}/hook", receiver.base);
            let (hook, old) = register(&stack, &t, &url, mode).await;
            let rolled = send(
                &stack,
                &t,
                Method::POST,
                &format!("/api/v1/webhooks/{hook}/roll-secret"),
                Some(json!({})),
            )
            .await;
            rolled.expect(200, None);
            let new = rolled.body["data"]["secret"].as_str().unwrap().to_owned();
            api_tests::logs::remember(&new);
            ping(&stack, &t, &hook).await.expect(202, None);
            stack.drain_until_received(&receiver, 1).await;
            let got = &receiver.requests()[0];
            assert_eq!(got.header("x-svc-event"), "webhook.ping");
            assert!(got.signed_with(&old) && got.signed_with(&new), "{mode}");
            // The Standard Webhooks library checks it after `cargo test`.
            keep_rolled(mode, &old, &new, &[("during", got)]);
        }
    });
}

#[test]
fn another_organizations_webhook_is_neither_pinged_nor_its_pings_shown() {
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let (owner, other) = (org().await, org().await);
        let receiver = Receiver::start(vec![]).await;
        let (hook, _) = register(
            &stack,
            &owner,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        ping(&stack, &other, &hook)
            .await
            .expect(404, Some("webhook_not_found"));
        send(
            &stack,
            &other,
            Method::GET,
            &format!("/api/v1/webhooks/{hook}/pings"),
            None,
        )
        .await
        .expect(404, Some("webhook_not_found"));
        stack.drain().await;
        assert_eq!(receiver.count(), 0, "nothing was sent");
        // A webhook that is no one's, and one that is not an id.
        ping(&stack, &owner, &uuid::Uuid::now_v7().to_string())
            .await
            .expect(404, Some("webhook_not_found"));
        ping(&stack, &owner, "nope")
            .await
            .expect(400, Some("invalid_webhook_id"));
    });
}

#[test]
fn a_receiver_is_pinged_at_most_ten_times_a_clock_hour_by_one_organization() {
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        // Eleven pings in one clock hour, whatever the hour.
        api_tests::early_in_a_window(&stack.api.clock, Duration::from_secs(3600));
        let t = org().await;
        let receiver = Receiver::start(vec![]).await;
        let url = format!("{}/hook", receiver.base);
        let (hook, _) = register(&stack, &t, &url, "hmac_sha256").await;
        let (spare, _) = register(&stack, &t, &format!("{url}/2"), "hmac_sha256").await;
        for _ in 0..10 {
            ping(&stack, &t, &hook).await.expect(202, None);
        }
        let refused = ping(&stack, &t, &hook).await;
        refused.expect(429, Some("rate_limited"));
        let wait: u64 = refused.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=3600).contains(&wait), "{wait}");
        assert!(refused.body["message"].as_str().unwrap().contains("pinged"));
        stack.drain_until_received(&receiver, 10).await;
        // The quota is the receiver's, not the webhook's: the same URL
        // registered again, or with a query, gives no more.
        send(
            &stack,
            &t,
            Method::DELETE,
            &format!("/api/v1/webhooks/{hook}"),
            None,
        )
        .await
        .expect(200, None);
        let (again, _) = register(&stack, &t, &url, "hmac_sha256").await;
        let (queried, _) = register(&stack, &t, &format!("{url}?v=2"), "hmac_sha256").await;
        for hook in [&again, &queried] {
            ping(&stack, &t, hook)
                .await
                .expect(429, Some("rate_limited"));
        }
        // Another receiver has its own quota, and so has another
        // organization at the same receiver: none spends another's.
        ping(&stack, &t, &spare).await.expect(202, None);
        let other = org().await;
        let (theirs, _) = register(&stack, &other, &url, "hmac_sha256").await;
        ping(&stack, &other, &theirs).await.expect(202, None);
        stack.drain_until_received(&receiver, 12).await;
        stack.drain().await;
        assert_eq!(receiver.count(), 12, "the refused pings sent nothing");
        // The next clock hour admits it again.
        stack.api.clock.advance(Duration::from_secs(wait));
        ping(&stack, &t, &again).await.expect(202, None);
    });
}

#[test]
fn a_ping_with_an_idempotency_key_is_sent_once() {
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![]).await;
        let (hook, _) = register(
            &stack,
            &t,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        let path = format!("/api/v1/webhooks/{hook}/ping");
        let once = || {
            call(Method::POST, &path)
                .key(&t.key)
                .header("idempotency-key", "ping-once")
        };
        let first = once().send_to(&stack.router).await;
        first.expect(202, None);
        let again = once().send_to(&stack.router).await;
        again.expect(202, None);
        assert_eq!(again.headers["idempotent-replayed"], "true");
        assert_eq!(again.body, first.body);
        stack.drain_until_received(&receiver, 1).await;
        stack.drain().await;
        assert_eq!(receiver.count(), 1);
        let pings = list(&stack, &t, &hook, "pings").await;
        assert_eq!(pings.body["meta"]["count"], 1);
    });
}

#[test]
fn an_operator_pings_a_webhook_audited() {
    use admin::webhooks::{Webhooks, run as operate};
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![]).await;
        let (hook, secret) = register(
            &stack,
            &t,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        let webhook: uuid::Uuid = hook.parse().unwrap();
        let command = Webhooks::Ping {
            org: t.id(),
            webhook,
        };
        let action = command.action().expect("a ping is audited");
        assert_eq!(action.command, "webhooks ping");
        assert_eq!(action.target, json!({"webhook_id": webhook}));
        let done = operate(&stack.api, command).await.unwrap();
        let delivery = done.lines[0]["ping"]["delivery_id"].clone();
        stack.drain_until_received(&receiver, 1).await;
        let got = &receiver.requests()[0];
        verify(got, &secret);
        assert_eq!(json!(got.header("webhook-id")), delivery);
        let listed = operate(
            &stack.api,
            Webhooks::Deliveries {
                org: t.id(),
                webhook,
                limit: 10,
                pings: true,
            },
        )
        .await
        .unwrap();
        assert_eq!(listed.lines[0]["attempt"]["delivery_id"], delivery);
        // Another organization's webhook is not found for it either.
        let other = org().await;
        let refused = operate(
            &stack.api,
            Webhooks::Ping {
                org: other.id(),
                webhook,
            },
        )
        .await;
        assert!(refused.is_err());
    });
}
