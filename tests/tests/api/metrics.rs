//! Metrics in the embedded metric format (`shared::metrics`): every
//! request and every webhook attempt writes one line whose metrics,
//! dimensions and properties say what happened, within the format's
//! rules, with no organization or key as a dimension.
//! (`tests/metrics/check_emf.py` checks every line of the whole run.)

use std::time::Duration;

use api_tests::webhooks::{Receiver, Stack, quick_policy};
use api_tests::{Reply, call, harness, key_id, metrics, org, org_with, run, send, unique};
use http::Method;
use serde_json::{Value, json};
use shared::auth::scope::Scope;

use crate::deliveries::webhook_and_delivered_load;
use crate::sites::new_site;

/// The dimension keys a line may use: none of them names who asked.
const DIMENSIONS: [&str; 5] = ["Service", "Route", "StatusClass", "Code", "Cause"];

/// Asserts the format's rules on `line`: metadata with a timestamp and
/// directives, each with a namespace, dimension sets of known keys that
/// are string members, and metric definitions (at most 100) whose values
/// are numeric members.
#[track_caller]
fn well_formed(line: &Value) {
    let aws = &line["_aws"];
    assert!(aws["Timestamp"].as_u64().is_some(), "timestamp: {line}");
    let directives = aws["CloudWatchMetrics"].as_array().expect("directives");
    assert!(!directives.is_empty());
    let mut seen = std::collections::HashSet::new();
    for directive in directives {
        assert!(
            directive["Namespace"]
                .as_str()
                .is_some_and(|n| !n.is_empty())
        );
        for set in directive["Dimensions"].as_array().expect("dimension sets") {
            let set = set.as_array().expect("a dimension set");
            assert!(!set.is_empty() && set.len() <= 30);
            for key in set {
                let key = key.as_str().unwrap();
                assert!(DIMENSIONS.contains(&key), "dimension {key} in {line}");
                assert!(
                    line[key].as_str().is_some_and(|v| !v.is_empty()),
                    "{key}: {line}"
                );
            }
        }
        let definitions = directive["Metrics"].as_array().expect("metrics");
        assert!(!definitions.is_empty() && definitions.len() <= 100);
        for definition in definitions {
            let name = definition["Name"].as_str().unwrap();
            assert!(line[name].is_number(), "{name}: {line}");
            assert!(["Count", "Milliseconds"].contains(&definition["Unit"].as_str().unwrap()));
            assert!(seen.insert(name.to_owned()), "{name} defined twice: {line}");
        }
    }
}

/// The line of `reply`'s request, checked well formed.
fn line_of(reply: &Reply) -> Value {
    let line = metrics::of_request(reply.header("x-request-id"));
    well_formed(&line);
    line
}

/// The dimension sets under which `metric` is recorded in `line`.
pub(crate) fn sets_of(line: &Value, metric: &str) -> Vec<Vec<String>> {
    line["_aws"]["CloudWatchMetrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["Metrics"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["Name"] == metric)
        })
        .flat_map(|d| d["Dimensions"].as_array().unwrap().clone())
        .map(|set| {
            set.as_array()
                .unwrap()
                .iter()
                .map(|k| k.as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn a_request_reports_its_route_status_and_cost_and_who_asked_as_properties() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": unique("Metered")})).await;
        let reply = send(&t, Method::GET, &format!("/api/v1/sites/{site}"), None).await;
        reply.expect(200, None);
        let line = line_of(&reply);

        assert_eq!(line["Service"], "sites");
        assert_eq!(line["Route"], "GET /api/v1/sites/{siteId}");
        assert_eq!(line["StatusClass"], "2xx");
        assert_eq!(line["Requests"], 1);
        assert!(line["Latency"].as_f64().unwrap() > 0.0);
        assert_eq!(line["RoundTrips"], reply.round_trips);
        assert_eq!(line["ReadUnits"].as_f64().unwrap(), reply.units.read);
        assert_eq!(line["WriteUnits"].as_f64().unwrap(), reply.units.write);
        // What did not happen is not on the line (no 0s to ingest).
        for absent in ["Throttled", "Replayed", "KeyInFlight", "Errors", "Code"] {
            assert!(line.get(absent).is_none(), "{absent}: {line}");
            assert!(sets_of(&line, absent).is_empty());
        }
        // Who asked: properties for queries, never dimensions.
        assert_eq!(line["org_id"], t.org.id.to_string());
        assert_eq!(line["key_id"], key_id(&t).await.to_string());
        assert_eq!(line["status"], 200);
        // One line a request: the request's log line is this one.
        assert_eq!(line["message"], "request served");
        assert_eq!(line["ddb_calls"], reply.ddb_calls);
        assert!(line["ddb_ms"].as_f64().unwrap() > 0.0);
        assert!(line["ddb_ms"].as_f64().unwrap() <= line["Latency"].as_f64().unwrap());
        assert_eq!(line["warm"], reply.warm);
        assert!(line["rate_window"].as_u64().unwrap() > 29_000_000);
        assert!(line.get("aws_calls").is_none(), "no call beyond DynamoDB");
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        // The settings' namespace (`IntegrationApi` unless set: the local
        // stack's scripts set `IntegrationApi/local`).
        let namespace = &harness().await.state.config.metrics.namespace;
        assert_eq!(directive["Namespace"], namespace.as_str());
        let by = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            sets_of(&line, "Requests"),
            [
                by(&["Service"]),
                by(&["Service", "Route"]),
                by(&["Service", "StatusClass"]),
                by(&["Service", "Route", "StatusClass"]),
            ]
        );
        for metric in ["Latency", "ReadUnits", "WriteUnits", "RoundTrips"] {
            assert_eq!(
                sets_of(&line, metric),
                [by(&["Service"]), by(&["Service", "Route"])],
                "{metric}"
            );
        }
        // A write reports its write units.
        let created = call(Method::POST, "/api/v1/sites")
            .key(&t.key)
            .json(&json!({"name": unique("Written")}))
            .send()
            .await;
        created.expect(201, None);
        let line = line_of(&created);
        assert_eq!(line["Route"], "POST /api/v1/sites");
        assert!(line["WriteUnits"].as_f64().unwrap() > 0.0);
        assert_eq!(line["WriteUnits"].as_f64().unwrap(), created.units.write);
    });
}

#[test]
fn an_error_answer_is_counted_by_its_code() {
    run(async {
        let t = org().await;
        let missing = uuid::Uuid::new_v4();
        let reply = send(&t, Method::GET, &format!("/api/v1/sites/{missing}"), None).await;
        reply.expect(404, Some("site_not_found"));
        let line = line_of(&reply);
        assert_eq!(
            (line["StatusClass"].as_str(), line["Code"].as_str()),
            (Some("4xx"), Some("site_not_found"))
        );
        assert_eq!(line["Errors"], 1);
        assert_eq!(
            sets_of(&line, "Errors"),
            [
                vec!["Service".to_owned(), "Code".to_owned()],
                vec!["Service".to_owned(), "Route".to_owned(), "Code".to_owned()]
            ]
        );

        // A path no function routes: no function to name.
        let reply = call(Method::GET, "/api/v1/nowhere")
            .key(&t.key)
            .send()
            .await;
        reply.expect(404, Some("not_found"));
        let line = line_of(&reply);
        assert_eq!(
            (line["Service"].as_str(), line["Route"].as_str()),
            (Some("(none)"), Some("GET (none)"))
        );
        assert_eq!(line["Code"], "not_found");
    });
}

#[test]
fn a_refused_request_is_counted_as_throttled() {
    run(async {
        let t = org().await;
        let (small, _) =
            crate::rate_limit::in_a_frozen_minute(|c| c.http.rate_limit.limit = 1).await;
        let admitted = call(Method::GET, "/api/v1/orgs")
            .key(&t.key)
            .send_to(&small)
            .await;
        admitted.expect(200, None);
        let refused = call(Method::GET, "/api/v1/orgs")
            .key(&t.key)
            .send_to(&small)
            .await;
        refused.expect(429, Some("rate_limited"));
        assert!(line_of(&admitted).get("Throttled").is_none());
        let line = line_of(&refused);
        assert_eq!(
            (line["Throttled"].as_u64(), line["Errors"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(line["Code"], "rate_limited");
        // The refusal's line names the key that was refused, and whose it
        // is (a query's "top keys by 429s" needs both).
        let key = key_id(&t).await.to_string();
        assert_eq!(line["key_id"], key.as_str());
        assert_eq!(line["org_id"], t.org.id.to_string());
        assert!(line.get("rate_window").is_none(), "nothing was counted");
        // Its time is on its line, but not in the latency objective: a
        // flood of fast refusals would hide the slow answers.
        assert!(line["Latency"].as_f64().unwrap() > 0.0);
        assert_eq!(sets_of(&line, "Latency"), Vec::<Vec<String>>::new());
        assert_eq!(
            sets_of(&line_of(&admitted), "Latency"),
            [
                vec!["Service".to_owned()],
                vec!["Service".to_owned(), "Route".to_owned()]
            ]
        );
    });
}

#[test]
fn every_refusal_of_a_found_key_names_it_and_an_unknown_key_names_none() {
    run(async {
        let t = org_with(&[Scope::ReadData]).await;
        let key = key_id(&t).await;
        // 403: a scope the key lacks.
        let reply = send(
            &t,
            Method::POST,
            "/api/v1/sites",
            Some(json!({"name": "x"})),
        )
        .await;
        reply.expect(403, Some("insufficient_scope"));
        let line = line_of(&reply);
        assert_eq!(line["key_id"], key.to_string());
        assert_eq!(line["org_id"], t.org.id.to_string());
        // 401: a revoked key is still its record's.
        let store = harness().await.store();
        store.api_keys().revoke(t.id(), key).await.unwrap();
        let reply = send(&t, Method::GET, "/api/v1/orgs", None).await;
        reply.expect(401, Some("api_key_revoked"));
        let line = line_of(&reply);
        assert_eq!(line["key_id"], key.to_string());
        assert_eq!(line["org_id"], t.org.id.to_string());
        // 401: a key nobody holds names nobody.
        let unknown = shared::auth::key::generate("svc_app_").plaintext;
        let reply = call(Method::GET, "/api/v1/orgs").key(&unknown).send().await;
        reply.expect(401, Some("invalid_api_key"));
        let line = line_of(&reply);
        assert!(
            line.get("key_id").is_none() && line.get("org_id").is_none(),
            "{line}"
        );
    });
}

#[test]
fn a_replay_and_a_key_in_flight_are_counted() {
    run(async {
        let t = org().await;
        let body = json!({"name": unique("Replayed")});
        let key = unique("metered");
        let post = || {
            call(Method::POST, "/api/v1/sites")
                .key(&t.key)
                .header("idempotency-key", &key)
                .json(&body)
                .send()
        };
        let first = post().await;
        first.expect(201, None);
        let again = post().await;
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert!(line_of(&first).get("Replayed").is_none());
        assert_eq!(line_of(&again)["Replayed"], 1);
        assert_eq!(sets_of(&line_of(&again), "Replayed"), [["Service"]]);

        let held = unique("held");
        let body = json!({"name": unique("Held")});
        let now = shared::clock::unix_ms();
        crate::idempotency::claim_site(&t, &held, &body, now, now + 30_000).await;
        let reply = call(Method::POST, "/api/v1/sites")
            .key(&t.key)
            .header("idempotency-key", &held)
            .json(&body)
            .send()
            .await;
        reply.expect(409, Some("idempotency_key_in_flight"));
        let line = line_of(&reply);
        assert_eq!(
            (line["KeyInFlight"].as_u64(), line["Errors"].as_u64()),
            (Some(1), Some(1))
        );
    });
}

#[test]
fn the_namespace_is_the_settings_and_metrics_can_be_switched_off() {
    run(async {
        let t = org().await;
        let h = harness().await;
        let named = h.router_with(|c| c.metrics.namespace = "Api/staging".into());
        let reply = call(Method::GET, "/api/v1/orgs")
            .key(&t.key)
            .send_to(&named)
            .await;
        reply.expect(200, None);
        let line = line_of(&reply);
        for directive in line["_aws"]["CloudWatchMetrics"].as_array().unwrap() {
            assert_eq!(directive["Namespace"], "Api/staging");
        }

        let off = h.router_with(|c| c.metrics.enabled = false);
        let reply = call(Method::GET, "/api/v1/orgs")
            .key(&t.key)
            .send_to(&off)
            .await;
        reply.expect(200, None);
        let id = reply.header("x-request-id");
        assert!(metrics::lines().iter().all(|line| line["request_id"] != id));
    });
}

#[test]
fn a_process_reports_one_cold_start() {
    run(async {
        let t = org().await;
        send(&t, Method::GET, "/api/v1/orgs", None)
            .await
            .expect(200, None);
        let cold: Vec<Value> = metrics::lines()
            .into_iter()
            .filter(|line| line.get("ColdStart").is_some())
            .collect();
        assert_eq!(cold.len(), 1, "the process's first line only");
        assert_eq!(cold[0]["ColdStart"], 1);
        assert_eq!(sets_of(&cold[0], "ColdStart"), [vec!["Service".to_owned()]]);
    });
}

#[test]
fn a_webhook_attempt_reports_its_outcome_cause_and_lag() {
    run(async {
        let stack = Stack::new(quick_policy(3), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![503, 200]).await;
        let before = shared::clock::unix_ms();
        let (hook, _) = webhook_and_delivered_load(&stack, &t, &receiver).await;
        stack.drain_until_received(&receiver, 2).await;
        let delivery = receiver.first_delivery();
        let lines = metrics::of_delivery(&delivery);
        assert_eq!(lines.len(), 2, "one line an attempt: {lines:?}");
        for line in &lines {
            well_formed(line);
            assert_eq!(line["Service"], "webhook-dispatcher");
            assert_eq!(line["webhook_id"], hook);
            assert_eq!(line["org_id"], t.org.id.to_string());
            assert_eq!(line["DeliveryAttempts"], 1);
            assert_eq!(line["DeadLettered"], 0);
        }
        let (failed, succeeded) = (&lines[0], &lines[1]);
        assert_eq!(
            (failed["attempt"].as_u64(), succeeded["attempt"].as_u64()),
            (Some(1), Some(2))
        );
        assert_eq!(
            (
                failed["DeliveryFailed"].as_u64(),
                failed["DeliverySucceeded"].as_u64()
            ),
            (Some(1), Some(0))
        );
        assert_eq!(failed["Cause"], "http_5xx");
        assert_eq!(
            sets_of(failed, "DeliveryFailed"),
            [
                vec!["Service".to_owned()],
                vec!["Service".to_owned(), "Cause".to_owned()]
            ]
        );
        assert_eq!(succeeded["DeliverySucceeded"].as_u64(), Some(1));
        assert!(
            succeeded.get("DeliveryFailed").is_none()
                && sets_of(succeeded, "DeliveryFailed").is_empty(),
            "no failure, no 0 to ingest: {succeeded}"
        );
        assert!(succeeded.get("Cause").is_none());
        // One line an attempt: its log line is this one.
        for (line, status, ok) in [(failed, 503, false), (succeeded, 200, true)] {
            assert_eq!(line["message"], "webhook attempt");
            assert_eq!(line["status"], status);
            assert_eq!(line["succeeded"], ok);
            assert_eq!(line["manual"], false);
            assert!(line["duration_ms"].as_u64().unwrap() < 20_000);
            assert!(line.get("error").is_none(), "answered");
        }
        // Lags from the load's delivery: to the first attempt, to the success.
        let elapsed = (shared::clock::unix_ms() - before) as f64;
        let first = failed["LagToFirstAttempt"].as_f64().unwrap();
        let success = succeeded["LagToSuccess"].as_f64().unwrap();
        assert!(
            0.0 <= first && first <= success && success <= elapsed,
            "{first} {success} {elapsed}"
        );
        assert!(
            failed.get("LagToSuccess").is_none() && succeeded.get("LagToFirstAttempt").is_none()
        );
    });
}

#[test]
fn an_attempt_that_runs_out_is_counted_dead_lettered() {
    run(async {
        let stack = Stack::new(quick_policy(2), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![500, 500]).await;
        webhook_and_delivered_load(&stack, &t, &receiver).await;
        stack.drain_until_received(&receiver, 2).await;
        stack.drain().await;
        let delivery = receiver.first_delivery();
        let dead: Vec<u64> = metrics::of_delivery(&delivery)
            .iter()
            .map(|line| line["DeadLettered"].as_u64().unwrap())
            .collect();
        assert_eq!(dead, [0, 1]);
    });
}

/// A dispatcher that cannot open webhook secrets (its instance cannot
/// read the seal key) attempts nothing: each delivery message it gives
/// back to the queue writes a line whose `MessagesFailed` is 1, by cause,
/// the figure `WebhookMessagesFailedAlarm` sums (infra/template.yaml;
/// tools/metrics/test_dashboard.py evaluates it over such lines).
#[test]
fn a_dispatcher_that_cannot_open_secrets_counts_each_message_it_gives_back() {
    run(async {
        let clock = shared::clock::Clock::default();
        let source = crate::rotation::secret(&"m".repeat(40)).await;
        let mut stack = crate::rotation::sealed_stack(&clock, &source).await;
        let t = stack.org().await;
        let receiver = Receiver::start(vec![]).await;
        let hook = call(Method::POST, "/api/v1/webhooks")
            .key(&t.key)
            .json(&json!({"event": "surplus.delivered", "url": receiver.base}))
            .send_to(&stack.router)
            .await;
        hook.expect(201, None);
        // The dispatcher's instance reads its seal key from a secret that
        // is not there.
        let shared::deployment_key::KeySource::Secret(arn) = &source else {
            unreachable!()
        };
        let mut config = (*stack.state.config).clone();
        config.webhooks.seal_key = Some(shared::deployment_key::KeySource::Secret(format!(
            "{arn}-gone"
        )));
        let state = shared::state::AppState::new(config, &harness().await.sdk);
        stack.dispatcher = webhook_dispatcher::Dispatcher::new(state, quick_policy(3));
        crate::rotation::deliver_a_load(&stack, &t).await;

        // The lines of this stack's deliveries (a table of its own) that
        // an error gave back.
        let store = &stack.state.store;
        let mut lines = Vec::new();
        for _ in 0..50 {
            stack
                .drain_until(Duration::from_millis(200), || false)
                .await;
            lines.clear();
            for line in metrics::lines() {
                let body: Value = match line["body"].as_str().map(serde_json::from_str) {
                    Some(Ok(body)) if line["message"] == "queue message handled" => body,
                    _ => continue,
                };
                let Some(Ok(id)) = body["delivery_id"].as_str().map(uuid::Uuid::parse_str) else {
                    continue;
                };
                if store.deliveries().get(id).await.unwrap().is_some() {
                    lines.push((id, line));
                }
            }
            if !lines.is_empty() {
                break;
            }
        }
        assert!(!lines.is_empty(), "a return is a line");
        for (id, line) in &lines {
            well_formed(line);
            assert_eq!(line["Service"], "webhook-dispatcher");
            assert_eq!(line["QueueMessages"], 1);
            assert_eq!(line["MessagesFailed"], 1, "{line}");
            assert_eq!(line["Cause"], "not_attempted");
            assert_eq!(line["returned"], true);
            assert_eq!(
                sets_of(line, "MessagesFailed"),
                [
                    vec!["Service".to_owned()],
                    vec!["Service".to_owned(), "Cause".to_owned()]
                ]
            );
            assert!(
                metrics::of_delivery(&id.to_string()).is_empty(),
                "no attempt line"
            );
        }
        assert_eq!(receiver.count(), 0, "nothing was attempted");
    });
}

/// The lag the delivery-lag alarm reads is in milliseconds, as its
/// `PR(:<objective seconds>000)` assumes: a first attempt made a known 90
/// seconds (by the clock) after the status change reports 90,000 and
/// more, never 90 (a lag in seconds would never pass the objective's
/// 60,000, and the alarm could never fire).
#[test]
fn a_known_lag_reads_out_in_the_milliseconds_the_lag_alarm_assumes() {
    run(async {
        const LAG: Duration = Duration::from_secs(90);
        let clock = shared::clock::Clock::default();
        let stack = crate::rotation::stack_by(&clock, false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![200]).await;
        let started = std::time::Instant::now();
        webhook_and_delivered_load(&stack, &t, &receiver).await;
        clock.advance(LAG);
        stack.drain_until_received(&receiver, 1).await;
        let delivery = receiver.first_delivery();
        let lines = metrics::of_delivery(&delivery);
        let first = lines[0]["LagToFirstAttempt"].as_f64().unwrap();
        let elapsed = started.elapsed() + LAG;
        assert!(
            (LAG.as_millis() as f64..=elapsed.as_millis() as f64).contains(&first),
            "lag {first} ms, for {LAG:?} moved and {elapsed:?} in all"
        );
        // The alarm's statistic: the share of first attempts within the
        // objective (60 s by default), here none.
        assert!(first > 60_000.0);
        // It succeeded: its lag to success is the same start plus the
        // attempt's own time.
        let success = lines[0]["LagToSuccess"].as_f64().unwrap();
        assert!(first <= success && success <= elapsed.as_millis() as f64);
    });
}

/// Every answer class's line, by its values: a 2xx and a 5xx (a
/// provider's error, and its timeout) count their time in the latency
/// objective (a slow outage looks slow; a timeout's at least the time it
/// waited), a 4xx's stays a property (a client's mistake answers fast);
/// each error counts once, by its code.
#[test]
fn every_answer_class_reports_its_values() {
    use api_tests::providers::{Gate, StandIn, github_error, google_zero_results};
    run(async {
        let t = org().await;
        let objective = [
            vec!["Service".to_owned()],
            vec!["Service".to_owned(), "Route".to_owned()],
        ];
        let ok = send(&t, Method::GET, "/api/v1/orgs", None).await;
        ok.expect(200, None);
        let line = line_of(&ok);
        assert_eq!(
            (&line["StatusClass"], &line["Requests"]),
            (&json!("2xx"), &json!(1))
        );
        assert!(
            line.get("Errors").is_none() && line.get("Code").is_none(),
            "{line}"
        );
        assert_eq!(sets_of(&line, "Latency"), objective);

        let missing = uuid::Uuid::new_v4();
        let mistake = send(&t, Method::GET, &format!("/api/v1/sites/{missing}"), None).await;
        mistake.expect(404, Some("site_not_found"));
        let line = line_of(&mistake);
        assert_eq!(
            (&line["StatusClass"], &line["Errors"]),
            (&json!("4xx"), &json!(1))
        );
        assert!(line["Latency"].as_f64().unwrap() > 0.0);
        assert_eq!(sets_of(&line, "Latency"), Vec::<Vec<String>>::new());

        // The provider fails: a 502 in the objective.
        let failing = StandIn::start(|_, _| github_error(500, "Server Error")).await;
        let api = crate::geocode::configured(&failing, Duration::from_secs(5)).await;
        let body = json!({"address": "Mannerheimintie 1"});
        let failed = crate::geocode::geocode(&api, &t, body.clone()).await;
        failed.expect(502, Some("geocode_provider_error"));
        let line = line_of(&failed);
        assert_eq!(
            (&line["StatusClass"], &line["Code"], &line["Errors"]),
            (&json!("5xx"), &json!("geocode_provider_error"), &json!(1))
        );
        assert_eq!(sets_of(&line, "Latency"), objective);

        // The provider never answers: a 504 whose time, at least the
        // timeout, is in the objective.
        let timeout = Duration::from_millis(300);
        let silent = StandIn::start(|_, _| google_zero_results().held(&Gate::default())).await;
        let api = crate::geocode::configured(&silent, timeout).await;
        let timed_out = crate::geocode::geocode(&api, &t, body).await;
        timed_out.expect(504, Some("geocode_timeout"));
        let line = line_of(&timed_out);
        assert_eq!(
            (&line["StatusClass"], &line["Code"], &line["Errors"]),
            (&json!("5xx"), &json!("geocode_timeout"), &json!(1))
        );
        let latency = line["Latency"].as_f64().unwrap();
        assert!(latency >= timeout.as_secs_f64() * 1000.0, "{latency} ms");
        assert_eq!(sets_of(&line, "Latency"), objective);
    });
}
