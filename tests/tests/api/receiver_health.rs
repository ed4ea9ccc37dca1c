//! A receiver that keeps failing is slowed (one attempt a minute after 5
//! failures in a row), then parked (one an hour after 3 days failing);
//! the attempts it is not given are recorded failed without a request; a
//! 2xx, a ping's included, brings it back; its owner sees its state in the
//! webhook list, the operator in the metrics (`model::receiver`).

use std::time::Duration;

use api_tests::webhooks::{Receiver, Stack, quick_policy};
use api_tests::{TestOrg, metrics, org, run};
use http::Method;
use serde_json::{Value, json};

use crate::deliveries::{deliver_load, register, send};
use crate::sites::new_site;
use crate::surpluses::new_load;

/// A load of `t` delivered through `stack`, its delivery's one attempt
/// made: that attempt, as the webhook's deliveries list shows it, and its
/// metric line.
async fn one_delivery(stack: &Stack, t: &TestOrg, site: &str, hook: &str) -> (Value, Value) {
    let load = new_load(t, site).await;
    deliver_load(stack, t, &load).await;
    stack.drain_dry(Duration::from_secs(30)).await;
    let attempts = send(
        stack,
        t,
        Method::GET,
        &format!("/api/v1/webhooks/{hook}/deliveries?limit=1"),
        None,
    )
    .await;
    attempts.expect(200, None);
    let attempt = attempts.body["data"][0].clone();
    assert_eq!(
        attempt["surplus_id"],
        load.as_str(),
        "the newest attempt is this load's"
    );
    let lines = metrics::of_delivery(attempt["delivery_id"].as_str().unwrap());
    assert_eq!(lines.len(), 1, "{lines:?}");
    (attempt, lines[0].clone())
}

/// The `receiver` of `t`'s only webhook, as the list shows it.
async fn receiver_of(stack: &Stack, t: &TestOrg) -> Value {
    let list = send(stack, t, Method::GET, "/api/v1/webhooks", None).await;
    list.expect(200, None);
    assert_eq!(list.body["meta"]["count"], 1);
    list.body["data"][0]["receiver"].clone()
}

/// Moves the dispatcher's and the API's clocks on by `by`.
fn advance(stack: &Stack, by: Duration) {
    stack.state.clock.advance(by);
    stack.api.clock.advance(by);
}

fn healthy() -> Value {
    json!({"state": "healthy", "consecutive_failures": 0, "failing_since": null, "next_attempt_at": null})
}

#[test]
fn a_receiver_that_keeps_failing_is_slowed_then_parked_and_a_2xx_brings_it_back() {
    run(async {
        // One attempt a delivery: each load is one attempt.
        let stack = Stack::new(quick_policy(1), false, |_| {}).await;
        let (t, neighbour) = (org().await, org().await);
        let receiver = Receiver::start(vec![500; 8]).await;
        let url = format!("{}/hook", receiver.base);
        let (hook, _) = register(&stack, &t, &url, "hmac_sha256").await;
        register(&stack, &neighbour, &url, "hmac_sha256").await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        assert_eq!(receiver_of(&stack, &t).await, healthy());

        // Five failures in a row: the fifth slows it, counted once.
        for n in 1..=5 {
            let (attempt, line) = one_delivery(&stack, &t, &site, &hook).await;
            assert_eq!(
                (attempt["status_code"].as_u64(), &attempt["error"]),
                (Some(500), &Value::Null)
            );
            assert!(attempt.get("held").is_none(), "{attempt}");
            assert_eq!(line["DeliveryAttempts"], 1);
            let slowed = (n == 5).then_some(1);
            assert_eq!(
                line.get("ReceiverSlowed").and_then(Value::as_u64),
                slowed,
                "{n}: {line}"
            );
            assert!(line.get("AttemptsHeld").is_none());
        }
        let seen = receiver_of(&stack, &t).await;
        assert_eq!(
            (&seen["state"], &seen["consecutive_failures"]),
            (&json!("slowed"), &json!(5))
        );
        assert_eq!(seen["next_attempt_at"], Value::Null, "its turn is free");
        assert_eq!(
            receiver_of(&stack, &neighbour).await,
            healthy(),
            "another organization's own health"
        );

        // Slowed: the next attempt takes the minute, the one after is held.
        let (went, _) = one_delivery(&stack, &t, &site, &hook).await;
        assert_eq!(went["status_code"], 500);
        assert_eq!(receiver.count(), 6);
        let (held, line) = one_delivery(&stack, &t, &site, &hook).await;
        assert_eq!(
            (
                &held["succeeded"],
                &held["status_code"],
                &held["error"],
                &held["duration_ms"]
            ),
            (&json!(false), &Value::Null, &json!("internal"), &json!(0))
        );
        assert_eq!(held["held"], "receiver_slowed");
        assert_eq!(
            (&line["held"], &line["error"]),
            (&json!("receiver_slowed"), &json!("internal"))
        );
        assert_eq!(receiver.count(), 6, "no request");
        assert_eq!(
            (line["AttemptsHeld"].as_u64(), line.get("DeliveryAttempts")),
            (Some(1), None)
        );
        let seen = receiver_of(&stack, &t).await;
        assert_eq!(
            (&seen["state"], &seen["consecutive_failures"]),
            (&json!("slowed"), &json!(6))
        );
        let next = seen["next_attempt_at"]
            .as_str()
            .expect("while its turn is taken");
        let after = chrono::DateTime::parse_from_rfc3339(next)
            .unwrap()
            .timestamp_millis()
            - stack.api.clock.now().timestamp_millis();
        assert!((1..=60_000).contains(&after), "{after} ms");

        // Recovering everything that failed queues nothing to a slowed
        // receiver, and says so.
        let since = (stack.api.clock.now() - chrono::TimeDelta::hours(1)).to_rfc3339();
        let recover = format!("/api/v1/webhooks/{hook}/recover");
        let recovered = send(
            &stack,
            &t,
            Method::POST,
            &recover,
            Some(json!({ "since": since })),
        )
        .await;
        recovered.expect(202, None);
        assert_eq!(
            (
                &recovered.body["data"]["queued"],
                &recovered.body["data"]["skipped"]
            ),
            (
                &json!(0),
                &json!({"being_recovered": 0, "cooling_down": 0, "not_failed": 0, "receiver_slowed": 7})
            ),
            "{}",
            recovered.body
        );
        stack.drain_dry(Duration::from_secs(30)).await;
        assert_eq!(receiver.count(), 6, "nothing recovered to it");

        // A minute on, one attempt again.
        advance(&stack, Duration::from_secs(61));
        let (went, _) = one_delivery(&stack, &t, &site, &hook).await;
        assert_eq!(
            (went["status_code"].as_u64(), receiver.count()),
            (Some(500), 7)
        );

        // Three days failing: parked, counted once; one attempt an hour.
        advance(&stack, Duration::from_secs(3 * 24 * 3600));
        let (went, line) = one_delivery(&stack, &t, &site, &hook).await;
        assert_eq!(
            (went["status_code"].as_u64(), receiver.count()),
            (Some(500), 8)
        );
        assert_eq!(line["ReceiverParked"], 1, "{line}");
        let (held, line) = one_delivery(&stack, &t, &site, &hook).await;
        assert_eq!(held["held"], "receiver_parked");
        assert_eq!(receiver.count(), 8);
        assert!(
            line.get("ReceiverParked").is_none(),
            "once a streak: {line}"
        );
        let seen = receiver_of(&stack, &t).await;
        assert_eq!(
            (&seen["state"], &seen["consecutive_failures"]),
            (&json!("parked"), &json!(8))
        );
        assert!(seen["failing_since"].is_string());

        // A ping goes whatever the state; its 2xx brings the receiver back.
        send(
            &stack,
            &t,
            Method::POST,
            &format!("/api/v1/webhooks/{hook}/ping"),
            None,
        )
        .await
        .expect(202, None);
        stack.drain_dry(Duration::from_secs(30)).await;
        assert_eq!(receiver.count(), 9, "the ping was sent");
        assert_eq!(receiver_of(&stack, &t).await, healthy());
        let (went, line) = one_delivery(&stack, &t, &site, &hook).await;
        assert_eq!(
            (went["succeeded"].as_bool(), receiver.count()),
            (Some(true), 10)
        );
        assert!(line.get("AttemptsHeld").is_none());
    });
}

/// A held attempt's delivery comes back at its receiver's next turn, not
/// at the schedule's first wait: one sooner would only be held again, and
/// a failing tenant's deliveries would churn the queue every organization
/// shares at the schedule's pace. (With no wait between attempts, as here,
/// each delivery's every attempt used to be held at once and the delivery
/// dead-lettered within the minute.)
#[test]
fn a_held_delivery_comes_back_at_its_receivers_turn_not_sooner() {
    run(async {
        // Four attempts a delivery, with no wait between them.
        let policy = webhook_dispatcher::policy::Policy {
            schedule: vec![Duration::ZERO; 3],
            ..quick_policy(4)
        };
        let stack = Stack::new(policy, false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![500; 8]).await;
        let url = format!("{}/hook", receiver.base);
        let (hook, _) = register(&stack, &t, &url, "hmac_sha256").await;
        let site = new_site(&t, json!({"name": "Origin"})).await;
        let first = new_load(&t, &site).await;
        deliver_load(&stack, &t, &first).await;
        stack.drain_dry(Duration::from_secs(30)).await;
        assert_eq!(receiver.count(), 4, "one delivery's four attempts");

        // The next delivery: the fifth failure slows the receiver, the
        // turn is taken by its next attempt, the third is held.
        let second = new_load(&t, &site).await;
        deliver_load(&stack, &t, &second).await;
        for _ in 0..50 {
            let taken = local::poller::poll_once(&stack.dispatcher, &stack.state.queue)
                .await
                .expect("poll");
            if taken == 0 {
                break;
            }
        }
        assert_eq!(receiver.count(), 6, "the fifth failure, then the turn's");
        let log = send(
            &stack,
            &t,
            Method::GET,
            &format!("/api/v1/webhooks/{hook}/deliveries?limit=10"),
            None,
        )
        .await;
        log.expect(200, None);
        let attempts: Vec<(u64, Value, Value)> = log.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["surplus_id"] == second.as_str())
            .map(|a| {
                (
                    a["attempt"].as_u64().unwrap(),
                    a["status_code"].clone(),
                    a["held"].clone(),
                )
            })
            .collect();
        assert_eq!(
            attempts,
            vec![
                (3, Value::Null, json!("receiver_slowed")),
                (2, json!(500), Value::Null),
                (1, json!(500), Value::Null),
            ],
            "newest first: two requests, then one held, and no fourth attempt yet"
        );
        // Its message waits, hidden, for the turn.
        let sqs = aws_sdk_sqs::Client::new(&api_tests::harness().await.sdk);
        let queue = stack.state.config.webhooks.queue_url.clone().unwrap();
        let attributes = sqs
            .get_queue_attributes()
            .queue_url(&queue)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
            .send()
            .await
            .expect("queue attributes");
        let count = |name: &str| {
            attributes
                .attributes()
                .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::from(name)))
                .cloned()
        };
        assert_eq!(
            (
                count("ApproximateNumberOfMessages"),
                count("ApproximateNumberOfMessagesNotVisible")
            ),
            (Some("0".into()), Some("1".into()))
        );
    });
}
