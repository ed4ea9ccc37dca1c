//! The operators' audit trail (`admin::audit`): every `admin` command that
//! changes something leaves, in the table and before it answers, a record
//! of who ran it (the caller's AWS identity, as STS names it), when, what,
//! on what, and how it ended, refusals included; never a secret.
//! `admin audit list` reads them back, newest first.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use admin::audit::{Action, Auditor, Done};
use admin::cli::Cli;
use api_tests::{harness, org, run};
use clap::Parser;
use serde_json::{Value, json};
use uuid::Uuid;

/// `admin <args>`, as the CLI runs it, on the tests' table.
pub(crate) async fn admin(args: &[&str]) -> anyhow::Result<Done> {
    let h = harness().await;
    let cli = Cli::try_parse_from(std::iter::once("admin").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    admin::cli::run(cli.command, &h.state.config, &h.sdk).await
}

/// `admin audit list <args>`: the records, newest first.
async fn trail(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["audit", "list"];
    all.extend_from_slice(args);
    admin(&all).await.expect("audit list").lines
}

/// The operator as STS names the caller here.
async fn caller() -> String {
    let h = harness().await;
    Auditor::new(&h.sdk, h.store().clone())
        .await
        .expect("STS answers")
        .operator()
        .to_owned()
}

/// `records` as (command, outcome) pairs, oldest first.
fn steps(records: &[Value]) -> Vec<(String, String)> {
    records
        .iter()
        .rev()
        .map(|r| {
            (
                r["command"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_key_made_by_an_operator_is_audited_as_the_caller_and_its_secret_is_not() {
    run(async {
        let t = org().await;
        let id = t.id().to_string();
        // When an operator creates a key
        let done = admin(&[
            "create-key",
            "--org",
            &id,
            "--scope",
            "read:data",
            "--label",
            "ci",
        ])
        .await
        .unwrap();
        let key = done.lines[0]["api_key"].as_str().unwrap().to_owned();
        api_tests::logs::remember(&key);
        let key_id = done.lines[0]["key_id"].clone();
        // Then its organization's trail has the start and the success,
        // newest first, one command id, the caller's identity.
        let records = trail(&["--org", &id]).await;
        assert_eq!(
            steps(&records),
            [
                ("create-key".into(), "started".into()),
                ("create-key".into(), "succeeded".into())
            ]
        );
        let (succeeded, started) = (&records[0], &records[1]);
        assert_eq!(succeeded["id"], started["id"]);
        assert!(succeeded["at"].as_str() >= started["at"].as_str());
        let operator = caller().await;
        assert!(operator.starts_with("arn:aws:"), "{operator}");
        for record in &records {
            assert_eq!(record["operator"], operator);
            assert_eq!(record["org_id"], id);
            assert_eq!(record["target"]["scopes"], json!(["read:data"]));
            assert_eq!(record["target"]["label"], "ci");
        }
        assert_eq!(succeeded["target"]["made"]["key_id"], key_id);
        assert!(started["target"].get("made").is_none());
        // The key is in the command's answer only.
        let stored = serde_json::to_string(&records).unwrap();
        assert!(!stored.contains(&key), "{stored}");
    });
}

#[test]
fn a_registered_webhooks_secret_is_printed_once_and_kept_out_of_the_trail() {
    run(async {
        let t = org().await;
        let id = t.id().to_string();
        let done = admin(&[
            "webhooks",
            "register",
            "--org",
            &id,
            "--url",
            "https://hooks.example.com/services/T0001/B0002/XyzSecretPath?token=abc",
        ])
        .await
        .unwrap();
        // The secret is in the answer, apart from any audit.
        assert_eq!(done.lines.len(), 1);
        let secret = done.lines[0]["secret"].as_str().unwrap().to_owned();
        api_tests::logs::remember(&secret);
        assert!(done.lines[0].get("audit").is_none());
        let records = trail(&["--org", &id]).await;
        assert_eq!(records[0]["command"], "webhooks register");
        assert_eq!(records[0]["outcome"], "succeeded");
        assert_eq!(
            records[0]["target"]["made"]["webhook_id"],
            done.lines[0]["webhook"]["id"]
        );
        // The address's origin only: its path and query may carry a
        // credential (Slack's and Discord's carry it in the path).
        assert_eq!(records[0]["target"]["url"], "https://hooks.example.com");
        let stored = serde_json::to_string(&records).unwrap();
        assert!(!stored.contains(&secret) && !stored.contains("token=abc"));
        assert!(!stored.contains("XyzSecretPath") && !stored.contains("/services/"));
    });
}

#[test]
fn refusals_are_audited_with_their_code_and_reads_are_not_audited() {
    run(async {
        let t = org().await;
        let id = t.id().to_string();
        let missing = Uuid::now_v7().to_string();
        // A key that is not there, a truck that is not there.
        let refused = admin(&["revoke-key", "--org", &id, "--key-id", &missing]).await;
        assert!(refused.is_err());
        let refused = admin(&["retire-truck", "--org", &id, "--truck", &missing]).await;
        assert!(refused.is_err());
        // An expiry in the past: refused before anything is written.
        let refused = admin(&[
            "create-key",
            "--org",
            &id,
            "--scope",
            "*",
            "--expires-at",
            "2020-01-01T00:00:00Z",
        ])
        .await;
        assert!(refused.is_err());
        // Reads leave nothing.
        admin(&["list-keys", "--org", &id]).await.unwrap();
        admin(&["webhooks", "list", "--org", &id]).await.unwrap();
        let records = trail(&["--org", &id]).await;
        assert_eq!(
            steps(&records),
            [
                ("revoke-key".into(), "started".into()),
                ("revoke-key".into(), "refused".into()),
                ("retire-truck".into(), "started".into()),
                ("retire-truck".into(), "refused".into()),
                ("create-key".into(), "started".into()),
                ("create-key".into(), "refused".into()),
            ]
        );
        assert_eq!(records[4]["code"], "api_key_not_found");
        assert_eq!(records[4]["target"]["key_id"], missing);
        assert_eq!(records[0]["code"], "validation_error");
        assert!(records[0]["message"].as_str().unwrap().contains("past"));
    });
}

#[test]
fn every_command_that_changes_something_is_audited() {
    run(async {
        let t = org().await;
        let id = t.id().to_string();
        let ok = |done: anyhow::Result<Done>| done.unwrap();
        ok(admin(&["entitlement", "--org", &id, "--enabled", "true"]).await);
        ok(admin(&[
            "add-admin",
            "--org",
            &id,
            "--first-name",
            "Aino",
            "--last-name",
            "Operator",
            "--phone",
            "+358401112223",
        ])
        .await);
        let key = ok(admin(&["create-key", "--org", &id, "--scope", "*"]).await);
        api_tests::logs::remember(key.lines[0]["api_key"].as_str().unwrap());
        let key_id = key.lines[0]["key_id"].as_str().unwrap().to_owned();
        ok(admin(&["revoke-key", "--org", &id, "--key-id", &key_id]).await);
        let hook = ok(admin(&[
            "webhooks",
            "register",
            "--org",
            &id,
            "--url",
            "https://hooks.example.com/a",
        ])
        .await);
        api_tests::logs::remember(hook.lines[0]["secret"].as_str().unwrap());
        let hook_id = hook.lines[0]["webhook"]["id"].as_str().unwrap().to_owned();
        ok(admin(&["webhooks", "delete", "--org", &id, "--webhook", &hook_id]).await);
        ok(admin(&["deactivate-org", "--org", &id]).await);
        let records = trail(&["--org", &id]).await;
        let commands: Vec<String> = steps(&records)
            .into_iter()
            .filter(|(_, outcome)| outcome == "succeeded")
            .map(|(command, _)| command)
            .collect();
        assert_eq!(
            commands,
            [
                "entitlement",
                "add-admin",
                "create-key",
                "revoke-key",
                "webhooks register",
                "webhooks delete",
                "deactivate-org"
            ]
        );
        assert_eq!(records.len(), 14, "a start and an outcome each");
        // The member's name and number stay in the member record.
        let stored = serde_json::to_string(&records).unwrap();
        assert!(!stored.contains("+358401112223") && !stored.contains("Aino"));
        // An organization made by an operator: its trail starts there.
        let made = ok(admin(&["create-org", "--name", &api_tests::unique("Audited")]).await);
        let new_id = made.lines[0]["org"]["id"].as_str().unwrap().to_owned();
        let records = trail(&["--org", &new_id]).await;
        assert_eq!(steps(&records), [("create-org".into(), "succeeded".into())]);
        assert_eq!(records[0]["target"]["made"]["org_id"], new_id);
    });
}

#[test]
fn the_trail_reads_newest_first_within_times_across_organizations() {
    run(async {
        let (a, b) = (org().await, org().await);
        let (a_id, b_id) = (a.id().to_string(), b.id().to_string());
        let since = chrono::Utc::now().to_rfc3339();
        admin(&["entitlement", "--org", &a_id, "--enabled", "true"])
            .await
            .unwrap();
        let between = chrono::Utc::now().to_rfc3339();
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        admin(&["entitlement", "--org", &b_id, "--enabled", "true"])
            .await
            .unwrap();
        // Every organization's records (other tests' too), from `since`.
        let all = trail(&["--since", &since, "--limit", "1000"]).await;
        let ours: Vec<&Value> = all
            .iter()
            .filter(|r| r["org_id"] == a_id || r["org_id"] == b_id)
            .collect();
        let orgs: Vec<&str> = ours.iter().map(|r| r["org_id"].as_str().unwrap()).collect();
        assert_eq!(orgs, [&b_id, &b_id, &a_id, &a_id], "newest first");
        let times: Vec<&str> = all.iter().map(|r| r["at"].as_str().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] >= w[1]));
        assert!(
            times
                .iter()
                .all(|at| *at >= since.as_str().get(..19).unwrap())
        );
        // Up to `between`: the first organization's only.
        let early = trail(&["--since", &since, "--until", &between, "--limit", "1000"]).await;
        assert!(early.iter().any(|r| r["org_id"] == a_id));
        assert!(early.iter().all(|r| r["org_id"] != b_id));
        // One organization's, and a limit.
        let one = trail(&["--org", &b_id, "--limit", "1"]).await;
        assert_eq!(one.len(), 1);
        assert_eq!(one[0]["outcome"], "succeeded");
    });
}

#[test]
fn nothing_runs_unless_its_audit_record_is_written() {
    run(async {
        let h = harness().await;
        // A table that is not there: the start cannot be recorded.
        let store = shared::store::Store::new(
            shared::store::Store::client(&h.sdk),
            format!("missing-{}", Uuid::now_v7()),
        );
        let auditor = Auditor::new(&h.sdk, store).await.unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let work = {
            let ran = ran.clone();
            async move {
                ran.store(true, Ordering::SeqCst);
                Ok(Done::default())
            }
        };
        let action = Action::new("entitlement", Some(Uuid::now_v7()), json!({}));
        let error = auditor.run(action, work).await.unwrap_err();
        assert!(
            format!("{error:#}").contains("nothing was done"),
            "{error:#}"
        );
        assert!(!ran.load(Ordering::SeqCst));
    });
}

#[test]
fn a_failure_is_audited_apart_from_a_refusal() {
    run(async {
        let h = harness().await;
        let auditor = Auditor::new(&h.sdk, h.store().clone()).await.unwrap();
        let org = Uuid::now_v7();
        let action = Action::new("seed-loads", Some(org), json!({"count": 1}));
        let failed = auditor
            .run(action, async {
                Err(anyhow::Error::from(shared::ApiError::internal(
                    "the engine went away",
                )))
            })
            .await;
        assert!(failed.is_err());
        let records = trail(&["--org", &org.to_string()]).await;
        assert_eq!(
            steps(&records),
            [
                ("seed-loads".into(), "started".into()),
                ("seed-loads".into(), "failed".into())
            ]
        );
        assert_eq!(records[0]["code"], "internal_error");
    });
}

#[test]
fn an_item_outside_the_audit_partitions_is_never_read_as_a_record() {
    run(async {
        use aws_sdk_dynamodb::types::AttributeValue::S;
        let h = harness().await;
        let since = chrono::Utc::now().to_rfc3339();
        // What a function could write (its role may not write `AUDIT#`):
        // an item of its own partitions under the audit index's key.
        let at = shared::model::Timestamp::now().to_string();
        let forged = Uuid::now_v7();
        aws_sdk_dynamodb::Client::new(&h.sdk)
            .put_item()
            .table_name(h.store().table())
            .item("pk", S(format!("ORG#{forged}")))
            .item("sk", S("FORGED".into()))
            .item(
                "gsi1pk",
                S(shared::store::engine::keys::AUDIT_ALL_PK.into()),
            )
            .item("gsi1sk", S(format!("{at}#{forged}#succeeded")))
            .item("id", S(forged.to_string()))
            .send()
            .await
            .unwrap();
        let all = trail(&["--since", &since, "--limit", "1000"]).await;
        assert!(all.iter().all(|r| r["id"] != forged.to_string()));
    });
}

/// An operator whose CLI assumed the operators' role with a source identity
/// (`ADMIN_ROLE_ARN`, `ADMIN_SOURCE_IDENTITY`) is recorded with it beside
/// the role session's ARN; a malformed one is refused before anything.
#[test]
fn the_source_identity_of_an_assumed_role_is_recorded() {
    use admin::identity::Operator;
    run(async {
        let h = harness().await;
        let t = org().await;
        let role = "arn:aws:iam::123456789012:role/integration-operators";
        let operator = Operator::assume(&h.sdk, role, "alice@example.com")
            .await
            .unwrap();
        let cli = Cli::try_parse_from([
            "admin",
            "create-key",
            "--org",
            &t.id().to_string(),
            "--scope",
            "read:data",
        ])
        .unwrap();
        let done = admin::cli::run_as(cli.command, &h.state.config, &operator)
            .await
            .unwrap();
        api_tests::logs::remember(done.lines[0]["api_key"].as_str().unwrap());
        let records = trail(&["--org", &t.id().to_string()]).await;
        assert_eq!(records[0]["source_identity"], "alice@example.com");
        let arn = records[0]["operator"].as_str().unwrap();
        assert!(arn.contains("integration-operators"), "{arn}");
        // Without one: none recorded.
        admin(&[
            "create-key",
            "--org",
            &t.id().to_string(),
            "--scope",
            "read:data",
        ])
        .await
        .map(|done| api_tests::logs::remember(done.lines[0]["api_key"].as_str().unwrap()))
        .unwrap();
        let records = trail(&["--org", &t.id().to_string()]).await;
        assert!(
            records[0].get("source_identity").is_none(),
            "{}",
            records[0]
        );
        for bad in ["a", "has space", &"x".repeat(65)] {
            assert!(Operator::assume(&h.sdk, role, bad).await.is_err(), "{bad}");
        }
        // With no source identity given, the caller's own IAM user name
        // (the local engine's caller is the user `moto`): what a trust
        // policy requiring `${aws:username}` accepts.
        let caller = Operator::assume_as_caller(&h.sdk, role).await.unwrap();
        assert_eq!(caller.source_identity.as_deref(), Some("moto"));
    });
}

/// An audit record whose write landed but whose answer was lost, sent
/// again by the SDK (retries on, as deployed): the resend finds its own
/// record and the command goes on, once, recorded once.
#[test]
fn an_audit_write_whose_answer_was_lost_is_taken_as_written() {
    use api_tests::cuts::{Cut, Cuts};
    run(async {
        let h = harness().await;
        let t = org().await;
        let id = t.id().to_string();
        let cuts = Cuts::default();
        let sdk = cuts.sdk_retrying(&h.sdk);
        for phase in ["started", "succeeded"] {
            // The record of `phase` is the command's first or second put.
            cuts.arm_on(Cut::Cut, "DynamoDB_20120810.PutItem", phase);
            let cli =
                Cli::try_parse_from(["admin", "entitlement", "--org", &id, "--enabled", "true"])
                    .unwrap();
            let done = admin::cli::run(cli.command, &h.state.config, &sdk).await;
            let broken = cuts.broken();
            cuts.disarm();
            assert!(
                broken.is_some_and(|b| b.contains("PutItem")),
                "{phase}: the cut was made"
            );
            done.unwrap_or_else(|e| panic!("{phase}: {e:#}"));
        }
        let records = trail(&["--org", &id]).await;
        assert_eq!(
            steps(&records),
            [
                ("entitlement".into(), "started".into()),
                ("entitlement".into(), "succeeded".into()),
                ("entitlement".into(), "started".into()),
                ("entitlement".into(), "succeeded".into()),
            ]
        );
    });
}
