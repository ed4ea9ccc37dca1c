//! Keys rotate without anyone noticing (`shared::keyring`, `admin keys`,
//! `admin reseal`): the cursor key and the seal key rotated through the
//! operator's commands, on secrets in Secrets Manager (moto), while
//! integrators' cursors, keyed requests and webhooks go on.

use std::time::Duration;

use admin::audit::Done;
use admin::cli::Cli;
use api_tests::*;
use axum::Router;
use base64::Engine;
use clap::Parser;
use http::Method;
use serde_json::{Value, json};
use shared::AppState;
use shared::clock::Clock;
use shared::config::Config;
use shared::deployment_key::KeySource;

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
async fn instance(clock: &Clock, change: impl FnOnce(&mut Config)) -> (Router, AppState) {
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
        let (router, state) = instance(&clock, |c| c.cursor_key = Some(source.clone())).await;
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
        assert_eq!(
            shown.lines[0]["generations"],
            json!([
                {"version": 2, "signs": true, "held": true,
                 "from": generations[0]["from"], "until": null},
                {"version": 1, "signs": false, "held": false,
                 "from": null, "until": generations[1]["until"]},
            ])
        );
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
