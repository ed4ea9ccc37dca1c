//! Webhook delivery end to end: a delivered load reaches a loopback
//! receiver signed both ways with the contract's payload; a 500 is retried
//! with the same delivery id; attempts are listed; an integrator's retry;
//! attempts running out end in the DLQ; a lost send to the queue is
//! recovered by the sweeper; racing deliveries and announcements make one
//! POST; non-public addresses are refused at connect time; no secret is
//! ever logged.

use std::time::Duration;

use api_tests::webhooks::{ADMIN_URL, Receiver, Stack, logs, quick_policy};
use api_tests::{Reply, TestOrg, call, harness, org, person, run};
use base64::Engine;
use hmac::{Hmac, Mac};
use http::Method;
use serde_json::{Value, json};
use sha2::Sha256;
use shared::model::delivery::AttemptError;
use shared::model::member::Role;
use uuid::Uuid;
use webhook_dispatcher::client::{Reach, Sender};

use crate::sites::new_site;
use crate::surpluses::{give_waybill, new_load, public_point};
use crate::trucks::{new_truck, plate};

pub(crate) async fn send(
    stack: &Stack,
    t: &TestOrg,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Reply {
    let mut c = call(method, path).key(&t.key);
    if let Some(body) = body {
        c = c.json(&body);
    }
    c.send_to(&stack.router).await
}

/// Registers `url`; returns the webhook id and its secret.
pub(crate) async fn register(
    stack: &Stack,
    t: &TestOrg,
    url: &str,
    mode: &str,
) -> (String, String) {
    let reply = send(
        stack,
        t,
        Method::POST,
        "/api/v1/webhooks",
        Some(json!({"event": "surplus.delivered", "url": url, "verification_mode": mode})),
    )
    .await;
    reply.expect(201, None);
    let data = &reply.body["data"];
    (
        data["id"].as_str().unwrap().to_owned(),
        data["secret"].as_str().unwrap().to_owned(),
    )
}

/// A load with a waybill, moved to `delivered` through `stack`'s API.
pub(crate) async fn deliver_load(stack: &Stack, t: &TestOrg, load: &str) {
    give_waybill(t, load).await;
    send(
        stack,
        t,
        Method::PATCH,
        &format!("/api/v1/surpluses/{load}"),
        Some(json!({"status": "delivered"})),
    )
    .await
    .expect(200, None);
}

/// Given a webhook of `t` at `receiver` and a load of `t` delivered through
/// `stack`: the webhook id and the load id.
pub(crate) async fn webhook_and_delivered_load(
    stack: &Stack,
    t: &TestOrg,
    receiver: &Receiver,
) -> (String, String) {
    let url = format!("{}/hook", receiver.base);
    let (hook, _) = register(stack, t, &url, "hmac_sha256").await;
    let site = new_site(t, json!({"name": "Origin"})).await;
    let load = new_load(t, &site).await;
    deliver_load(stack, t, &load).await;
    (hook, load)
}

async fn attempts(stack: &Stack, t: &TestOrg, hook: &str) -> Reply {
    send(
        stack,
        t,
        Method::GET,
        &format!("/api/v1/webhooks/{hook}/deliveries"),
        None,
    )
    .await
}

fn hmac(key: &[u8], data: &[&[u8]]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    for part in data {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

/// Verifies both signatures as a receiver would.
pub(crate) fn verify(request: &api_tests::webhooks::Received, secret: &str) {
    let body = &request.body;
    let expected = format!("sha256={}", hex::encode(hmac(secret.as_bytes(), &[body])));
    assert_eq!(request.header("x-svc-signature"), expected);
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = b64.decode(secret.strip_prefix("whsec_").unwrap()).unwrap();
    let id = request.header("webhook-id");
    let timestamp = request.header("webhook-timestamp");
    let standard = b64.encode(hmac(
        &key,
        &[id.as_bytes(), b".", timestamp.as_bytes(), b".", body],
    ));
    assert_eq!(
        request.header("webhook-signature"),
        format!("v1,{standard}")
    );
    let sent: i64 = timestamp.parse().unwrap();
    assert!(
        (chrono::Utc::now().timestamp() - sent).abs() < 300,
        "fresh timestamp"
    );
}

/// A field of each dispatcher's line for a queue message whose body names
/// `id` (its value as written, quotes off; empty when the line has none).
fn field_of_messages_naming(id: &str, name: &str) -> Vec<String> {
    api_tests::metrics::lines()
        .into_iter()
        .filter(|line| {
            line["message"] == "queue message handled"
                && line["body"].as_str().is_some_and(|body| body.contains(id))
        })
        .map(|line| match &line[name] {
            serde_json::Value::Null => String::new(),
            serde_json::Value::String(text) => text.clone(),
            value => value.to_string(),
        })
        .collect()
}

/// DynamoDB calls of each queue message whose body names `id`, from the
/// dispatcher's log lines.
fn calls_of_messages_naming(id: &str) -> Vec<u32> {
    let calls = field_of_messages_naming(id, "ddb_calls");
    calls
        .iter()
        .map(|n| n.parse().expect("ddb_calls logged"))
        .collect()
}

/// The contract's `data` fields of surplus.delivered, exactly.
const DATA_FIELDS: [&str; 39] = [
    "surplusId",
    "orgId",
    "orgName",
    "fromSiteId",
    "fromSiteName",
    "fromSiteAddress",
    "fromSiteCoordinates",
    "toReceivingPointId",
    "toReceivingPointName",
    "toLabel",
    "truckId",
    "truckLabel",
    "truckLicense",
    "truckCountry",
    "truckCapacity_m3",
    "truckOrgId",
    "truckOrgName",
    "driverId",
    "driverLabel",
    "createdById",
    "createdByLabel",
    "originContactLabel",
    "receivingContactLabel",
    "volume_m3",
    "status",
    "previousStatus",
    "additive",
    "additiveBilledTo",
    "materialGrade",
    "manufacturer",
    "description",
    "createdAt",
    "updatedAt",
    "deliveredAt",
    "deliveredById",
    "deliveredByLabel",
    "waybill",
    "fieldCapture",
    "adminUrl",
];

#[test]
fn a_delivered_load_reaches_the_receiver_signed_complete_and_retried() {
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let t = org().await;
        let signed = Receiver::start(vec![500]).await;
        let bearer = Receiver::start(vec![]).await;
        let (hmac_hook, hmac_secret) =
            register(&stack, &t, &format!("{}/hook", signed.base), "hmac_sha256").await;
        let (_, token) =
            register(&stack, &t, &format!("{}/hook", bearer.base), "bearer_token").await;

        let site = new_site(&t, json!({"name": "Origin", "street_address": "Testikatu 1", "postal_code": "00100",
            "city": "Helsinki", "lat": 60.17, "lng": 24.94, "contact_first_name": "Aino", "contact_last_name": "Virtanen"})).await;
        let point = public_point(&t, false).await;
        let driver = person(t.id(), Role::Driver).await;
        let license = plate();
        let truck = new_truck(&t, json!({"license": license, "driverId": driver.profile_id, "capacity": 8.5, "name": "Mixer 7"})).await;
        let created = send(&stack, &t, Method::POST, "/api/v1/surpluses", Some(json!({
            "site_id": site, "volume_m3": 6.5, "to_receiving_point_id": point, "truck_id": truck,
            "additive": true, "material_grade": "C30/37", "manufacturer": "Acme", "description": "Left over"}))).await;
        created.expect(201, None);
        let load = created.body["data"]["id"].as_str().unwrap().to_owned();
        send(
            &stack,
            &t,
            Method::PATCH,
            &format!("/api/v1/surpluses/{load}"),
            Some(json!({"status": "in_progress"})),
        )
        .await
        .expect(200, None);
        deliver_load(&stack, &t, &load).await;

        // When the dispatcher runs: the signed hook answers 500, then 204.
        stack
            .drain_until(Duration::from_secs(30), || {
                signed.count() >= 2 && bearer.count() >= 1
            })
            .await;
        stack.drain().await;

        // Then: two POSTs to the signed hook with one delivery id, one to the bearer hook.
        let posts = signed.requests();
        assert_eq!(posts.len(), 2, "one failed attempt, one retry");
        let first = &posts[0];
        assert_eq!(first.path, "/hook");
        assert_eq!(first.header("content-type"), "application/json");
        assert_eq!(first.header("x-svc-event"), "surplus.delivered");
        let body = first.json();
        let delivery_id = body["id"].as_str().unwrap().to_owned();
        assert_eq!(first.header("x-svc-delivery-id"), delivery_id);
        assert_eq!(first.header("webhook-id"), delivery_id);
        assert_eq!(
            posts[1].header("x-svc-delivery-id"),
            delivery_id,
            "the same id on the retry"
        );
        assert_eq!(posts[1].json()["id"], delivery_id);
        assert!(first.headers.get("x-svc-delivery-token").is_none());
        for post in &posts {
            verify(post, &hmac_secret);
        }
        let bearer_posts = bearer.requests();
        assert_eq!(bearer_posts.len(), 1);
        assert_eq!(bearer_posts[0].header("x-svc-delivery-token"), token);
        assert!(bearer_posts[0].headers.get("x-svc-signature").is_none());
        assert_ne!(
            bearer_posts[0].header("x-svc-delivery-id"),
            delivery_id,
            "one id per webhook"
        );

        // The envelope and data, field by field against the load.
        assert_eq!(body["event"], "surplus.delivered");
        assert_eq!(body["subject"], json!({"type": "surplus", "id": load}));
        assert!(body["timestamp"].as_str().unwrap().ends_with('Z'));
        let d = &body["data"];
        let mut fields: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        fields.sort_unstable();
        let mut expected: Vec<&str> = DATA_FIELDS.to_vec();
        expected.sort_unstable();
        assert_eq!(fields, expected, "exactly the contract's fields");
        let stored = harness()
            .await
            .store()
            .surpluses()
            .require(t.id(), load.parse().unwrap())
            .await
            .unwrap();
        assert_eq!(d["surplusId"], load);
        assert_eq!(d["orgId"], t.id().to_string());
        assert_eq!(d["orgName"], t.org.name);
        assert_eq!(d["fromSiteId"], site);
        assert_eq!(d["fromSiteName"], "Origin");
        assert_eq!(
            d["fromSiteAddress"],
            json!({"street": "Testikatu 1", "postalCode": "00100", "city": "Helsinki", "countryCode": null})
        );
        assert_eq!(
            d["fromSiteCoordinates"],
            json!({"lat": 60.17, "lng": 24.94})
        );
        assert_eq!(d["toReceivingPointId"], point);
        assert_eq!(d["toReceivingPointName"], "Pit");
        assert_eq!(d["toLabel"], "Pit");
        assert_eq!(d["truckId"], truck);
        assert_eq!(d["truckLabel"], "Mixer 7");
        assert_eq!(d["truckLicense"], license.as_str());
        assert_eq!(d["truckCountry"], "fi");
        assert_eq!(d["truckCapacity_m3"], 8.5);
        assert_eq!(d["truckOrgId"], t.id().to_string());
        assert_eq!(d["truckOrgName"], t.org.name);
        assert_eq!(d["driverId"], driver.profile_id.to_string());
        assert_eq!(
            d["driverLabel"],
            format!("Test {}", driver.last_name.clone().unwrap())
        );
        assert_eq!(d["originContactLabel"], "Aino Virtanen");
        assert_eq!(d["volume_m3"], 6.5);
        assert_eq!(d["status"], "delivered");
        assert_eq!(d["previousStatus"], "in_progress", "from the log");
        assert_eq!(d["additive"], true);
        assert_eq!(d["additiveBilledTo"], "origin_site");
        assert_eq!(
            (
                d["materialGrade"].as_str(),
                d["manufacturer"].as_str(),
                d["description"].as_str()
            ),
            (Some("C30/37"), Some("Acme"), Some("Left over"))
        );
        assert_eq!(d["createdAt"], stored.created_at.to_string());
        assert_eq!(d["updatedAt"], stored.updated_at.to_string());
        assert_eq!(d["deliveredAt"], stored.delivered_at.unwrap().to_string());
        for unknown in [
            "createdById",
            "createdByLabel",
            "deliveredById",
            "deliveredByLabel",
            "receivingContactLabel",
            "fieldCapture",
        ] {
            assert_eq!(d[unknown], Value::Null, "{unknown}");
        }
        let waybill = &d["waybill"];
        assert_eq!(
            waybill["storagePath"],
            stored.waybill.as_ref().unwrap().storage_path
        );
        assert!(waybill["url"].as_str().unwrap().contains("X-Amz-Signature"));
        let expires =
            chrono::DateTime::parse_from_rfc3339(waybill["urlExpiresAt"].as_str().unwrap())
                .unwrap();
        let hours =
            (expires.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_minutes() as f64 / 60.0;
        assert!((23.0..=24.1).contains(&hours), "valid about 24 h: {hours}");
        assert_eq!(d["adminUrl"], ADMIN_URL.replace("{surplusId}", &load));

        // The attempts, newest first, with the same delivery id.
        let listed = attempts(&stack, &t, &hmac_hook).await;
        listed.expect(200, None);
        let rows = listed.body["data"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0]["attempt"].as_u64(),
                rows[0]["succeeded"].as_bool(),
                rows[0]["status_code"].as_u64()
            ),
            (Some(2), Some(true), Some(204))
        );
        assert_eq!(
            (
                rows[1]["attempt"].as_u64(),
                rows[1]["succeeded"].as_bool(),
                rows[1]["status_code"].as_u64()
            ),
            (Some(1), Some(false), Some(500))
        );
        for row in rows {
            assert_eq!(row["delivery_id"], delivery_id);
            assert_eq!(row["surplus_id"], load);
            assert_eq!(row["manual"], false);
            assert_eq!(row["error"], Value::Null);
        }
        assert!(!listed.text.contains(&hmac_secret));

        // Each attempt: claim; its batch's place in the organization's
        // share; the webhook and the load at once; the names in parallel;
        // its receiver's health; the attempt and the delivery in one
        // transaction; then the health's change (a failure's streak, or
        // the 2xx after it that ends the streak); the place given back.
        let calls = calls_of_messages_naming(&delivery_id);
        assert_eq!(calls.len(), 2, "two messages handled");
        assert!(
            calls.iter().all(|&n| n <= 14),
            "calls per attempt: {calls:?}"
        );
        // What each cost, as `make cost` reads it: its time (within a
        // second here), part of it waiting on its sequential DynamoDB
        // calls; the attempt's transaction's write units; no call to
        // another AWS service but, for the failed one, the message's
        // return to the queue after its wait.
        let numbers = |name: &str| -> Vec<f64> {
            let values = field_of_messages_naming(&delivery_id, name);
            values.iter().map(|v| v.parse().expect(name)).collect()
        };
        let (latency, waited) = (numbers("latency_ms"), numbers("ddb_ms"));
        for (latency, waited) in latency.iter().zip(&waited) {
            assert!(
                (1.0..1000.0).contains(waited) && (*waited..1000.0).contains(latency),
                "latency {latency} ms, of it waiting on DynamoDB {waited} ms"
            );
        }
        assert!(numbers("write_units").iter().all(|&w| w >= 2.0));
        let others = field_of_messages_naming(&delivery_id, "aws_calls");
        assert_eq!(others, ["SQS:ChangeMessageVisibility=1", ""]);
        // Both were handled (a retry's wait is no failure): no
        // `MessagesFailed` on either line, where a 0 would be ingested.
        assert_eq!(
            field_of_messages_naming(&delivery_id, "MessagesFailed"),
            ["", ""]
        );
        assert_eq!(
            field_of_messages_naming(&delivery_id, "QueueMessages"),
            ["1", "1"]
        );

        // No secret in any log or metric line of the run so far (and both
        // are live).
        let log = logs();
        let lines: String = api_tests::metrics::lines()
            .iter()
            .map(|line| format!("{line}\n"))
            .collect();
        assert!(lines.contains("queue message handled") && log.contains("announced"));
        for secret in [&hmac_secret[..], &token[..], &hmac_secret[6..], &token[6..]] {
            assert!(
                !log.contains(secret) && !lines.contains(secret),
                "a secret was logged"
            );
        }
    });
}

#[test]
fn racing_deliveries_and_repeated_announcements_make_one_post() {
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![]).await;
        register(
            &stack,
            &t,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let load = new_load(&t, &site).await;
        give_waybill(&t, &load).await;

        // Five racing moves to delivered, then the announcement again.
        let path = format!("/api/v1/surpluses/{load}");
        let replies = futures::future::join_all((0..5).map(|_| {
            send(
                &stack,
                &t,
                Method::PATCH,
                &path,
                Some(json!({"status": "delivered"})),
            )
        }))
        .await;
        assert!(replies.iter().any(|r| r.status == 200));
        let outbox = stack
            .state
            .store
            .outbox()
            .undispatched(2, chrono::TimeDelta::zero())
            .await
            .unwrap();
        let ours: Vec<_> = outbox
            .iter()
            .filter(|o| o.surplus_id.map(|id| id.to_string()) == Some(load.clone()))
            .collect();
        assert_eq!(ours.len(), 1, "one transition, one outbox record");
        let again = shared::queue::QueueMessage::Announce {
            outbox_id: ours[0].id,
        };
        let org = ours[0].org_id;
        stack.state.queue.send(org, &again).await.unwrap();
        stack.state.queue.send(org, &again).await.unwrap();

        stack.drain().await;

        assert_eq!(receiver.count(), 1, "exactly one POST per load and webhook");
        // A fan-out: the record, the webhooks, a delivery per webhook (and a
        // read of it when it exists), the record out of the sweeper's index.
        let calls = calls_of_messages_naming(&ours[0].id.to_string());
        assert_eq!(calls.len(), 3, "announced three times");
        assert!(
            calls.iter().all(|&n| n <= 5),
            "calls per announcement: {calls:?}"
        );
    });
}

#[test]
fn an_integrator_retries_a_delivery_with_the_same_id() {
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![]).await;
        let (hook, load) = webhook_and_delivered_load(&stack, &t, &receiver).await;
        stack.drain_until_received(&receiver, 1).await;
        let delivery = receiver.first_delivery();

        let retry = format!("/api/v1/webhooks/{hook}/deliveries/{delivery}/retry");
        let reply = send(&stack, &t, Method::POST, &retry, None).await;
        reply.expect(202, None);
        let data = &reply.body["data"];
        assert_eq!(data["id"], delivery);
        assert_eq!(data["webhook_id"], hook);
        assert_eq!(data["surplus_id"], load);
        assert_eq!(data["status"], "succeeded");
        assert_eq!(data["attempts"], 1);
        stack.drain_until_received(&receiver, 2).await;

        let posts = receiver.requests();
        assert_eq!(posts.len(), 2);
        assert_eq!(posts[1].header("x-svc-delivery-id"), delivery);
        let listed = attempts(&stack, &t, &hook).await;
        assert_eq!(listed.body["data"][0]["manual"], true);
        assert_eq!(listed.body["data"][0]["attempt"], 2);

        // Unknown deliveries and malformed ids.
        let missing = format!(
            "/api/v1/webhooks/{hook}/deliveries/{}/retry",
            uuid::Uuid::now_v7()
        );
        send(&stack, &t, Method::POST, &missing, None)
            .await
            .expect(404, Some("delivery_not_found"));
        let malformed = format!("/api/v1/webhooks/{hook}/deliveries/nope/retry");
        send(&stack, &t, Method::POST, &malformed, None)
            .await
            .expect(400, Some("invalid_delivery_id"));
    });
}

#[test]
fn deliveries_are_paged_newest_first() {
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
        let site = new_site(&t, json!({"name": "Origin"})).await;
        for _ in 0..3 {
            let load = new_load(&t, &site).await;
            deliver_load(&stack, &t, &load).await;
        }
        stack.drain_until_received(&receiver, 3).await;

        let first = send(
            &stack,
            &t,
            Method::GET,
            &format!("/api/v1/webhooks/{hook}/deliveries?limit=2"),
            None,
        )
        .await;
        first.expect(200, None);
        assert_eq!(first.body["meta"]["count"], 2);
        let cursor = first.body["meta"]["next_cursor"]
            .as_str()
            .unwrap()
            .to_owned();
        let second = send(
            &stack,
            &t,
            Method::GET,
            &format!("/api/v1/webhooks/{hook}/deliveries?limit=2&cursor={cursor}"),
            None,
        )
        .await;
        second.expect(200, None);
        assert_eq!(second.body["meta"]["count"], 1);
        assert_eq!(second.body["meta"]["next_cursor"], Value::Null);
        let times: Vec<String> = [&first, &second]
            .iter()
            .flat_map(|r| {
                r.body["data"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a["attempted_at"].as_str().unwrap().to_owned())
            })
            .collect();
        let mut sorted = times.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(times, sorted, "newest first");

        send(
            &stack,
            &t,
            Method::GET,
            &format!("/api/v1/webhooks/{hook}/deliveries?limit=0"),
            None,
        )
        .await
        .expect(422, Some("validation_error"));
        send(
            &stack,
            &t,
            Method::GET,
            &format!("/api/v1/webhooks/{hook}/deliveries?cursor=forged"),
            None,
        )
        .await
        .expect(422, Some("invalid_cursor"));
    });
}

#[test]
fn another_organizations_deliveries_are_404() {
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let (owner, other) = (org().await, org().await);
        let receiver = Receiver::start(vec![]).await;
        let (hook, _) = webhook_and_delivered_load(&stack, &owner, &receiver).await;
        stack.drain_until_received(&receiver, 1).await;
        let delivery = receiver.first_delivery();

        attempts(&stack, &other, &hook)
            .await
            .expect(404, Some("webhook_not_found"));
        let retry = format!("/api/v1/webhooks/{hook}/deliveries/{delivery}/retry");
        send(&stack, &other, Method::POST, &retry, None)
            .await
            .expect(404, Some("webhook_not_found"));
        stack.drain().await;
        assert_eq!(
            receiver.count(),
            1,
            "nothing sent for the other organization"
        );
        // The other organization's load never reaches the owner's webhook.
        let their_site = new_site(&other, json!({"name": "Theirs"})).await;
        let theirs = new_load(&other, &their_site).await;
        deliver_load(&stack, &other, &theirs).await;
        stack.drain().await;
        assert_eq!(receiver.count(), 1);
    });
}

#[test]
fn attempts_running_out_fail_the_delivery_into_the_dead_letter_queue() {
    run(async {
        let stack = Stack::new(quick_policy(2), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![500, 302, 500]).await;
        let (hook, _) = webhook_and_delivered_load(&stack, &t, &receiver).await;

        stack.drain_until_received(&receiver, 2).await;
        stack.drain().await;

        assert_eq!(receiver.count(), 2, "two attempts, no more");
        let delivery: uuid::Uuid = receiver.requests()[0].json()["id"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let stored = stack
            .state
            .store
            .deliveries()
            .get(delivery)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            stored.status,
            shared::model::delivery::DeliveryStatus::Failed
        );
        assert_eq!(stored.attempts, 2);
        let dead = stack.dead_letters().await;
        assert_eq!(dead.len(), 1);
        assert!(dead[0].contains(&delivery.to_string()));
        let listed = attempts(&stack, &t, &hook).await;
        let codes: Vec<u64> = listed.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["status_code"].as_u64().unwrap())
            .collect();
        assert_eq!(
            codes,
            [302, 500],
            "a redirect is a failure and is not followed"
        );
    });
}

#[test]
fn a_lost_send_to_the_queue_is_recovered_by_the_sweeper() {
    run(async {
        // Given an API whose queue is unreachable at commit time.
        let stack = Stack::new(quick_policy(8), true, |config| {
            config.webhooks.queue_url =
                Some("http://127.0.0.1:5005/000000000000/no-such-queue".into());
        })
        .await;
        let store = &stack.state.store;
        let t = stack.org().await;
        let receiver = Receiver::start(vec![]).await;
        register(
            &stack,
            &t,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        let site = send(
            &stack,
            &t,
            Method::POST,
            "/api/v1/sites",
            Some(json!({"name": "Origin"})),
        )
        .await;
        let site = site.body["data"]["id"].as_str().unwrap().to_owned();
        let load = send(
            &stack,
            &t,
            Method::POST,
            "/api/v1/surpluses",
            Some(json!({"site_id": site, "volume_m3": 3})),
        )
        .await;
        let load = load.body["data"]["id"].as_str().unwrap().to_owned();
        let path = format!("waybills/{}/{load}/w.png", t.id());
        api_tests::store_waybill(store, t.id(), load.parse().unwrap(), &path)
            .await
            .unwrap();

        // When the load is delivered: the change commits although the send fails.
        send(
            &stack,
            &t,
            Method::PATCH,
            &format!("/api/v1/surpluses/{load}"),
            Some(json!({"status": "delivered"})),
        )
        .await
        .expect(200, None);
        stack.drain().await;
        assert_eq!(receiver.count(), 0, "nothing queued by the fast path");

        // Then the sweeper finds the outbox record and the POST arrives.
        assert_eq!(stack.dispatcher.sweep().await.unwrap(), 1);
        stack.drain_until_received(&receiver, 1).await;
        assert_eq!(receiver.count(), 1);
        assert_eq!(receiver.requests()[0].json()["subject"]["id"], load);
        // Dispatched records leave the sweeper's index.
        stack.drain().await;
        assert_eq!(stack.dispatcher.sweep().await.unwrap(), 0);
    });
}

/// A sender as the dispatcher has it, without the development setting.
fn strict_sender() -> Sender {
    Sender::new(
        &quick_policy(1),
        Reach {
            allow_loopback: false,
        },
    )
}

#[test]
fn non_public_addresses_are_refused_at_connect_time() {
    run(async {
        let receiver = Receiver::start(vec![]).await;
        let sender = strict_sender();
        for host in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "[::1]",
            "[::]",
            "[fe80::1]",
            "[fc00::1]",
            "[fd00:ec2::254]",
            "[ff02::1]",
            "[::ffff:127.0.0.1]",
            "[::ffff:10.0.0.1]",
            "[::ffff:169.254.169.254]",
        ] {
            let outcome = sender
                .post(
                    &format!("https://{host}:{}/hook", receiver.port),
                    http::HeaderMap::new(),
                    b"{}".to_vec(),
                )
                .await;
            assert_eq!(outcome.error, Some(AttemptError::AddressRefused), "{host}");
            assert_eq!(outcome.status, None);
        }
        // A name is judged by what it resolves to: localhost is 127.0.0.1.
        let by_name = sender
            .post(
                &format!("https://localhost:{}/hook", receiver.port),
                http::HeaderMap::new(),
                b"{}".to_vec(),
            )
            .await;
        assert_eq!(by_name.error, Some(AttemptError::AddressRefused));
        assert_eq!(receiver.count(), 0, "no connection was made");

        // The development setting admits loopback (so the refusals above
        // are the resolver's doing), over plain HTTP.
        let dev = Sender::new(
            &quick_policy(1),
            Reach {
                allow_loopback: true,
            },
        );
        let local = dev
            .post(
                &format!("http://localhost:{}/hook", receiver.port),
                http::HeaderMap::new(),
                b"{}".to_vec(),
            )
            .await;
        assert_eq!((local.status, local.error), (Some(204), None));
        // Without it, plain HTTP is refused before any connection.
        let plain = strict_sender()
            .post(
                "http://93.184.215.14/hook",
                http::HeaderMap::new(),
                b"{}".to_vec(),
            )
            .await;
        assert!(plain.status.is_none() && plain.error.is_some());
    });
}

#[test]
fn a_name_resolving_to_loopback_is_refused_by_the_dispatcher() {
    run(async {
        // Given a webhook stored with a host name that resolves to 127.0.0.1
        // (registration refuses it; the record is written directly) and a
        // dispatcher without the development setting.
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        let strict = webhook_dispatcher::Dispatcher::new(
            {
                let mut state = stack.state.clone();
                let mut config = (*state.config).clone();
                config.webhooks.allow_loopback = false;
                state.config = std::sync::Arc::new(config);
                state
            },
            quick_policy(1),
        );
        let t = org().await;
        let receiver = Receiver::start(vec![]).await;
        let id = uuid::Uuid::now_v7();
        let record = shared::model::webhook::WebhookRecord {
            id,
            org_id: t.id(),
            event: "surplus.delivered".into(),
            url: format!("https://localhost:{}/hook", receiver.port),
            verification_mode: shared::model::webhook::VerificationMode::HmacSha256,
            sealed_secret: stack
                .state
                .sealer
                .seal(id.as_bytes(), "whsec_x")
                .await
                .unwrap(),
            previous_sealed_secret: None,
            previous_secret_until: None,
            created_at: shared::model::now(),
        };
        stack.state.store.webhooks().create(&record).await.unwrap();
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let load = new_load(&t, &site).await;
        deliver_load(&stack, &t, &load).await;

        // When the strict dispatcher takes the queue, until the attempt
        // is recorded (at most 20 s: a bound, not a pace).
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let mut listed = attempts(&stack, &t, &id.to_string()).await;
        while listed.body["data"][0].is_null() && std::time::Instant::now() < deadline {
            local::poller::poll_once(&strict, &stack.state.queue)
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            listed = attempts(&stack, &t, &id.to_string()).await;
        }

        // Then the attempt is recorded as refused and nothing connected.
        assert_eq!(receiver.count(), 0);
        assert_eq!(
            listed.body["data"][0]["error"], "address_refused",
            "{}",
            listed.text
        );
        assert_eq!(listed.body["data"][0]["status_code"], Value::Null);
    });
}

#[test]
fn a_claim_tells_an_attempt_in_flight_from_a_delivery_owned_elsewhere() {
    use shared::store::records::deliveries::Claim;
    run(async {
        let deliveries = harness().await.store().deliveries();
        let ids = || uuid::Uuid::now_v7();
        let record = shared::model::delivery::DeliveryRecord::new(
            ids(),
            ids(),
            ids(),
            Some(ids()),
            "surplus.delivered",
        );
        assert!(deliveries.create(&record).await.unwrap());
        assert!(!deliveries.create(&record).await.unwrap(), "created once");
        let lease = Duration::from_secs(30);
        let claim = |owner: Option<&'static str>| deliveries.claim(record.id, owner, None, lease);

        assert!(matches!(
            claim(Some("m1")).await.unwrap(),
            Claim::Claimed(..)
        ));
        // While m1's attempt holds the lease: a manual retry and m1 itself wait.
        assert!(matches!(claim(None).await.unwrap(), Claim::Busy));
        assert!(matches!(claim(Some("m1")).await.unwrap(), Claim::Busy));
        // A second announcement's message is dropped: m1 owns the schedule.
        assert!(matches!(claim(Some("m2")).await.unwrap(), Claim::Done));
        // An unknown delivery is nothing to do.
        let unknown = deliveries.claim(ids(), None, None, lease).await.unwrap();
        assert!(matches!(unknown, Claim::Done));
    });
}

#[test]
fn every_queue_message_is_grouped_by_its_organization() {
    run(async {
        // SQS fair queues: the group is the tenant, so one organization's
        // backlog does not hold the others' messages.
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![]).await;
        webhook_and_delivered_load(&stack, &t, &receiver).await;
        let group = |message: &aws_sdk_sqs::types::Message| {
            message
                .attributes()
                .and_then(|a| {
                    a.get(&aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId)
                })
                .cloned()
                .unwrap_or_default()
        };
        // The announcement of the delivery.
        let announced = stack.state.queue.receive(10).await.unwrap();
        assert_eq!(announced.len(), 1);
        assert_eq!(group(&announced[0]), t.id().to_string());
        let body: shared::queue::QueueMessage =
            serde_json::from_str(announced[0].body().unwrap()).unwrap();
        let shared::queue::QueueMessage::Announce { outbox_id } = body else {
            panic!("an announcement: {body:?}");
        };
        // Its fan-out: one delivery per webhook.
        assert_eq!(stack.dispatcher.announce(outbox_id).await.unwrap(), 1);
        let delivering = stack.state.queue.receive(10).await.unwrap();
        assert_eq!(delivering.len(), 1);
        assert_eq!(group(&delivering[0]), t.id().to_string());
    });
}

/// An integrator's retry request's message that comes again (a retry of
/// the request, SQS's redelivery) makes no second attempt, however many
/// other retries of the delivery came between: each request's mark is an
/// item of its own, not one of the last few in a list.
#[test]
fn a_retry_requests_message_that_comes_again_after_many_others_makes_no_second_attempt() {
    run(async {
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        let t = stack.org().await;
        let receiver = Receiver::start(vec![]).await;
        let (hook, _) = webhook_and_delivered_load(&stack, &t, &receiver).await;
        stack.drain_until_received(&receiver, 1).await;
        let listed = attempts(&stack, &t, &hook).await;
        let delivery = listed.body["data"][0]["delivery_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let retry = |n: usize| {
            call(
                Method::POST,
                &format!("/api/v1/webhooks/{hook}/deliveries/{delivery}/retry"),
            )
            .key(&t.key)
            .header("idempotency-key", &format!("retry-{n}"))
            .send_to(&stack.router)
        };
        // The first retry request, then 21 others, each made once.
        for n in 0..22 {
            retry(n).await.expect(202, None);
            stack
                .drain_until(Duration::from_secs(20), || receiver.count() > n + 1)
                .await;
        }
        assert_eq!(receiver.count(), 23);
        // The first request's message, queued again.
        let key_id = api_tests::key_id(&t).await;
        let item = stack
            .api
            .store
            .idempotency()
            .get(key_id, "retry-0")
            .await
            .unwrap()
            .unwrap();
        let request: Uuid = item["rid"].as_s().unwrap().parse().unwrap();
        let again = shared::queue::QueueMessage::Deliver {
            delivery_id: delivery.parse().unwrap(),
            manual: true,
            request: Some(request),
        };
        stack.state.queue.send(t.id(), &again).await.unwrap();
        stack.drain().await;
        assert_eq!(
            receiver.count(),
            23,
            "no second attempt of the first request"
        );
        // And the request itself, sent again: its kept answer.
        let replayed = retry(0).await;
        replayed.expect(202, None);
        assert_eq!(replayed.header("idempotent-replayed"), "true");
        stack.drain().await;
        assert_eq!(receiver.count(), 23);
    });
}
