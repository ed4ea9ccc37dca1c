//! Keys rotate without anyone noticing (`shared::keyring`, `admin keys`,
//! `admin reseal`): the cursor key and the seal key rotated through the
//! operator's commands, on secrets in Secrets Manager (moto), while
//! integrators' cursors, keyed requests and webhooks go on.

use std::time::Duration;

use admin::audit::Done;
use admin::cli::Cli;
use api_tests::webhooks::{Receiver, Stack, quick_policy};
use api_tests::*;
use axum::Router;
use base64::Engine;
use clap::Parser;
use http::Method;
use serde_json::{Value, json};
use shared::clock::Clock;
use shared::config::Config;
use shared::deployment_key::KeySource;
use shared::state::AppState;

/// A new secret holding `text`, in Secrets Manager: its ARN.
pub(crate) async fn secret(text: &str) -> KeySource {
    let client = aws_sdk_secretsmanager::Client::new(&harness().await.sdk);
    let created = client
        .create_secret()
        .name(unique("rotation"))
        .secret_string(text)
        .send()
        .await
        .expect("a secret");
    KeySource::Secret(created.arn.expect("an ARN"))
}

/// `admin <args>` on `config`, by `clock`.
pub(crate) async fn admin_on(
    config: &Config,
    clock: &Clock,
    args: &[&str],
) -> anyhow::Result<Done> {
    let cli = Cli::try_parse_from(std::iter::once("admin").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let sdk = &harness().await.sdk;
    clock
        .scope(Box::pin(admin::cli::run(cli.command, config, sdk)))
        .await
}

/// An instance whose settings `change` makes, running by `clock`.
pub(crate) async fn instance(
    clock: &Clock,
    change: impl FnOnce(&mut Config),
) -> (Router, AppState) {
    let (_, mut state) = harness().await.instance_with(change);
    state.clock = clock.clone();
    (shared::http::app(local::routes(), state.clone()), state)
}

/// The generation a cursor names (`k` in its signed payload; 1 when none).
fn signer_of(cursor: &str) -> u64 {
    let (payload, _) = cursor.split_once('.').unwrap();
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    let payload: Value = serde_json::from_slice(&payload).unwrap();
    payload["k"].as_u64().unwrap_or(1)
}

/// Past the new generation's start (`ROLLOUT`), which is past `REREAD`:
/// every instance signs with it.
const PAST_THE_ROLLOUT: Duration = Duration::from_secs(11 * 60);

#[test]
fn a_cursor_of_the_previous_key_pages_on_through_the_overlap_and_keyed_requests_replay() {
    run(async {
        let clock = Clock::default();
        let source = secret(&"c".repeat(40)).await;
        let (router, state) = instance(&clock, |c| c.http.cursor_key = Some(source.clone())).await;
        let config = (*state.config).clone();
        let t = org().await;
        let site = crate::sites::new_site(&t, json!({"name": "Origin"})).await;
        for _ in 0..3 {
            crate::surpluses::new_load(&t, &site).await;
        }
        let page = |cursor: Option<String>| {
            let (router, key) = (router.clone(), t.key.clone());
            async move {
                let path = match cursor {
                    Some(cursor) => format!("/api/v1/surpluses?limit=1&cursor={cursor}"),
                    None => "/api/v1/surpluses?limit=1".to_owned(),
                };
                call(Method::GET, &path).key(&key).send_to(&router).await
            }
        };
        let first = page(None).await;
        first.expect(200, None);
        let before = first.body["meta"]["next_cursor"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(signer_of(&before), 1);
        let keyed = |body: Value| {
            let (router, key) = (router.clone(), t.key.clone());
            async move {
                call(Method::POST, "/api/v1/sites")
                    .key(&key)
                    .header("idempotency-key", "rotating")
                    .json(&body)
                    .send_to(&router)
                    .await
            }
        };
        let made = keyed(json!({"name": "Keyed"})).await;
        made.expect(201, None);

        // The operator rotates the cursor key (24 h of overlap by default).
        let rotated = admin_on(&config, &clock, &["keys", "rotate", "--key", "cursor"])
            .await
            .expect("keys rotate");
        let generations = &rotated.lines[0]["generations"];
        assert_eq!(generations[0]["version"], 2);
        assert_eq!(generations[0]["signs"], false, "not before the rollout");
        assert!(
            !rotated.lines[0].to_string().contains(&"c".repeat(40)),
            "no key shown"
        );
        clock.advance(PAST_THE_ROLLOUT);

        // The cursor handed out before pages on; the next is signed anew.
        let second = page(Some(before.clone())).await;
        second.expect(200, None);
        assert_eq!(ids(&second).len(), 1);
        assert_ne!(ids(&second), ids(&first));
        let after = second.body["meta"]["next_cursor"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(signer_of(&after), 2);
        // The keyed request, sent again, is the request it was.
        let replayed = keyed(json!({"name": "Keyed"})).await;
        replayed.expect(201, None);
        assert_eq!(replayed.header("idempotent-replayed"), "true");
        assert_eq!(replayed.text, made.text);
        keyed(json!({"name": "Other"}))
            .await
            .expect(422, Some("idempotency_key_reused"));

        // Past the overlap, the previous key's cursors are refused.
        clock.advance(Duration::from_secs(24 * 3600));
        page(Some(before)).await.expect(422, Some("invalid_cursor"));
        page(Some(after)).await.expect(200, None);
        let shown = admin_on(&config, &clock, &["keys", "show", "--key", "cursor"])
            .await
            .expect("keys show");
        // Version 1 may go once no instance signs with it (ten minutes
        // after version 2 took over) and a day more, while what it
        // fingerprinted may be retried.
        let started: chrono::DateTime<chrono::Utc> =
            serde_json::from_value(generations[0]["from"].clone()).unwrap();
        let droppable = started + chrono::TimeDelta::minutes(10) + chrono::TimeDelta::days(1);
        assert_eq!(
            shown.lines[0]["generations"],
            json!([
                {"version": 2, "signs": true, "held": true,
                 "from": generations[0]["from"], "until": null, "droppable_from": null},
                {"version": 1, "signs": false, "held": false,
                 "from": null, "until": generations[1]["until"], "droppable_from": droppable},
            ])
        );
        let early = admin_on(
            &config,
            &clock,
            &["keys", "drop", "--key", "cursor", "--version", "1"],
        )
        .await
        .expect_err("a day and ten minutes after version 2 took over, not before");
        assert!(early.to_string().contains("drop it from"), "{early}");
        clock.advance(Duration::from_secs(10 * 60));
        // Version 1 dropped: everything still works.
        admin_on(
            &config,
            &clock,
            &["keys", "drop", "--key", "cursor", "--version", "1"],
        )
        .await
        .expect("keys drop");
        clock.advance(Duration::from_secs(6 * 60));
        let again = page(None).await;
        again.expect(200, None);
        let cursor = again.body["meta"]["next_cursor"]
            .as_str()
            .unwrap()
            .to_owned();
        page(Some(cursor)).await.expect(200, None);
    });
}

/// A stack (`api_tests::webhooks::Stack`, a table of its own: `admin
/// reseal` walks all of it) whose API and dispatcher both read the seal
/// key from `source` and run by `clock`.
pub(crate) async fn sealed_stack(clock: &Clock, source: &KeySource) -> Stack {
    let source = source.clone();
    stack_by(clock, true, move |c| c.webhooks.seal_key = Some(source)).await
}

/// A stack (a table of its own when `own_table`) whose API and dispatcher
/// both run by `clock`, with the settings `change` makes.
pub(crate) async fn stack_by(
    clock: &Clock,
    own_table: bool,
    change: impl FnOnce(&mut Config),
) -> Stack {
    let mut stack = Stack::new(quick_policy(3), own_table, change).await;
    let mut dispatching = AppState::new((*stack.api.config).clone(), &harness().await.sdk);
    dispatching.clock = clock.clone();
    stack.dispatcher = webhook_dispatcher::Dispatcher::new(dispatching.clone(), quick_policy(3));
    stack.state = dispatching;
    stack.api.clock = clock.clone();
    stack.router = shared::http::app(local::routes(), stack.api.clone());
    stack
}

/// A load of `t` moved to `delivered` through `stack`'s API.
pub(crate) async fn deliver_a_load(stack: &Stack, t: &TestOrg) {
    let send = |method: Method, path: String, body: Value| {
        call(method, &path)
            .key(&t.key)
            .json(&body)
            .send_to(&stack.router)
    };
    let site = send(
        Method::POST,
        "/api/v1/sites".into(),
        json!({"name": "Origin"}),
    )
    .await;
    let site = site.body["data"]["id"].as_str().unwrap().to_owned();
    let load = send(
        Method::POST,
        "/api/v1/surpluses".into(),
        json!({"site_id": site, "volume_m3": 3}),
    )
    .await;
    let load = load.body["data"]["id"].as_str().unwrap().to_owned();
    let path = format!("waybills/{}/{load}/w.png", t.id());
    store_waybill(&stack.api.store, t.id(), load.parse().unwrap(), &path)
        .await
        .unwrap();
    send(
        Method::PATCH,
        format!("/api/v1/surpluses/{load}"),
        json!({"status": "delivered"}),
    )
    .await
    .expect(200, None);
}

/// The commands of the audit trail since the test began, oldest first,
/// each with its outcome (the `started` records left out).
pub(crate) async fn audited(config: &Config, clock: &Clock) -> Vec<(String, String)> {
    let trail = admin_on(config, clock, &["audit", "list"])
        .await
        .unwrap()
        .lines;
    trail
        .iter()
        .rev()
        .map(|r| {
            (
                r["command"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .filter(|(_, outcome)| outcome != "started")
        .collect()
}

/// `admin reseal --check`'s line.
pub(crate) async fn check(config: &Config, clock: &Clock) -> Value {
    let done = admin_on(config, clock, &["reseal", "--check"])
        .await
        .expect("reseal --check");
    done.lines[0].clone()
}

#[test]
fn the_seal_key_rotates_while_webhooks_deliver_and_sealed_answers_replay() {
    run(async {
        let clock = Clock::default();
        let source = secret(&"s".repeat(40)).await;
        let stack = sealed_stack(&clock, &source).await;
        let config = (*stack.api.config).clone();
        let t = stack.org().await;
        let receiver = Receiver::start(vec![]).await;
        let register = |idempotency_key: Option<&'static str>| {
            let path = idempotency_key.unwrap_or("plain");
            let mut c = call(Method::POST, "/api/v1/webhooks")
                .key(&t.key)
                .json(&json!({
                    "event": "surplus.delivered",
                    "url": format!("{}/{path}", receiver.base),
                }));
            if let Some(key) = idempotency_key {
                c = c.header("idempotency-key", key);
            }
            c.send_to(&stack.router)
        };
        let secret_of = |reply: &Reply| reply.body["data"]["secret"].as_str().unwrap().to_owned();
        // Every delivery so far reached the receiver, each signed with its
        // webhook's secret, and none failed.
        let all_delivered = |count: usize, secrets: &[String]| {
            let got = receiver.requests();
            assert_eq!(got.len(), count, "deliveries");
            for request in &got {
                assert!(
                    secrets.iter().any(|s| request.signed_with(s)),
                    "a delivery signed with none of the secrets"
                );
            }
        };

        // Before: one webhook, registered with an Idempotency-Key (its
        // answer, which carries the secret, is kept sealed).
        let first = register(Some("hook-1")).await;
        first.expect(201, None);
        let secrets = vec![secret_of(&first)];
        deliver_a_load(&stack, &t).await;
        stack.drain_until_received(&receiver, 1).await;
        all_delivered(1, &secrets);
        // Its secret rolled for a week: the secret before is kept sealed too.
        let hook = first.body["data"]["id"].as_str().unwrap().to_owned();
        let rolled = call(
            Method::POST,
            &format!("/api/v1/webhooks/{hook}/roll-secret"),
        )
        .key(&t.key)
        .json(&json!({"overlap_hours": 168}))
        .send_to(&stack.router)
        .await;
        rolled.expect(200, None);
        let original = secrets[0].clone();
        let secrets = [secrets, vec![secret_of(&rolled)]].concat();
        assert_eq!(
            check(&config, &clock).await,
            json!({"seals_with": 1, "sealed": {"1": 3}, "need_an_old_version": 0})
        );

        // The operator rotates the seal key; the new generation seals once
        // every instance has read it.
        admin_on(&config, &clock, &["keys", "rotate", "--key", "seal"])
            .await
            .expect("keys rotate");
        clock.advance(PAST_THE_ROLLOUT);
        let second = register(None).await;
        second.expect(201, None);
        let secrets = [secrets, vec![secret_of(&second)]].concat();
        deliver_a_load(&stack, &t).await;
        stack.drain_until_received(&receiver, 3).await;
        all_delivered(3, &secrets);
        let replayed = register(Some("hook-1")).await;
        replayed.expect(201, None);
        assert_eq!(
            (replayed.header("idempotent-replayed"), &replayed.text),
            ("true", &first.text)
        );
        assert_eq!(
            check(&config, &clock).await,
            json!({"seals_with": 2, "sealed": {"1": 3, "2": 1}, "need_an_old_version": 3})
        );

        // The old generation cannot go while values need it (ten minutes
        // after the new one took over, no instance seals with it).
        clock.advance(Duration::from_secs(10 * 60));
        let refused = admin_on(
            &config,
            &clock,
            &["keys", "drop", "--key", "seal", "--version", "1"],
        )
        .await
        .expect_err("values still need version 1");
        assert!(
            refused
                .to_string()
                .contains("3 values are still sealed with version 1"),
            "{refused}"
        );

        // Resealed, then dropped: everything still works.
        // A bounded run (one page of ten items, the fewest a page may
        // read: a run writes two audit records a resumed walk may meet
        // again), then the rest from where it stopped.
        for few in ["1", "9"] {
            let args = ["admin", "reseal", "--page-items", few];
            assert!(Cli::try_parse_from(args).is_err(), "{few} items a page");
        }
        let bounded = admin_on(
            &config,
            &clock,
            &["reseal", "--page-items", "10", "--pages", "1"],
        )
        .await
        .expect("reseal, bounded");
        let resume = bounded.lines[0]["resume"]
            .as_str()
            .expect("a position")
            .to_owned();
        let resealed = admin_on(&config, &clock, &["reseal", "--resume", &resume])
            .await
            .expect("reseal, resumed");
        assert!(resealed.lines[0]["resume"].is_null(), "to the end");
        let total = |done: &Done| done.lines[0]["resealed"].as_u64().unwrap();
        assert_eq!(total(&bounded) + total(&resealed), 3);
        // What is left is known after a whole walk only.
        assert!(resealed.lines[0]["need_an_old_version"].is_null());
        // Safe to run again: nothing left to do.
        let again = admin_on(&config, &clock, &["reseal"])
            .await
            .expect("reseal again");
        assert_eq!(again.lines[0]["resealed"], 0);
        assert_eq!(again.lines[0]["need_an_old_version"], 0);
        assert_eq!(
            check(&config, &clock).await,
            json!({"seals_with": 2, "sealed": {"2": 4}, "need_an_old_version": 0})
        );
        admin_on(
            &config,
            &clock,
            &["keys", "drop", "--key", "seal", "--version", "1"],
        )
        .await
        .expect("keys drop");
        clock.advance(shared::keyring::REREAD + Duration::from_secs(1));
        deliver_a_load(&stack, &t).await;
        stack.drain_until_received(&receiver, 5).await;
        all_delivered(5, &secrets);
        // The rolled webhook's secret before, resealed, still signs.
        let last = receiver
            .requests()
            .into_iter()
            .rfind(|r| r.path == "/hook-1")
            .unwrap();
        assert!(last.signed_with(&original) && last.signed_with(&secrets[1]));
        let again = register(Some("hook-1")).await;
        assert_eq!((again.status.as_u16(), &again.text), (201, &first.text));
        assert!(stack.dead_letters().await.is_empty(), "no delivery failed");

        // Each step is in the operators' audit trail.
        let steps = audited(&config, &clock).await;
        let step = |c: &str, o: &str| (c.to_owned(), o.to_owned());
        assert_eq!(
            steps,
            [
                step("keys rotate", "succeeded"),
                step("keys drop", "refused"),
                step("reseal", "succeeded"),
                step("reseal", "succeeded"),
                step("reseal", "succeeded"),
                step("keys drop", "succeeded"),
            ]
        );
    });
}

/// A roll's answer says the secret before it signs for an hour more.
fn overlap_ends_in_an_hour(rolled: &Reply, clock: &Clock) {
    let until: chrono::DateTime<chrono::Utc> = rolled.body["data"]["previous_secret_expires_at"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let hour_on = clock.now() + chrono::TimeDelta::hours(1);
    assert!(
        (until - hour_on).abs() < chrono::TimeDelta::seconds(5),
        "{until} ~ {hour_on}"
    );
}

/// The deliveries `receiver` got at `path`.
fn at(receiver: &Receiver, path: &str) -> Vec<api_tests::webhooks::Received> {
    receiver
        .requests()
        .into_iter()
        .filter(|r| r.path == path)
        .collect()
}

#[test]
fn a_rolled_secret_signs_beside_the_one_before_for_the_overlap_and_alone_after() {
    run(async {
        let clock = Clock::default();
        let stack = stack_by(&clock, false, |_| {}).await;
        let t = stack.org().await;
        let receiver = Receiver::start(vec![]).await;
        let send = |method: Method, path: String, body: Option<Value>, key: &str| {
            let mut c = call(method, &path).key(key);
            if let Some(body) = body {
                c = c.json(&body);
            }
            c.send_to(&stack.router)
        };
        let register = |path: &str, mode: &str| {
            send(
                Method::POST,
                "/api/v1/webhooks".into(),
                Some(json!({"event": "surplus.delivered",
                            "url": format!("{}{path}", receiver.base),
                            "verification_mode": mode})),
                &t.key,
            )
        };
        let (hmac, bearer) = (
            register("/hmac", "hmac_sha256").await,
            register("/bearer", "bearer_token").await,
        );
        let id = |reply: &Reply| reply.body["data"]["id"].as_str().unwrap().to_owned();
        let secret = |reply: &Reply| reply.body["data"]["secret"].as_str().unwrap().to_owned();
        let (hook, old) = (id(&hmac), secret(&hmac));
        let (bearer_hook, bearer_old) = (id(&bearer), secret(&bearer));
        let deliver = |count: usize| {
            let (stack, t, receiver) = (&stack, &t, &receiver);
            async move {
                deliver_a_load(stack, t).await;
                stack
                    .drain_until(Duration::from_secs(20), || receiver.count() >= count)
                    .await;
                assert_eq!(receiver.count(), count);
            }
        };
        deliver(2).await;
        let first = &at(&receiver, "/hmac")[0];
        assert!(first.signed_with(&old));
        assert!(
            !first.header("webhook-signature").contains(' '),
            "one signature"
        );

        // The hmac webhook's secret rolled for an hour, with an
        // Idempotency-Key; the bearer one's by an operator, for the default day.
        let roll = |body: Value| {
            call(
                Method::POST,
                &format!("/api/v1/webhooks/{hook}/roll-secret"),
            )
            .key(&t.key)
            .header("idempotency-key", "roll-1")
            .json(&body)
            .send_to(&stack.router)
        };
        let rolled = roll(json!({"overlap_hours": 1})).await;
        rolled.expect(200, None);
        let new = secret(&rolled);
        assert_ne!(new, old);
        let data = &rolled.body["data"];
        assert_eq!(
            (data["id"].as_str(), data["event"].as_str()),
            (Some(hook.as_str()), Some("surplus.delivered"))
        );
        overlap_ends_in_an_hour(&rolled, &clock);
        let again = roll(json!({"overlap_hours": 1})).await;
        assert_eq!(
            (again.header("idempotent-replayed"), &again.text),
            ("true", &rolled.text)
        );
        let config = (*stack.api.config).clone();
        let by_operator = admin_on(
            &config,
            &clock,
            &[
                "webhooks",
                "roll-secret",
                "--org",
                &t.id().to_string(),
                "--webhook",
                &bearer_hook,
            ],
        )
        .await
        .expect("webhooks roll-secret");
        let bearer_new = by_operator.lines[0]["secret"].as_str().unwrap().to_owned();
        assert_ne!(bearer_new, bearer_old);
        let org = t.id().to_string();
        let trail = admin_on(&config, &clock, &["audit", "list", "--org", &org])
            .await
            .unwrap()
            .lines;
        let audited = trail
            .iter()
            .find(|r| r["command"] == "webhooks roll-secret" && r["outcome"] == "succeeded")
            .expect("the operator's roll is audited");
        assert_eq!(audited["target"]["webhook_id"], bearer_hook.as_str());
        assert!(
            !audited.to_string().contains(&bearer_new),
            "no secret in the trail"
        );

        // During the overlap: both secrets sign each delivery.
        deliver(4).await;
        let during = &at(&receiver, "/hmac")[1];
        for secret in [&old, &new] {
            assert!(during.signed_with(secret));
        }
        assert!(
            during.header("webhook-signature").starts_with(&format!(
                "{} ",
                webhook_dispatcher::signature::standard_signature(
                    &new,
                    during.header("webhook-id"),
                    during.header("webhook-timestamp").parse().unwrap(),
                    &during.body
                )
            )),
            "the new secret's first"
        );
        let bearer_during = &at(&receiver, "/bearer")[1];
        assert_eq!(
            bearer_during.header("x-svc-delivery-token"),
            format!("{bearer_new} {bearer_old}")
        );

        // After the overlap: the new secret alone (the bearer's day goes on).
        clock.advance(Duration::from_secs(3601));
        deliver(6).await;
        let after = &at(&receiver, "/hmac")[2];
        assert!(after.signed_with(&new) && !after.signed_with(&old));
        assert!(!after.header("x-svc-signature").contains(' '));
        assert!(at(&receiver, "/bearer")[2].signed_with(&bearer_old));

        let hmac_seen = at(&receiver, "/hmac");
        let phases = [
            ("before", &hmac_seen[0]),
            ("during", &hmac_seen[1]),
            ("after", &hmac_seen[2]),
        ];
        api_tests::webhooks::keep_rolled("hmac_sha256", &old, &new, &phases);
        let bearer_seen = at(&receiver, "/bearer");
        let phases = [("before", &bearer_seen[0]), ("during", &bearer_seen[1])];
        api_tests::webhooks::keep_rolled("bearer_token", &bearer_old, &bearer_new, &phases);

        // The delivery log is kept.
        let log = send(
            Method::GET,
            format!("/api/v1/webhooks/{hook}/deliveries"),
            None,
            &t.key,
        )
        .await;
        log.expect(200, None);
        assert_eq!(log.body["data"].as_array().unwrap().len(), 3);
        assert!(stack.dead_letters().await.is_empty(), "no delivery failed");
    });
}

#[test]
fn a_roll_of_another_organizations_webhook_is_404_and_bad_rolls_are_refused() {
    run(async {
        let clock = Clock::default();
        let stack = stack_by(&clock, false, |_| {}).await;
        let (t, other) = (stack.org().await, stack.org().await);
        let roll = |key: &str, hook: &str, body: &str| {
            call(
                Method::POST,
                &format!("/api/v1/webhooks/{hook}/roll-secret"),
            )
            .key(key)
            .raw(body)
            .send_to(&stack.router)
        };
        let registered = call(Method::POST, "/api/v1/webhooks")
            .key(&t.key)
            .json(&json!({"event": "surplus.delivered", "url": "https://hooks.example.com/roll"}))
            .send_to(&stack.router)
            .await;
        let hook = registered.body["data"]["id"].as_str().unwrap().to_owned();
        let stored = || async {
            let record = stack
                .api
                .store
                .webhooks()
                .require(t.id(), hook.parse().unwrap())
                .await
                .unwrap();
            (record.sealed_secret, record.previous_sealed_secret)
        };
        let before = stored().await;
        roll(&other.key, &hook, "{}")
            .await
            .expect(404, Some("webhook_not_found"));
        for body in [
            r#"{"overlap_hours": 169}"#,
            r#"{"overlap_hours": -1}"#,
            r#"{"overlap_hours": "24"}"#,
            r#"{"overlap_hours": null}"#,
            r#"{"overlap_hours": 1.5}"#,
            "[]",
        ] {
            roll(&t.key, &hook, body)
                .await
                .expect(422, Some("validation_error"));
        }
        roll(&t.key, &hook, "")
            .await
            .expect(400, Some("invalid_json"));
        roll(&t.key, "not-a-uuid", "{}")
            .await
            .expect(400, Some("invalid_webhook_id"));
        assert_eq!(stored().await, before, "nothing rolled");
        // The longest overlap passes (a whole number written as a float is
        // an integer, as JSON Schema counts), and leaves the secret before.
        let rolled = roll(&t.key, &hook, r#"{"overlap_hours": 168.0}"#).await;
        rolled.expect(200, None);
        let (sealed, previous) = stored().await;
        assert_ne!(sealed, before.0);
        assert_eq!(previous, Some(before.0));
    });
}

/// An instance reads the keyring again `REREAD` after it last did, not
/// before; a reading that fails (the secret unreadable for a while) keeps
/// the ring read before, for eight minutes after it was read (`HELD_FOR`):
/// then every use of the key fails closed, however often it is asked,
/// until a reading succeeds and the ring it reads is used.
#[test]
fn an_instance_reads_the_keyring_again_after_five_minutes_keeps_it_for_eight_when_reads_fail_then_fails_closed()
 {
    run(async {
        // Frozen: the minutes end exactly where the test puts them.
        let clock = Clock::frozen_at(shared::clock::now());
        let source = secret(&"r".repeat(40)).await;
        let KeySource::Secret(arn) = &source else {
            unreachable!()
        };
        let sdk = &harness().await.sdk;
        let ring = shared::keyring::Keyring::new("test key", sdk, Some(source.clone()));
        let versions = || {
            let ring = ring.clone();
            clock.scope(async move { ring.keys().await.map(|k| k.versions()) })
        };
        assert_eq!(versions().await.unwrap(), [1]);
        let rotated = shared::keyring::Keys::parse(&"r".repeat(40))
            .unwrap()
            .rotated("n".repeat(40), clock.now(), None, false)
            .unwrap();
        shared::secrets::put(sdk, arn, &rotated.to_json())
            .await
            .unwrap();
        // Five minutes, as operations.md promises.
        const REREAD: Duration = Duration::from_secs(5 * 60);
        clock.advance(REREAD - Duration::from_secs(1));
        assert_eq!(versions().await.unwrap(), [1], "not read again yet");
        clock.advance(Duration::from_secs(1));
        assert_eq!(versions().await.unwrap(), [2, 1], "read again");

        // The secret cannot be read as a ring from now on: the ring read
        // before goes on, up to eight minutes after it was read.
        shared::secrets::put(sdk, arn, "short").await.unwrap();
        clock.advance(REREAD);
        assert_eq!(versions().await.unwrap(), [2, 1], "kept");
        const HELD_FOR: Duration = Duration::from_secs(8 * 60);
        clock.advance(HELD_FOR - REREAD - Duration::from_secs(1));
        assert_eq!(versions().await.unwrap(), [2, 1], "kept to the last second");
        clock.advance(Duration::from_secs(1));
        assert_eq!(versions().await.unwrap_err().code(), "internal_error");
        clock.advance(Duration::from_secs(3600));
        assert!(versions().await.is_err(), "an hour on, still refused");
        // A new instance, which has read nothing, has nothing to keep.
        let fresh = shared::keyring::Keyring::new("test key", sdk, Some(source.clone()));
        let refused = clock.scope(async move { fresh.keys().await }).await;
        assert_eq!(refused.unwrap_err().code(), "internal_error");
        // Readable again: read at the next use (nothing is served that it
        // could hold back), and used.
        shared::secrets::put(sdk, arn, &rotated.to_json())
            .await
            .unwrap();
        assert_eq!(versions().await.unwrap(), [2, 1]);
    });
}

/// A keyed request whose attempt never answered before the cursor key
/// rotated (its claim lapsed) goes on as the same request after: its
/// fingerprint under the old generation still matches, so the retry
/// continues its claim (the request id kept) instead of starting anew.
#[test]
fn a_request_claimed_before_the_cursor_key_rotated_goes_on_as_itself_after() {
    run(async {
        let clock = Clock::default();
        let source = secret(&"f".repeat(40)).await;
        let (router, state) = instance(&clock, |c| c.http.cursor_key = Some(source.clone())).await;
        let config = (*state.config).clone();
        let t = org().await;
        let key_id = api_tests::key_id(&t).await;
        let body = json!({"name": unique("Claimed before")});
        let (parts, ()) = http::Request::builder()
            .method(Method::POST)
            .uri("/api/v1/sites")
            .header("content-type", "application/json")
            .body(())
            .unwrap()
            .into_parts();
        let cursors = state.cursors.clone();
        let bytes = body.to_string();
        let fingerprint = clock
            .scope(async move {
                shared::http::idempotency::fingerprint_of(&cursors, &parts, bytes.as_bytes()).await
            })
            .await
            .unwrap();
        // An attempt claimed the key and died: its lease has run out.
        let now = u64::try_from(clock.now().timestamp_millis()).unwrap();
        let store = &state.store;
        let shared::store::exactly_once::idempotency::Claimed::Ours(claim) = store
            .idempotency()
            .claim(
                key_id,
                "claimed-before",
                &fingerprint.into(),
                now,
                now,
                now + 86_400_000,
            )
            .await
            .unwrap()
        else {
            panic!("the key was free");
        };

        admin_on(&config, &clock, &["keys", "rotate", "--key", "cursor"])
            .await
            .expect("keys rotate");
        clock.advance(PAST_THE_ROLLOUT);
        let retry = call(Method::POST, "/api/v1/sites")
            .key(&t.key)
            .header("idempotency-key", "claimed-before")
            .json(&body)
            .send_to(&router)
            .await;
        retry.expect(201, None);
        let item = store
            .idempotency()
            .get(key_id, "claimed-before")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            item["rid"].as_s().unwrap(),
            &claim.request.to_string(),
            "the same request"
        );
        assert!(
            item["fp"].as_s().unwrap().starts_with("k2:"),
            "now under the new generation"
        );
    });
}

/// A second roll during the first one's overlap: the secret before it
/// signs beside the new one for the second roll's overlap, and the oldest
/// no longer signs at all (two secrets at most); read back through the
/// webhook's own answer.
#[test]
fn a_second_roll_during_the_overlap_keeps_the_secret_before_it_and_drops_the_oldest() {
    run(async {
        let clock = Clock::default();
        let stack = stack_by(&clock, false, |_| {}).await;
        let t = stack.org().await;
        let receiver = Receiver::start(vec![]).await;
        let registered = call(Method::POST, "/api/v1/webhooks")
            .key(&t.key)
            .json(&json!({"event": "surplus.delivered", "url": format!("{}/twice", receiver.base)}))
            .send_to(&stack.router)
            .await;
        registered.expect(201, None);
        let hook = registered.body["data"]["id"].as_str().unwrap().to_owned();
        let secret = |reply: &Reply| reply.body["data"]["secret"].as_str().unwrap().to_owned();
        let roll = |hours: u32| {
            call(
                Method::POST,
                &format!("/api/v1/webhooks/{hook}/roll-secret"),
            )
            .key(&t.key)
            .json(&json!({"overlap_hours": hours}))
            .send_to(&stack.router)
        };
        let first = secret(&registered);
        let once = roll(24).await;
        once.expect(200, None);
        let second = secret(&once);
        clock.advance(Duration::from_secs(60));
        let twice = roll(1).await;
        twice.expect(200, None);
        let third = secret(&twice);
        // The overlap it answers is the second roll's: an hour.
        overlap_ends_in_an_hour(&twice, &clock);

        deliver_a_load(&stack, &t).await;
        stack.drain_until_received(&receiver, 1).await;
        let during = &at(&receiver, "/twice")[0];
        assert!(during.signed_with(&third) && during.signed_with(&second));
        assert!(!during.signed_with(&first), "the oldest signs no more");
        assert_eq!(
            during.header("webhook-signature").split(' ').count(),
            2,
            "two secrets at most"
        );
        clock.advance(Duration::from_secs(3601));
        deliver_a_load(&stack, &t).await;
        stack.drain_until_received(&receiver, 2).await;
        let after = &at(&receiver, "/twice")[1];
        assert!(after.signed_with(&third));
        assert!(!after.signed_with(&second) && !after.signed_with(&first));
    });
}
