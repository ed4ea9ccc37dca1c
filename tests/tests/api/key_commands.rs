//! No operator's key command, with any flags and in any order, loses a
//! value (`admin keys rotate|drop`, `admin reseal`; `shared::keyring`):
//! what would is refused, saying what to do instead; a leaked key is
//! replaced at once and refused as soon as the instances' caches allow;
//! a ring no command could make fails closed. Each command's effect is
//! read back as operators read it (`admin keys show`, `admin reseal
//! --check`, the audit trail).

use std::time::Duration;

use api_tests::webhooks::Receiver;
use api_tests::*;
use axum::Router;
use http::Method;
use serde_json::{Value, json};
use shared::clock::Clock;
use shared::config::Config;
use shared::deployment_key::KeySource;
use shared::state::AppState;

use crate::rotation::{admin_on, audited, check, deliver_a_load, instance, sealed_stack, secret};

/// Another instance of `config`'s deployment (a container started now),
/// by `clock`: it has read no keyring yet.
async fn another_instance(config: &Config, clock: &Clock) -> Router {
    let mut state = AppState::new(config.clone(), &harness().await.sdk);
    state.clock = clock.clone();
    shared::http::app(local::routes(), state)
}

/// `admin keys show --key <key>`'s generations, each as (version, signs,
/// held).
async fn generations(config: &Config, clock: &Clock, key: &str) -> Vec<(u64, bool, bool)> {
    let shown = admin_on(config, clock, &["keys", "show", "--key", key])
        .await
        .expect("keys show");
    shown.lines[0]["generations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["version"].as_u64().unwrap(),
                g["signs"].as_bool().unwrap(),
                g["held"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// The text of the secret behind `source`.
async fn secret_text(source: &KeySource) -> String {
    let KeySource::Secret(arn) = source else {
        unreachable!("a secret")
    };
    shared::secrets::fetch(&harness().await.sdk, arn)
        .await
        .unwrap()
}

const MINUTE: Duration = Duration::from_secs(60);

#[test]
fn the_seal_key_takes_no_overlap_and_a_leaked_one_is_replaced_at_once_losing_nothing() {
    run(async {
        let clock = Clock::frozen_at(shared::clock::now());
        let source = secret(&"s".repeat(40)).await;
        let stack = sealed_stack(&clock, &source).await;
        let config = (*stack.api.config).clone();
        let t = stack.org().await;
        let receiver = Receiver::start(vec![]).await;
        let register = |router: &Router, path: &str, idempotency_key: Option<&str>| {
            let mut c = call(Method::POST, "/api/v1/webhooks")
                .key(&t.key)
                .json(&json!({
                    "event": "surplus.delivered",
                    "url": format!("{}/{path}", receiver.base),
                }));
            if let Some(key) = idempotency_key {
                c = c.header("idempotency-key", key);
            }
            let router = router.clone();
            async move { c.send_to(&router).await }
        };
        let secret_of = |reply: &Reply| reply.body["data"]["secret"].as_str().unwrap().to_owned();
        // Every delivery that reached `path` is signed with `secret`.
        let signed = |path: &str, secret: &str, count: usize| {
            let got: Vec<_> = receiver
                .requests()
                .into_iter()
                .filter(|r| r.path == path)
                .collect();
            assert_eq!(got.len(), count, "deliveries at {path}");
            assert!(got.iter().all(|r| r.signed_with(secret)), "{path}: signed");
        };

        // Before: a webhook registered with a key (its secret and its kept
        // answer sealed), and one delivery, by instances that have read
        // the ring (version 1).
        let first = register(&stack.router, "one", Some("hook-1")).await;
        first.expect(201, None);
        let one = secret_of(&first);
        deliver_a_load(&stack, &t).await;
        stack.drain_until_received(&receiver, 1).await;
        signed("/one", &one, 1);

        // An overlap for the seal key would end version 1 while values
        // are sealed with it: refused, saying what to do, nothing written.
        let before = secret_text(&source).await;
        for hours in ["0", "24"] {
            let refused = admin_on(
                &config,
                &clock,
                &["keys", "rotate", "--key", "seal", "--overlap-hours", hours],
            )
            .await
            .expect_err("the seal key takes no overlap");
            let message = refused.to_string();
            assert!(message.contains("takes no overlap"), "{message}");
            assert!(message.contains("admin reseal"), "{message}");
            assert!(message.contains("--now"), "{message}");
        }
        assert_eq!(secret_text(&source).await, before, "the ring unchanged");
        assert_eq!(
            generations(&config, &clock, "seal").await,
            [(1, true, true)]
        );

        // Leaked: a new generation seals at once; version 1 still opens.
        let rotated = admin_on(
            &config,
            &clock,
            &["keys", "rotate", "--key", "seal", "--now"],
        )
        .await
        .expect("keys rotate --now");
        assert_eq!(rotated.lines[0]["generations"][0]["signs"], true);
        clock.advance(Duration::from_secs(1));
        assert_eq!(
            generations(&config, &clock, "seal").await,
            [(2, true, true), (1, false, true)]
        );
        // A container started now seals with version 2 ...
        let fresh = another_instance(&config, &clock).await;
        let second = register(&fresh, "two", None).await;
        second.expect(201, None);
        let two = secret_of(&second);
        assert_eq!(
            check(&config, &clock).await,
            json!({"seals_with": 2, "sealed": {"1": 2, "2": 1}, "need_an_old_version": 2})
        );
        // ... and the instances that read the ring before open what it
        // sealed (they read the ring again on meeting version 2), while
        // they still seal with version 1 until they read it again.
        deliver_a_load(&stack, &t).await;
        stack.drain_until_received(&receiver, 3).await;
        signed("/one", &one, 2);
        signed("/two", &two, 1);

        // Resealed at once, but version 1 cannot go yet: an instance that
        // read the ring before may still seal with it.
        let resealed = admin_on(&config, &clock, &["reseal"])
            .await
            .expect("reseal");
        assert_eq!(resealed.lines[0]["resealed"], 2);
        assert_eq!(resealed.lines[0]["unopenable"], 0);
        let drop_1 = ["keys", "drop", "--key", "seal", "--version", "1"];
        let early = admin_on(&config, &clock, &drop_1)
            .await
            .expect_err("instances may still seal with version 1");
        assert!(early.to_string().contains("drop it from"), "{early}");
        let third = register(&fresh, "three", Some("hook-3")).await;
        third.expect(201, None);
        let three = secret_of(&third);

        // Ten minutes on, every instance seals with version 2; what was
        // sealed with 1 meanwhile is resealed, and only then 1 goes.
        clock.advance(10 * MINUTE);
        admin_on(&config, &clock, &["reseal"])
            .await
            .expect("reseal");
        assert_eq!(check(&config, &clock).await["need_an_old_version"], 0);
        admin_on(&config, &clock, &drop_1).await.expect("keys drop");
        assert_eq!(
            generations(&config, &clock, "seal").await,
            [(2, true, true)]
        );
        clock.advance(shared::keyring::REREAD + Duration::from_secs(1));

        // Nothing was lost: every webhook delivers signed with the secret
        // its owner was given, and every kept answer replays.
        deliver_a_load(&stack, &t).await;
        stack.drain_until_received(&receiver, 6).await;
        signed("/one", &one, 3);
        signed("/two", &two, 2);
        signed("/three", &three, 1);
        for (name, path, kept) in [("hook-1", "one", &first), ("hook-3", "three", &third)] {
            let again = register(&stack.router, path, Some(name)).await;
            assert_eq!((again.status.as_u16(), &again.text), (201, &kept.text));
            assert_eq!(again.header("idempotent-replayed"), "true");
        }
        let swept = admin_on(&config, &clock, &["reseal"])
            .await
            .expect("reseal");
        assert_eq!(swept.lines[0]["unopenable"], 0);
        assert_eq!(swept.lines[0]["need_an_old_version"], 0);
        assert!(stack.dead_letters().await.is_empty(), "no delivery failed");

        let step = |c: &str, o: &str| (c.to_owned(), o.to_owned());
        let trail = audited(&config, &clock).await;
        assert_eq!(
            trail,
            [
                step("keys rotate", "refused"),
                step("keys rotate", "refused"),
                step("keys rotate", "succeeded"),
                step("reseal", "succeeded"),
                step("keys drop", "refused"),
                step("reseal", "succeeded"),
                step("keys drop", "succeeded"),
                step("reseal", "succeeded"),
            ]
        );
    });
}

#[test]
fn no_command_leaves_the_cursor_key_without_a_generation_that_signs() {
    run(async {
        let clock = Clock::frozen_at(shared::clock::now());
        let source = secret(&"c".repeat(40)).await;
        let (_, state) = instance(&clock, |c| c.http.cursor_key = Some(source.clone())).await;
        let config = (*state.config).clone();
        let drop = |version: &'static str| {
            let (config, clock) = (config.clone(), clock.clone());
            async move {
                admin_on(
                    &config,
                    &clock,
                    &["keys", "drop", "--key", "cursor", "--version", version],
                )
                .await
            }
        };
        admin_on(
            &config,
            &clock,
            &["keys", "rotate", "--key", "cursor", "--overlap-hours", "0"],
        )
        .await
        .expect("keys rotate");
        // Version 2, the newest, is all that signs from its start on:
        // never dropped, before it signs or after.
        for wait in [Duration::ZERO, 11 * MINUTE, Duration::from_secs(3 * 86_400)] {
            clock.advance(wait);
            let refused = drop("2").await.expect_err("nothing would sign");
            let message = refused.to_string();
            assert!(message.contains("newest"), "{message}");
            assert_eq!(
                generations(&config, &clock, "cursor").await.len(),
                2,
                "both kept"
            );
        }
        // Version 1, which no longer signs, goes.
        drop("1").await.expect("keys drop");
        assert_eq!(
            generations(&config, &clock, "cursor").await,
            [(2, true, true)]
        );
        // The last generation never goes.
        drop("2").await.expect_err("the last generation");
        assert_eq!(
            generations(&config, &clock, "cursor").await,
            [(2, true, true)]
        );
    });
}

#[test]
fn a_ring_with_nothing_that_signs_refuses_keyed_requests_instead_of_replaying_another() {
    run(async {
        let clock = Clock::frozen_at(shared::clock::now());
        let source = secret(&"d".repeat(40)).await;
        let (router, state) = instance(&clock, |c| c.http.cursor_key = Some(source.clone())).await;
        let t = org().await;
        let site = |name: &str| {
            call(Method::POST, "/api/v1/sites")
                .key(&t.key)
                .header("idempotency-key", "only-one")
                .json(&json!({"name": name}))
                .send_to(&router)
        };
        let first = site("First").await;
        first.expect(201, None);
        // A ring no command makes (edited by hand): version 1 ends now.
        let KeySource::Secret(arn) = &source else {
            unreachable!()
        };
        let sdk = &harness().await.sdk;
        let until = clock.now().to_rfc3339();
        let ended = json!({"keys": [{"version": 1, "key": "d".repeat(40), "until": until}]});
        shared::secrets::put(sdk, arn, &ended.to_string())
            .await
            .unwrap();
        clock.advance(shared::keyring::REREAD);
        // Another request under the used key: refused, not answered with
        // the first one's answer; and the first one's retry too (it cannot
        // be told apart); nothing is created.
        for name in ["Second", "First"] {
            let refused = site(name).await;
            refused.expect(500, Some("internal_error"));
            assert_ne!(refused.header("idempotent-replayed"), "true");
        }
        let names: Vec<String> = state
            .store
            .records::<shared::model::site::SiteRecord>()
            .list(t.id(), shared::model::archive::StatusFilter::All)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["First"]);
        // A request without a key needs no fingerprint: it goes.
        call(Method::GET, "/api/v1/sites")
            .key(&t.key)
            .send_to(&router)
            .await
            .expect(200, None);
        // The ring mended: the first request replays, another is refused.
        shared::secrets::put(sdk, arn, &"d".repeat(40))
            .await
            .unwrap();
        clock.advance(shared::keyring::REREAD);
        let again = site("First").await;
        assert_eq!((again.status.as_u16(), &again.text), (201, &first.text));
        site("Second")
            .await
            .expect(422, Some("idempotency_key_reused"));
    });
}

/// The generation a cursor names (`k`; 1 when none).
fn signer_of(cursor: &str) -> u64 {
    use base64::Engine;
    let (payload, _) = cursor.split_once('.').unwrap();
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    let payload: Value = serde_json::from_slice(&payload).unwrap();
    payload["k"].as_u64().unwrap_or(1)
}

#[test]
fn a_leaked_cursor_key_is_refused_as_soon_as_instances_read_the_ring_and_keyed_retries_still_replay()
 {
    run(async {
        let clock = Clock::frozen_at(shared::clock::now());
        let source = secret(&"l".repeat(40)).await;
        let (stale, state) = instance(&clock, |c| c.http.cursor_key = Some(source.clone())).await;
        let config = (*state.config).clone();
        let t = org().await;
        let site = crate::sites::new_site(&t, json!({"name": "Origin"})).await;
        for _ in 0..3 {
            crate::surpluses::new_load(&t, &site).await;
        }
        let page = |router: &Router, cursor: Option<&str>| {
            let path = match cursor {
                Some(cursor) => format!("/api/v1/surpluses?limit=1&cursor={cursor}"),
                None => "/api/v1/surpluses?limit=1".to_owned(),
            };
            let (c, router) = (call(Method::GET, &path).key(&t.key), router.clone());
            async move { c.send_to(&router).await }
        };
        let next = |reply: &Reply| {
            reply.body["meta"]["next_cursor"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        let leaked = next(&page(&stale, None).await);
        assert_eq!(signer_of(&leaked), 1);
        let keyed = |router: &Router, name: &str| {
            let c = call(Method::POST, "/api/v1/sites")
                .key(&t.key)
                .header("idempotency-key", "before-the-leak")
                .json(&json!({"name": name}));
            let router = router.clone();
            async move { c.send_to(&router).await }
        };
        let made = keyed(&stale, "Keyed").await;
        made.expect(201, None);

        admin_on(
            &config,
            &clock,
            &["keys", "rotate", "--key", "cursor", "--now"],
        )
        .await
        .expect("keys rotate --now");
        clock.advance(Duration::from_secs(1));
        assert_eq!(
            generations(&config, &clock, "cursor").await,
            [(2, true, true), (1, false, false)]
        );
        // An instance that reads the ring now refuses the leaked key's
        // cursors at once, and signs with the new one.
        let fresh = another_instance(&config, &clock).await;
        page(&fresh, Some(&leaked))
            .await
            .expect(422, Some("invalid_cursor"));
        let new = next(&page(&fresh, None).await);
        assert_eq!(signer_of(&new), 2);
        // A keyed request first sent to the new instance (fingerprinted
        // with version 2), sent again to one that read the ring before:
        // the same request, replayed (it reads the ring again on meeting
        // a fingerprint of version 2).
        let fresh_keyed = |router: &Router, name: &str| {
            let c = call(Method::POST, "/api/v1/sites")
                .key(&t.key)
                .header("idempotency-key", "after-the-leak")
                .json(&json!({"name": name}));
            let router = router.clone();
            async move { c.send_to(&router).await }
        };
        let after = fresh_keyed(&fresh, "After").await;
        after.expect(201, None);
        let again = fresh_keyed(&stale, "After").await;
        assert_eq!((again.status.as_u16(), &again.text), (201, &after.text));
        assert_eq!(again.header("idempotent-replayed"), "true");
        // One that read it before takes the new cursor, and refuses the
        // leaked one from then on.
        page(&stale, Some(&new)).await.expect(200, None);
        page(&stale, Some(&leaked))
            .await
            .expect(422, Some("invalid_cursor"));
        // The keyed request made before is still the request it was.
        let replayed = keyed(&fresh, "Keyed").await;
        assert_eq!(
            (replayed.status.as_u16(), &replayed.text),
            (201, &made.text)
        );
        assert_eq!(replayed.header("idempotent-replayed"), "true");
        keyed(&fresh, "Other")
            .await
            .expect(422, Some("idempotency_key_reused"));
    });
}

#[test]
fn a_second_rotation_and_a_drop_read_back_as_operators_see_them() {
    run(async {
        let clock = Clock::frozen_at(shared::clock::now());
        let source = secret(&"r".repeat(40)).await;
        let (_, state) = instance(&clock, |c| c.http.cursor_key = Some(source.clone())).await;
        let config = (*state.config).clone();
        let rotate = ["keys", "rotate", "--key", "cursor", "--overlap-hours", "1"];
        admin_on(&config, &clock, &rotate).await.expect("rotate");
        clock.advance(MINUTE);
        admin_on(&config, &clock, &rotate)
            .await
            .expect("rotate again");
        let shown = admin_on(&config, &clock, &["keys", "show", "--key", "cursor"])
            .await
            .unwrap();
        let g = &shown.lines[0]["generations"];
        let time = |v: &Value| -> chrono::DateTime<chrono::Utc> {
            serde_json::from_value(v.clone()).unwrap()
        };
        let t0 = time(&g[1]["from"]) - chrono::TimeDelta::minutes(10);
        let minutes = chrono::TimeDelta::minutes;
        // Three generations: 3 from 0:11, 2 from 0:10 until 1:11, 1 until
        // 1:10 (where the first rotation put it), none signing yet but 1.
        assert_eq!(g.as_array().unwrap().len(), 3);
        assert_eq!(
            (
                g[0]["version"].as_u64(),
                g[1]["version"].as_u64(),
                g[2]["version"].as_u64()
            ),
            (Some(3), Some(2), Some(1))
        );
        assert_eq!(time(&g[0]["from"]), t0 + minutes(11));
        assert!(g[0]["until"].is_null());
        assert_eq!(time(&g[1]["until"]), t0 + minutes(71));
        assert_eq!(time(&g[2]["until"]), t0 + minutes(70));
        assert_eq!(g[2]["signs"], true);
        // Version 2 signed from 0:10 to 0:11: it goes a day and ten
        // minutes after.
        assert_eq!(
            time(&g[1]["droppable_from"]),
            t0 + minutes(21) + chrono::TimeDelta::days(1)
        );
        clock.advance(Duration::from_secs(86_400 + 20 * 60));
        admin_on(
            &config,
            &clock,
            &["keys", "drop", "--key", "cursor", "--version", "2"],
        )
        .await
        .expect("drop version 2");
        assert_eq!(
            generations(&config, &clock, "cursor").await,
            [(3, true, true), (1, false, false)]
        );
    });
}

/// A key whose item names a generation of the cursor key that no ring
/// lists (a newer one the instance reads for, then never finds): the ring
/// is read once, and the request is another request (422), at once.
#[test]
fn a_fingerprint_of_a_generation_no_ring_lists_is_another_requests_after_one_reading() {
    run(async {
        let clock = Clock::frozen_at(shared::clock::now());
        let source = secret(&"g".repeat(40)).await;
        let (router, state) = instance(&clock, |c| c.http.cursor_key = Some(source.clone())).await;
        let t = org().await;
        let key_id = api_tests::key_id(&t).await;
        let now = u64::try_from(clock.now().timestamp_millis()).unwrap();
        let claimed = state
            .store
            .idempotency()
            .claim(
                key_id,
                "named-by-99",
                &"k99:0000".to_owned().into(),
                now,
                now + 30_000,
                now + 86_400_000,
            )
            .await
            .unwrap();
        assert!(matches!(
            claimed,
            shared::store::exactly_once::idempotency::Claimed::Ours(_)
        ));
        let sent = call(Method::POST, "/api/v1/sites")
            .key(&t.key)
            .header("idempotency-key", "named-by-99")
            .json(&json!({"name": "Never"}))
            .send_to(&router);
        let reply = tokio::time::timeout(Duration::from_secs(20), sent)
            .await
            .expect("answered, not read for again and again");
        reply.expect(422, Some("idempotency_key_reused"));
    });
}

/// A key reused for another request is refused in one claim: the ring is
/// read again only for a fingerprint of a generation it does not list,
/// not for one of a generation it lists (the fingerprint of another
/// body), which costs no second claim.
#[test]
fn a_key_reused_for_another_body_is_refused_in_one_claim() {
    run(async {
        let t = org().await;
        let site = |name: &str| {
            call(Method::POST, "/api/v1/sites")
                .key(&t.key)
                .header("idempotency-key", "one-claim")
                .json(&json!({"name": name}))
                .send()
        };
        site("First").await.expect(201, None);
        let first = site("Second").await;
        first.expect(422, Some("idempotency_key_reused"));
        // Both warm: the key's admission and one claim, as a replay's
        // (whose claim finds the kept answer), and the rate-limit slot a
        // refusal gives back.
        let replayed = site("First").await;
        assert_eq!(replayed.header("idempotent-replayed"), "true");
        let reused = site("Second").await;
        reused.expect(422, Some("idempotency_key_reused"));
        assert_eq!(reused.ddb_calls, replayed.ddb_calls + 1, "one claim");
    });
}

/// Two `admin keys rotate` at once, a hundred times: each ring ends with
/// every rotation a command reported, under the version it reported, and
/// a command that lost the race wrote nothing and says to run it again
/// (the write is a compare-and-swap on the secret's current version:
/// `shared::secrets::replace`). Before it, both read the ring, both wrote,
/// both reported version 2, and the ring kept one of them.
#[test]
fn two_rotations_at_once_never_lose_one() {
    const TRIALS: usize = 100;
    run(async {
        let clock = Clock::frozen_at(shared::clock::now());
        let rotate = ["keys", "rotate", "--key", "cursor", "--overlap-hours", "1"];
        let mut raced = 0;
        for trial in 0..TRIALS {
            let source = secret(&"r".repeat(40)).await;
            let (_, state) = instance(&clock, |c| c.http.cursor_key = Some(source.clone())).await;
            let config = (*state.config).clone();
            let (a, b) = tokio::join!(
                admin_on(&config, &clock, &rotate),
                admin_on(&config, &clock, &rotate)
            );
            let mut reported = Vec::new();
            for outcome in [a, b] {
                match outcome {
                    Ok(done) => reported.push(done.made.unwrap()["version"].as_u64().unwrap()),
                    Err(error) => {
                        assert!(
                            format!("{error:#}").contains("run it again"),
                            "trial {trial}: {error:#}"
                        );
                        raced += 1;
                    }
                }
            }
            reported.sort_unstable();
            let ring: Vec<u64> = generations(&config, &clock, "cursor")
                .await
                .into_iter()
                .map(|(version, _, _)| version)
                .filter(|version| *version > 1)
                .rev()
                .collect();
            assert_eq!(
                ring, reported,
                "trial {trial}: the ring against what was reported"
            );
            assert!(!reported.is_empty(), "trial {trial}: one of the two wins");
        }
        // The two met: the swap, not the timing, kept each ring whole.
        assert!(raced > 0, "no trial had the two rotations race");
    });
}
