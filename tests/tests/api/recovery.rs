//! Recovery after a receiver's outage (`POST .../recover`): every delivery
//! whose last attempt failed since a time gets one more attempt with its
//! own id, once, however often recovery is asked for, and no more than
//! once an hour; the succeeded ones are not sent again, not even by a
//! recovery queued before they succeeded; `since` reads no further back
//! than the log keeps; another organization's webhook is 404; the work of
//! one request is bounded and resumable; a receiver is recovered at most
//! 10 times an hour by one organization; an operator recovers too,
//! audited, and a run that cannot queue holds nothing back.

use api_tests::webhooks::{Receiver, Stack, quick_policy};
use api_tests::{TestOrg, harness, org, run};
use http::Method;
use serde_json::{Value, json};

use crate::deliveries::{register, send};
use crate::sites::new_site;
use crate::surpluses::{give_waybill, new_load};

async fn recover(stack: &Stack, t: &TestOrg, hook: &str, body: Value) -> api_tests::Reply {
    send(
        stack,
        t,
        Method::POST,
        &format!("/api/v1/webhooks/{hook}/recover"),
        Some(body),
    )
    .await
}

/// A load of `t` delivered through `stack` and dispatched (its one
/// scheduled attempt made).
async fn delivered(stack: &Stack, t: &TestOrg, site: &str, receiver: &Receiver, count: usize) {
    let load = new_load(t, site).await;
    give_waybill(t, &load).await;
    send(
        stack,
        t,
        Method::PATCH,
        &format!("/api/v1/surpluses/{load}"),
        Some(json!({"status": "delivered"})),
    )
    .await
    .expect(200, None);
    stack.drain_until_received(receiver, count).await;
}

#[test]
fn a_recovery_sends_exactly_the_failed_deliveries_once_more() {
    run(async {
        // One attempt a delivery: the first failure fails it.
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        let t = org().await;
        // Down for two deliveries, then up.
        let receiver = Receiver::start(vec![500, 503]).await;
        let since = (chrono::Utc::now() - chrono::TimeDelta::minutes(1)).to_rfc3339();
        let (hook, _) = register(
            &stack,
            &t,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        for count in 1..=3 {
            delivered(&stack, &t, &site, &receiver, count).await;
        }
        let ids: Vec<String> = receiver
            .requests()
            .iter()
            .map(|r| r.header("webhook-id").to_owned())
            .collect();
        let (failed, succeeded) = (&ids[..2], &ids[2]);

        let reply = recover(&stack, &t, &hook, json!({"since": since})).await;
        reply.expect(202, None);
        let data = &reply.body["data"];
        assert_eq!(data["webhook_id"], hook.as_str());
        assert_eq!(
            (&data["queued"], &data["next_since"]),
            (&json!(2), &Value::Null)
        );
        // The third succeeded: gone through, not queued, and said so.
        assert_eq!(
            data["skipped"],
            json!({"being_recovered": 0, "cooling_down": 0, "not_failed": 1, "receiver_slowed": 0})
        );
        // Asked again before the attempts are made: nothing twice, and
        // the answer says why.
        let again = recover(&stack, &t, &hook, json!({"since": since})).await;
        again.expect(202, None);
        assert_eq!(again.body["data"]["queued"], 0);
        assert_eq!(
            again.body["data"]["skipped"],
            json!({"being_recovered": 2, "cooling_down": 0, "not_failed": 1, "receiver_slowed": 0})
        );

        stack.drain_until_received(&receiver, 5).await;
        stack.drain().await;
        let posts = receiver.requests();
        assert_eq!(posts.len(), 5, "the two failed ones, once more each");
        let mut resent: Vec<String> = posts[3..]
            .iter()
            .map(|r| r.header("webhook-id").to_owned())
            .collect();
        resent.sort();
        let mut expected = failed.to_vec();
        expected.sort();
        assert_eq!(resent, expected);
        assert!(!resent.contains(succeeded));

        // In the log as manual attempts; the deliveries succeeded.
        let log = send(
            &stack,
            &t,
            Method::GET,
            &format!("/api/v1/webhooks/{hook}/deliveries"),
            None,
        )
        .await;
        let manual: Vec<&Value> = log.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["manual"] == true)
            .collect();
        assert_eq!(manual.len(), 2);
        assert!(
            manual
                .iter()
                .all(|a| a["succeeded"] == true && a["attempt"] == 2)
        );
        // Nothing failed is left: a recovery now queues nothing.
        let after = recover(&stack, &t, &hook, json!({"since": since})).await;
        assert_eq!(after.body["data"]["queued"], 0);
    });
}

#[test]
fn a_recovery_is_refused_for_a_bad_since_or_another_organizations_webhook() {
    run(async {
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        let (t, other) = (org().await, org().await);
        let (hook, _) = register(&stack, &t, "http://127.0.0.1:9/hook", "hmac_sha256").await;
        let now = chrono::Utc::now();
        for body in [
            json!({}),
            json!({"since": "yesterday"}),
            json!({"since": 5}),
        ] {
            let reply = recover(&stack, &t, &hook, body.clone()).await;
            reply.expect(422, Some("validation_error"));
            assert!(reply.text.contains("since"), "{body}: {}", reply.text);
        }
        // The log keeps 30 days: an older `since` reads from 30 days back;
        // a future one finds nothing.
        let old = recover(
            &stack,
            &t,
            &hook,
            json!({"since": "1637-06-02T14:12:59+06:23"}),
        )
        .await;
        old.expect(202, None);
        let read_from: chrono::DateTime<chrono::Utc> =
            old.body["data"]["since"].as_str().unwrap().parse().unwrap();
        let off = (now - read_from - chrono::TimeDelta::days(30)).abs();
        assert!(off < chrono::TimeDelta::minutes(1), "read from {read_from}");
        let future = (now + chrono::TimeDelta::hours(1)).to_rfc3339();
        let later = recover(&stack, &t, &hook, json!({"since": future})).await;
        later.expect(202, None);
        assert_eq!(
            (
                &later.body["data"]["queued"],
                &later.body["data"]["next_since"]
            ),
            (&json!(0), &Value::Null)
        );
        let since = json!({"since": (now - chrono::TimeDelta::days(29)).to_rfc3339()});
        recover(&stack, &t, &hook, since.clone())
            .await
            .expect(202, None);
        recover(&stack, &other, &hook, since.clone())
            .await
            .expect(404, Some("webhook_not_found"));
        recover(&stack, &t, "nope", since)
            .await
            .expect(400, Some("invalid_webhook_id"));
    });
}

/// One request reads at most a batch of deliveries from the log, oldest
/// first, and says where the next one resumes.
#[test]
fn the_deliveries_a_recovery_reads_are_bounded_and_resumable() {
    use shared::model::delivery::{DeliveryAttempt, DeliveryRecord};
    run(async {
        let deliveries = harness().await.store().deliveries();
        let webhook = uuid::Uuid::now_v7();
        let start = shared::model::now();
        let mut made = Vec::new();
        for i in 0..3u32 {
            let record = DeliveryRecord::new(
                uuid::Uuid::now_v7(),
                webhook,
                uuid::Uuid::now_v7(),
                Some(uuid::Uuid::now_v7()),
                "surplus.delivered",
            );
            assert!(deliveries.create(&record).await.unwrap());
            let attempt = DeliveryAttempt {
                delivery_id: record.id,
                surplus_id: record.surplus_id,
                event: record.event.clone(),
                attempt: 1,
                manual: false,
                attempted_at: (start.as_datetime() + chrono::TimeDelta::seconds(i.into())).into(),
                succeeded: false,
                status_code: Some(500),
                error: None,
                duration_ms: 3,
                held: None,
            };
            let mut after = record.clone();
            after.attempts = 1;
            deliveries.record(&after, &attempt, None).await.unwrap();
            made.push((record.id, attempt.attempted_at));
        }
        let (first, next) = deliveries.attempted_since(webhook, start, 2).await.unwrap();
        assert_eq!(first, [made[0].0, made[1].0]);
        assert_eq!(next, Some(made[2].1));
        let (rest, next) = deliveries
            .attempted_since(webhook, next.unwrap(), 2)
            .await
            .unwrap();
        assert_eq!((rest, next), (vec![made[2].0], None));
        // Nothing before `since` is read.
        let later = (made[2].1.as_datetime() + chrono::TimeDelta::seconds(1)).into();
        let (none, _) = deliveries.attempted_since(webhook, later, 2).await.unwrap();
        assert!(none.is_empty());
    });
}

#[test]
fn an_operator_recovers_a_webhooks_deliveries_audited() {
    use admin::webhooks::{Webhooks, run as operate};
    run(async {
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![500]).await;
        let since = (chrono::Utc::now() - chrono::TimeDelta::minutes(1)).to_rfc3339();
        let (hook, _) = register(
            &stack,
            &t,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        delivered(&stack, &t, &site, &receiver, 1).await;
        let command = Webhooks::Recover {
            org: t.id(),
            webhook: hook.parse().unwrap(),
            since: since.clone(),
        };
        let action = command.action().expect("a recovery is audited");
        assert_eq!(action.command, "webhooks recover");
        let done = operate(&stack.api, command).await.unwrap();
        assert_eq!(done.lines[0]["recovery"]["queued"], 1);
        stack.drain_until_received(&receiver, 2).await;
        let posts = receiver.requests();
        assert_eq!(posts[1].header("webhook-id"), posts[0].header("webhook-id"));
        // A `since` that is no date-time is refused, as through the API.
        let refused = operate(
            &stack.api,
            Webhooks::Recover {
                org: t.id(),
                webhook: hook.parse().unwrap(),
                since: "last week".into(),
            },
        )
        .await;
        assert!(refused.is_err());
    });
}

/// A delivery a recovery re-sent is not re-sent by another recovery for an
/// hour (`RECOVERY_COOLDOWN`), whatever the keys, while its receiver is
/// still down: before, the attempt cleared the recovery's mark and the
/// next recovery queued the same failed deliveries again, without end.
#[test]
fn a_recovered_delivery_is_not_recovered_again_within_the_hour() {
    run(async {
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        let t = org().await;
        // Down throughout.
        let receiver = Receiver::start(vec![503; 20]).await;
        let since =
            json!({"since": (chrono::Utc::now() - chrono::TimeDelta::minutes(1)).to_rfc3339()});
        let url = format!("{}/hook", receiver.base);
        let (hook, _) = register(&stack, &t, &url, "hmac_sha256").await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        for count in 1..=2 {
            delivered(&stack, &t, &site, &receiver, count).await;
        }
        let first = recover(&stack, &t, &hook, since.clone()).await;
        first.expect(202, None);
        assert_eq!(first.body["data"]["queued"], 2);
        stack.drain_until_received(&receiver, 4).await;
        stack.drain().await;
        // Made and failed again: another key of the organization, at once,
        // queues nothing.
        let other = TestOrg {
            org: t.org.clone(),
            key: api_tests::new_key(t.id(), &[shared::auth::Scope::All]).await,
        };
        let again = recover(&stack, &other, &hook, since.clone()).await;
        again.expect(202, None);
        assert_eq!(again.body["data"]["queued"], 0, "within the hour");
        assert_eq!(
            again.body["data"]["skipped"],
            json!({"being_recovered": 0, "cooling_down": 2, "not_failed": 0, "receiver_slowed": 0})
        );
        stack.drain().await;
        assert_eq!(receiver.count(), 4);
        // An hour after the recovered attempts, they may go once more.
        stack
            .api
            .clock
            .advance(shared::webhooks::RECOVERY_COOLDOWN + std::time::Duration::from_secs(1));
        let later = recover(&stack, &t, &hook, since).await;
        later.expect(202, None);
        assert_eq!(later.body["data"]["queued"], 2, "after the hour");
    });
}

/// Recovery has a quota of its own, the receiver's for each organization
/// (as pings do): 10 an hour whatever key and webhook, then 429 with
/// `Retry-After`; another organization at the same receiver has its own.
#[test]
fn a_receiver_is_recovered_at_most_ten_times_a_clock_hour_by_one_organization() {
    run(async {
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        api_tests::early_in_a_window(&stack.api.clock, std::time::Duration::from_secs(3600));
        let t = org().await;
        let receiver = Receiver::start(vec![]).await;
        let url = format!("{}/hook", receiver.base);
        let since =
            json!({"since": (chrono::Utc::now() - chrono::TimeDelta::minutes(1)).to_rfc3339()});
        let (hook, _) = register(&stack, &t, &url, "hmac_sha256").await;
        for _ in 0..10 {
            recover(&stack, &t, &hook, since.clone())
                .await
                .expect(202, None);
        }
        let refused = recover(&stack, &t, &hook, since.clone()).await;
        refused.expect(429, Some("rate_limited"));
        let wait: u64 = refused.header("retry-after").parse().unwrap();
        assert!((1..=3600).contains(&wait), "{wait}");
        assert!(
            refused.body["message"]
                .as_str()
                .unwrap()
                .contains("recovered")
        );
        let (queried, _) = register(&stack, &t, &format!("{url}?v=2"), "hmac_sha256").await;
        recover(&stack, &t, &queried, since.clone())
            .await
            .expect(429, Some("rate_limited"));
        let other = org().await;
        let (theirs, _) = register(&stack, &other, &url, "hmac_sha256").await;
        recover(&stack, &other, &theirs, since)
            .await
            .expect(202, None);
    });
}

/// A recovery's attempt of a delivery that succeeded after it was queued
/// (its scheduled retry got through first) is not made: before, the
/// recovery's claim did not look at the delivery's state, and the
/// receiver got the delivery twice with one `webhook-id`.
#[test]
fn a_recovery_queued_before_the_delivery_succeeded_sends_nothing() {
    run(async {
        // Three attempts a delivery, a second apart: the first fails.
        let stack = Stack::new(quick_policy(3), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![503]).await;
        let since =
            json!({"since": (chrono::Utc::now() - chrono::TimeDelta::minutes(1)).to_rfc3339()});
        let (hook, _) = register(
            &stack,
            &t,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        delivered(&stack, &t, &site, &receiver, 1).await;
        let delivery = receiver.first_delivery();
        // Pending, its first attempt failed: a recovery queues it.
        let queued = recover(&stack, &t, &hook, since).await;
        queued.expect(202, None);
        assert_eq!(queued.body["data"]["queued"], 1);
        // The scheduled retry gets through before the recovery's message
        // is read (the test stands in for it).
        let h = harness().await;
        aws_sdk_dynamodb::Client::new(&h.sdk)
            .update_item()
            .table_name(h.store().table())
            .key(
                "pk",
                shared::store::engine::item::s(shared::store::engine::keys::delivery_pk(
                    delivery.parse().unwrap(),
                )),
            )
            .key(
                "sk",
                shared::store::engine::item::s(shared::store::engine::keys::DELIVERY_SK.to_owned()),
            )
            .update_expression("SET #status = :succeeded")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(
                ":succeeded",
                shared::store::engine::item::s("succeeded".to_owned()),
            )
            .send()
            .await
            .unwrap();
        stack.drain().await;
        assert_eq!(
            receiver.count(),
            1,
            "the recovery's attempt went out after the delivery succeeded"
        );
        // A recovery that found it failed and came to mark it after it
        // succeeded skips it, and says why.
        let now = shared::clock::now().timestamp_millis();
        let mark = h
            .store()
            .deliveries()
            .mark_recovery(
                delivery.parse().unwrap(),
                hook.parse().unwrap(),
                uuid::Uuid::now_v7(),
                now,
                now + 30_000,
                now - 3_600_000,
            )
            .await
            .unwrap();
        assert_eq!(
            mark,
            shared::store::records::deliveries::RecoveryMark::NotFailed
        );
    });
}

/// An operator's recovery run without the queue's URL fails before it
/// marks anything: the rerun with it queues every failed delivery, where
/// before it queued none until the first run's marks lapsed (15 minutes).
#[test]
fn a_recovery_that_cannot_queue_holds_nothing_back() {
    use admin::webhooks::{Webhooks, run as operate};
    run(async {
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![500, 500]).await;
        let since = (chrono::Utc::now() - chrono::TimeDelta::minutes(1)).to_rfc3339();
        let (hook, _) = register(
            &stack,
            &t,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        for count in 1..=2 {
            delivered(&stack, &t, &site, &receiver, count).await;
        }
        let command = || Webhooks::Recover {
            org: t.id(),
            webhook: hook.parse().unwrap(),
            since: since.clone(),
        };
        let mut config = (*stack.api.config).clone();
        config.webhooks.queue_url = None;
        let unconfigured = shared::state::AppState::new(config, &harness().await.sdk);
        let failed = operate(&unconfigured, command()).await;
        assert!(format!("{:#}", failed.unwrap_err()).contains("WEBHOOK_QUEUE_URL"));
        let done = operate(&stack.api, command()).await.unwrap();
        assert_eq!(done.lines[0]["recovery"]["queued"], 2);
    });
}

/// A recovery that fails after marking its deliveries but before its
/// messages went (here its queue refuses them) holds them back for its
/// grace only (`RECOVERY_GRACE`, longer than a request runs), not the 15
/// minutes a sent recovery's marks hold: a later recovery, whatever its
/// key, queues them once the grace has passed.
#[test]
fn a_recovery_that_died_before_queueing_holds_nothing_back_past_its_grace() {
    use admin::webhooks::{Webhooks, run as operate};
    run(async {
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![500, 500]).await;
        let since = (chrono::Utc::now() - chrono::TimeDelta::minutes(1)).to_rfc3339();
        let (hook, _) = register(
            &stack,
            &t,
            &format!("{}/hook", receiver.base),
            "hmac_sha256",
        )
        .await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        for count in 1..=2 {
            delivered(&stack, &t, &site, &receiver, count).await;
        }
        let mut config = (*stack.api.config).clone();
        config.webhooks.queue_url = Some("http://127.0.0.1:5005/000000000000/no-such-queue".into());
        let refusing = shared::state::AppState::new(config, &harness().await.sdk);
        let died = operate(
            &refusing,
            Webhooks::Recover {
                org: t.id(),
                webhook: hook.parse().unwrap(),
                since: since.clone(),
            },
        )
        .await;
        assert!(died.is_err(), "the queue refused its messages");
        let within = recover(&stack, &t, &hook, json!({"since": since})).await;
        within.expect(202, None);
        assert_eq!(within.body["data"]["queued"], 0, "held within the grace");
        assert_eq!(within.body["data"]["skipped"]["being_recovered"], 2);
        stack
            .api
            .clock
            .advance(shared::webhooks::RECOVERY_GRACE + std::time::Duration::from_secs(1));
        let after = recover(&stack, &t, &hook, json!({"since": since})).await;
        after.expect(202, None);
        assert_eq!(after.body["data"]["queued"], 2, "after the grace");
    });
}
