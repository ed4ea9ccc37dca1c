//! Support tickets through GitHub Issues, run here as a loopback stand-in
//! speaking its documented format: the issue opened, the quota of 5 an
//! hour per key (exact under concurrency; a refused ticket uses none),
//! every code, and the token kept secret.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use api_tests::providers::{StandIn, github_created, github_error};
use api_tests::{Reply, call, harness, new_key, org, run};
use axum::Router;
use http::Method;
use serde_json::{Value, json};
use shared::auth::Scope;
use shared::deployment_key::KeySource;

const TOKEN: &str = "ghp_TESTsupportTOKEN0123456789abcdefghij";
const REPOSITORY: &str = "acme/integration-support";

/// A tracker that opens issues numbered from 1347.
async fn tracker() -> StandIn {
    let next = AtomicU64::new(1347);
    StandIn::start(move |seen, _| {
        let title = seen.json()["title"].as_str().unwrap_or_default().to_owned();
        github_created(REPOSITORY, next.fetch_add(1, Ordering::SeqCst), &title)
    })
    .await
}

/// The API with the tracker configured against `tracker`.
async fn configured(tracker: &StandIn, timeout: Duration) -> Router {
    configured_by(tracker, timeout, &shared::clock::Clock::default()).await
}

/// The API with the tracker configured against `tracker`, by `clock`.
async fn configured_by(
    tracker: &StandIn,
    timeout: Duration,
    clock: &shared::clock::Clock,
) -> Router {
    let base = tracker.base.clone();
    let (_, mut state) = harness().await.instance_with(|c| {
        c.support.repository = Some(REPOSITORY.into());
        c.support.token = Some(KeySource::Value(TOKEN.as_bytes().to_vec()));
        c.support.api_url = base;
        c.support.labels = vec!["support".into(), "api".into()];
        c.support.timeout = timeout;
    });
    state.clock = clock.clone();
    shared::http::app(local::routes(), state)
}

async fn open(router: &Router, key: &str, body: Value) -> Reply {
    call(Method::POST, "/api/v1/support")
        .key(key)
        .json(&body)
        .send_to(router)
        .await
}

fn ticket(n: usize) -> Value {
    json!({"title": format!("Webhook failures #{n}"), "description": "Since 09:00 @octocat every delivery fails with `500`."})
}

#[test]
fn a_ticket_opens_an_issue_in_the_tracker() {
    run(async {
        let github = tracker().await;
        let api = configured(&github, Duration::from_secs(5)).await;
        let t = org().await;

        let reply = open(&api, &t.key, ticket(1)).await;

        reply.expect(201, None);
        let data = &reply.body["data"];
        assert_eq!(data["reference"], "1347");
        assert_eq!(data["title"], "Webhook failures #1");
        assert_eq!(data["quota_remaining"], 4);
        api_tests::assert_millisecond_timestamps(&reply.body);
        assert_eq!(data.as_object().unwrap().len(), 4);
        // The documented request.
        let sent = &github.requests()[0];
        assert_eq!(sent.method, Method::POST);
        assert_eq!(sent.uri.path(), format!("/repos/{REPOSITORY}/issues"));
        assert_eq!(sent.header("authorization"), format!("Bearer {TOKEN}"));
        assert_eq!(sent.header("accept"), "application/vnd.github+json");
        assert_eq!(sent.header("x-github-api-version"), "2022-11-28");
        assert!(
            !sent.header("user-agent").is_empty(),
            "GitHub requires a User-Agent"
        );
        let issue = sent.json();
        assert_eq!(issue["title"], "Webhook failures #1");
        assert_eq!(issue["labels"], json!(["support", "api"]));
        let body = issue["body"].as_str().unwrap();
        assert!(body.contains(&t.id().to_string()), "{body}");
        assert!(
            body.contains("~~~text\nSince 09:00 @octocat every delivery fails with `500`.\n~~~"),
            "the text verbatim in a fence (no mention, no markup): {body}"
        );
        assert!(!reply.text.contains(TOKEN));
    });
}

#[test]
fn five_tickets_an_hour_per_key_and_never_a_sixth_under_concurrency() {
    run(async {
        let github = tracker().await;
        let api = configured(&github, Duration::from_secs(5)).await;
        let t = org().await;

        // Ten at once from one key.
        let replies =
            futures::future::join_all((0..10).map(|n| open(&api, &t.key, ticket(n)))).await;

        let created = replies.iter().filter(|r| r.status == 201).count();
        assert_eq!(created, 5);
        assert_eq!(github.count(), 5, "the tracker got exactly five");
        for refused in replies.iter().filter(|r| r.status != 201) {
            refused.expect(429, Some("support_rate_limited"));
            let retry: u64 = refused.header("retry-after").parse().unwrap();
            assert!((3590..=3600).contains(&retry), "{retry}");
            // The general budget is untouched by a refused ticket.
            assert!(!refused.header("x-ratelimit-remaining").is_empty());
        }
        let mut remaining: Vec<u64> = replies
            .iter()
            .filter(|r| r.status == 201)
            .map(|r| r.body["data"]["quota_remaining"].as_u64().unwrap())
            .collect();
        remaining.sort_unstable();
        assert_eq!(remaining, [0, 1, 2, 3, 4]);
        // The quota is per key: another key of the organization still may.
        let other = new_key(t.id(), &[Scope::WriteData]).await;
        open(&api, &other, ticket(11)).await.expect(201, None);
        open(&api, &t.key, ticket(12))
            .await
            .expect(429, Some("support_rate_limited"));
    });
}

#[test]
fn a_ticket_the_tracker_refused_uses_no_quota() {
    run(async {
        // Every second request is refused (401, 403, 422, 404 in turn).
        let refusals = [
            github_error(401, "Bad credentials"),
            github_error(403, "Resource not accessible by integration"),
            github_error(422, "Validation Failed"),
            github_error(404, "Not Found"),
        ];
        let github = StandIn::start(move |seen, n| {
            if n % 2 == 0 {
                refusals[(n / 2) % 4].clone()
            } else {
                github_created(REPOSITORY, n as u64, seen.json()["title"].as_str().unwrap())
            }
        })
        .await;
        let api = configured(&github, Duration::from_secs(5)).await;
        let t = org().await;
        let mut created = 0;
        for n in 0..10 {
            let reply = open(&api, &t.key, ticket(n)).await;
            if n % 2 == 0 {
                reply.expect(502, Some("support_tracker_error"));
            } else {
                reply.expect(201, None);
                created += 1;
            }
        }
        assert_eq!(created, 5, "five refusals used none of the five tickets");
        open(&api, &t.key, ticket(10))
            .await
            .expect(429, Some("support_rate_limited"));
        assert_eq!(github.count(), 10, "the sixth was not sent");
    });
}

#[test]
fn a_tracker_that_does_not_answer_in_time_is_504_and_the_ticket_counts() {
    run(async {
        let github = StandIn::start(|seen, _| {
            github_created(REPOSITORY, 1, seen.json()["title"].as_str().unwrap())
                .held(&api_tests::providers::Gate::default())
        })
        .await;
        let api = configured(&github, Duration::from_millis(300)).await;
        let t = org().await;
        for n in 0..5 {
            open(&api, &t.key, ticket(n))
                .await
                .expect(504, Some("support_tracker_timeout"));
        }
        // The issue may exist: those five count.
        open(&api, &t.key, ticket(5))
            .await
            .expect(429, Some("support_rate_limited"));
        // Nobody listening is a refusal: no quota used.
        let closed = harness().await.router_with(|c| {
            c.support.repository = Some(REPOSITORY.into());
            c.support.token = Some(KeySource::Value(TOKEN.as_bytes().to_vec()));
            c.support.api_url = "http://127.0.0.1:9".into();
        });
        let fresh = org().await;
        for n in 0..6 {
            open(&closed, &fresh.key, ticket(n))
                .await
                .expect(502, Some("support_tracker_error"));
        }
        assert!(
            !api_tests::webhooks::logs().contains(TOKEN),
            "the token is never logged"
        );
    });
}

#[test]
fn without_a_tracker_support_is_503_support_not_configured() {
    run(async {
        let t = org().await;
        assert!(!harness().await.state.config.support.is_configured());
        call(Method::POST, "/api/v1/support")
            .key(&t.key)
            .json(&ticket(1))
            .send()
            .await
            .expect(503, Some("support_not_configured"));
    });
}

#[test]
fn a_bad_body_is_422_naming_the_field_sends_nothing_and_uses_no_quota() {
    run(async {
        let github = tracker().await;
        let api = configured(&github, Duration::from_secs(5)).await;
        let t = org().await;
        for (body, field) in [
            (json!({"description": "d"}), "title"),
            (json!({"title": "t"}), "description"),
            (json!({"title": " ", "description": "d"}), "title"),
            (json!({"title": "t", "description": ""}), "description"),
            (
                json!({"title": "t".repeat(201), "description": "d"}),
                "title",
            ),
            (
                json!({"title": "t", "description": "d".repeat(10_001)}),
                "description",
            ),
            (json!({"title": 5, "description": "d"}), "title"),
        ] {
            let reply = open(&api, &t.key, body.clone()).await;
            reply.expect(422, Some("validation_error"));
            let message = reply.body["message"].as_str().unwrap();
            assert!(
                message.starts_with(&format!("{field}:")),
                "{body}: {message}"
            );
        }
        assert_eq!(github.count(), 0);
        for n in 0..5 {
            open(&api, &t.key, ticket(n)).await.expect(201, None);
        }
    });
}

#[test]
fn support_tickets_need_write_data() {
    run(async {
        let github = tracker().await;
        let api = configured(&github, Duration::from_secs(5)).await;
        let t = org().await;
        let read_only = new_key(t.id(), &[Scope::ReadData]).await;
        open(&api, &read_only, ticket(1))
            .await
            .expect(403, Some("insufficient_scope"));
        assert_eq!(github.count(), 0);
    });
}

/// A ticket sent with its `Idempotency-Key`.
async fn open_keyed(router: &Router, key: &str, idempotency_key: &str, body: &Value) -> Reply {
    call(Method::POST, "/api/v1/support")
        .key(key)
        .header("idempotency-key", idempotency_key)
        .json(body)
        .send_to(router)
        .await
}

/// Once the quota is used up, a ticket sent again and again (its key freed
/// by each 429, with fresh keys, or without one) is refused before
/// anything is asked of the tracker: one key cannot spend the
/// deployment's tracker token.
#[test]
fn a_ticket_the_quota_refuses_makes_no_call_to_the_tracker() {
    run(async {
        let (tracker, issues) = crate::exactly_once::remembering_tracker().await;
        let state = crate::exactly_once::with_tracker(&tracker).await;
        let router = shared::http::app(local::routes(), state);
        let t = org().await;
        for n in 0..5 {
            open(&router, &t.key, ticket(n)).await.expect(201, None);
        }
        assert_eq!(tracker.count(), 5);
        for n in 0..6 {
            open_keyed(&router, &t.key, "again", &ticket(9))
                .await
                .expect(429, Some("support_rate_limited"));
            open_keyed(&router, &t.key, &format!("fresh-{n}"), &ticket(9))
                .await
                .expect(429, Some("support_rate_limited"));
            open(&router, &t.key, ticket(9))
                .await
                .expect(429, Some("support_rate_limited"));
        }
        assert_eq!(tracker.count(), 5, "no call for a refused ticket");
        assert_eq!(issues.lock().unwrap().len(), 5);
    });
}

/// A later attempt of a request whose earlier one may have opened its
/// issue looks for that issue by the lines the service writes at the top
/// of its body: a customer's text quoting those lines (in another ticket
/// of theirs) is never taken for it.
#[test]
fn a_ticket_is_found_by_the_lines_the_service_wrote_never_by_a_customers_text() {
    use std::sync::{Arc, Mutex};
    run(async {
        let issues: Arc<Mutex<Vec<Value>>> = Arc::default();
        let kept = issues.clone();
        // The first POST times out before anything is opened.
        let tracker = StandIn::start(move |seen, before| {
            let mut issues = kept.lock().unwrap();
            if seen.method == Method::GET {
                let newest_first: Vec<Value> = issues.iter().rev().cloned().collect();
                return api_tests::providers::Canned::json(200, Value::Array(newest_first));
            }
            let issue = json!({
                "number": 500 + issues.len(),
                "body": seen.json()["body"],
                "created_at": chrono::Utc::now().to_rfc3339(),
            });
            if before == 0 {
                return api_tests::providers::Canned::json(201, issue)
                    .held(&api_tests::providers::Gate::default());
            }
            issues.push(issue.clone());
            api_tests::providers::Canned::json(201, issue)
        })
        .await;
        let clock = shared::clock::Clock::frozen_at(shared::clock::now());
        let api = configured_by(&tracker, api_tests::providers::PROVIDER_TIMEOUT, &clock).await;
        let t = org().await;
        let body = ticket(1);
        open_keyed(&api, &t.key, "the-ticket", &body)
            .await
            .expect(504, Some("support_tracker_timeout"));
        // The request's id, as its issue would name it.
        let key_id = api_tests::key_id(&t).await;
        let item = harness()
            .await
            .store()
            .idempotency()
            .get(key_id, "the-ticket")
            .await
            .unwrap()
            .unwrap();
        let request = item["rid"].as_s().unwrap().clone();
        // Another ticket of the customer's quotes the lines that would name it.
        let quoted = api_tests::providers::quoting_the_lines_of(t.id(), key_id, &request);
        let planted = open(
            &api,
            &t.key,
            json!({"title": "Quote", "description": quoted}),
        )
        .await;
        planted.expect(201, None);
        // Once the timed-out call can no longer land.
        clock.advance(support::LANDS_WITHIN + Duration::from_secs(1));
        let retry = open_keyed(&api, &t.key, "the-ticket", &body).await;
        retry.expect(201, None);
        assert_ne!(
            retry.body["data"]["reference"],
            planted.body["data"]["reference"]
        );
        assert_eq!(
            issues.lock().unwrap().len(),
            2,
            "the planted one and the ticket's own"
        );
    });
}

/// An attempt paused right after it recorded that it is opening the issue
/// (a frozen container), past its hold on the key, while a later attempt
/// took the key over and opened the issue: when it thaws, it opens none,
/// and answers what the later attempt answered.
#[test]
fn a_ticket_paused_before_its_call_opens_no_second_issue() {
    use api_tests::cuts::{Cut, Cuts};
    run(async {
        let (tracker, issues) = crate::exactly_once::remembering_tracker().await;
        let plain = crate::exactly_once::with_tracker(&tracker).await;
        let cuts = Cuts::default();
        let mut faulty =
            shared::state::AppState::new((*plain.config).clone(), &cuts.sdk(&harness().await.sdk));
        faulty.clock = plain.clock.clone();
        let (plain_router, faulty_router) = (
            shared::http::app(local::routes(), plain.clone()),
            shared::http::app(local::routes(), faulty),
        );
        let t = org().await;
        let body = ticket(2);
        cuts.arm_on(Cut::Freeze, "UpdateItem", "acting");
        let frozen = tokio::spawn({
            let (key, body) = (t.key.clone(), body.clone());
            async move { open_keyed(&faulty_router, &key, "paused", &body).await }
        });
        cuts.stalled().await;
        plain
            .clock
            .advance(shared::http::idempotency::LEASE + Duration::from_secs(1));
        let retry = open_keyed(&plain_router, &t.key, "paused", &body).await;
        retry.expect(201, None);
        assert_eq!(
            retry.body["data"]["quota_remaining"], 4,
            "one slot for the request"
        );
        cuts.go();
        let thawed = frozen.await.unwrap();
        cuts.disarm();
        assert_eq!((thawed.status, &thawed.text), (retry.status, &retry.text));
        assert_eq!(thawed.header("idempotent-replayed"), "true");
        assert_eq!(issues.lock().unwrap().len(), 1, "one issue");
    });
}

/// A request whose earlier attempt began its issue (the tracker refused
/// it) is decided by the quota before the tracker is asked anything: once
/// the key's five tickets of the hour are taken, sending it again is 429
/// with no call, not a search of the tracker for an issue it never opened.
#[test]
fn a_retried_ticket_past_the_quota_asks_the_tracker_nothing() {
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Mutex};
    run(async {
        let issues: Arc<Mutex<Vec<Value>>> = Arc::default();
        let posts = Arc::new(AtomicUsize::new(0));
        let (kept, counted) = (issues.clone(), posts.clone());
        let tracker = StandIn::start(move |seen, _| {
            let mut issues = kept.lock().unwrap();
            if seen.method == Method::GET {
                let newest_first: Vec<Value> = issues.iter().rev().cloned().collect();
                return api_tests::providers::Canned::json(200, Value::Array(newest_first));
            }
            if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                return github_error(422, "Validation Failed");
            }
            let issue = json!({"number": 2000 + issues.len(), "body": seen.json()["body"],
                               "created_at": chrono::Utc::now().to_rfc3339()});
            issues.push(issue.clone());
            api_tests::providers::Canned::json(201, issue)
        })
        .await;
        let api = configured(&tracker, Duration::from_secs(5)).await;
        let t = org().await;
        open_keyed(&api, &t.key, "refused-once", &ticket(0))
            .await
            .expect(502, Some("support_tracker_error"));
        for n in 1..=5 {
            open(&api, &t.key, ticket(n)).await.expect(201, None);
        }
        let calls = tracker.count();
        open_keyed(&api, &t.key, "refused-once", &ticket(0))
            .await
            .expect(429, Some("support_rate_limited"));
        assert_eq!(tracker.count(), calls, "nothing asked of the tracker");
    });
}

/// A quota of its own for a store test: five uses an hour, as the route's.
fn five_an_hour(name: &str) -> shared::store::exactly_once::quotas::Quota {
    shared::store::exactly_once::quotas::Quota {
        pk: format!("QUOTA#{name}-{}", uuid::Uuid::now_v7()),
        uses: 5,
        period: Duration::from_secs(3600),
    }
}

/// The quota's slots under attempts of one request that race (a frozen
/// attempt's late write beside its retry's): however many take a slot at
/// once, the request holds one, and every attempt answers with that one.
#[test]
fn attempts_of_one_request_that_take_slots_at_once_hold_one() {
    use shared::store::exactly_once::quotas::Reserved;
    run(async {
        let store = harness().await.store();
        let quota = five_an_hour("race");
        let now = shared::clock::unix_ms();
        let request = uuid::Uuid::now_v7();
        let quotas = store.quotas();

        // One after the other: the second write finds the first's slot.
        let first = quotas.reserve(&quota, now, Some(request)).await.unwrap();
        let Reserved::Held(first) = first else {
            panic!("{first:?}")
        };
        assert_eq!(first.remaining, 4);
        let second = quotas
            .reserve(&quota, now + 5, Some(request))
            .await
            .unwrap();
        assert_eq!(
            second,
            Reserved::Earlier(first.clone()),
            "the earlier slot, 4 left"
        );

        // Four at once: still the one slot, and another request finds 4 free.
        let racing = futures::future::join_all(
            (1..=4).map(|n| quotas.reserve(&quota, now + 10 * n, Some(request))),
        )
        .await;
        for reserved in racing {
            // The uses left as the write saw them: racing slots not yet
            // given back count as taken.
            let Reserved::Earlier(mut slot) = reserved.unwrap() else {
                panic!("a second slot")
            };
            assert!((1..=4).contains(&slot.remaining), "{slot:?}");
            slot.remaining = first.remaining;
            assert_eq!(slot, first);
        }
        let other = quotas
            .held_by(&quota, uuid::Uuid::now_v7(), now + 100)
            .await
            .unwrap();
        assert_eq!(other, Err(4), "one slot taken, four free");
        let held = quotas.held_by(&quota, request, now + 100).await.unwrap();
        assert_eq!(held, Ok(first));
    });
}

/// A request that holds a slot and takes another one free at a lower
/// index (a slot given back meanwhile) gives the new one back and keeps
/// its own, with the uses left counted after that; a slot exactly one
/// period old is free again, a millisecond younger still held.
#[test]
fn a_request_that_takes_a_second_slot_gives_it_back_and_its_slot_frees_after_an_hour() {
    use shared::store::exactly_once::quotas::Reserved;
    run(async {
        let store = harness().await.store();
        let quota = five_an_hour("yield");
        let quotas = store.quotas();
        let now = shared::clock::unix_ms();
        let (other, request) = (uuid::Uuid::now_v7(), uuid::Uuid::now_v7());
        let Reserved::Held(theirs) = quotas.reserve(&quota, now, Some(other)).await.unwrap() else {
            panic!("a slot")
        };
        let Reserved::Held(ours) = quotas
            .reserve(&quota, now + 1, Some(request))
            .await
            .unwrap()
        else {
            panic!("a slot")
        };
        assert_eq!(ours.remaining, 3);
        // The lower slot freed: the request's next write takes it first.
        quotas.release(&theirs).await.unwrap();
        let again = quotas
            .reserve(&quota, now + 2, Some(request))
            .await
            .unwrap();
        let Reserved::Earlier(kept) = again else {
            panic!("{again:?}")
        };
        let mut expected = ours.clone();
        expected.remaining = 4;
        assert_eq!(kept, expected, "its own slot, four free");
        let free = quotas.held_by(&quota, other, now + 3).await.unwrap();
        assert_eq!(free, Err(4), "the second slot given back");

        // One period after the slot's time it is free; a millisecond before, held.
        let hour = 3_600_000;
        let before = quotas
            .held_by(&quota, request, now + 1 + hour - 1)
            .await
            .unwrap();
        assert!(before.is_ok(), "{before:?}");
        let after = quotas
            .held_by(&quota, request, now + 1 + hour)
            .await
            .unwrap();
        assert_eq!(after, Err(5));
    });
}

/// A tracker slower than the timeout that opens the issue all the same,
/// after the attempt gave up on it (504): the key is held until the call
/// can no longer land (409 `idempotency_key_in_flight` with
/// `Retry-After` meanwhile, and no second call); then the retry finds the
/// issue the late call opened and answers it. One issue, one slot.
/// A tracker that answers 5xx and opens the issue anyway, a moment later
/// (GitHub's API does, for writes that land): the 502 holds the key as a
/// timeout does, the ticket keeps its slot, and the retry after
/// `Retry-After` finds the issue instead of opening a second; without a
/// later issue, the retry opens one on the same slot.
#[test]
fn a_tracker_that_answers_5xx_and_opens_the_issue_later_gets_no_second_one() {
    use std::sync::{Arc, Mutex};
    run(async {
        let clock = shared::clock::Clock::frozen_at(shared::clock::now());
        let issues: Arc<Mutex<Vec<Value>>> = Arc::default();
        let late = api_tests::providers::Gate::default();
        let (kept, gate) = (issues.clone(), late.clone());
        // "lands" answers 502 and its issue lands once `late` opens;
        // "never" answers 503 and opens nothing the first time, then opens
        // its issue (201).
        let nevers = Arc::new(AtomicU64::new(0));
        let tracker = StandIn::start(move |seen, n| {
            if seen.method == Method::GET {
                let newest_first: Vec<Value> = kept.lock().unwrap().iter().rev().cloned().collect();
                return api_tests::providers::Canned::json(200, Value::Array(newest_first));
            }
            let sent = seen.json();
            let issue = json!({
                "number": 3000 + n as u64, "title": sent["title"], "body": sent["body"],
                "created_at": chrono::Utc::now().to_rfc3339(),
            });
            if sent["title"] == "lands" {
                let (kept, opened) = (kept.clone(), gate.clone());
                tokio::spawn(async move {
                    opened.passed().await;
                    kept.lock().unwrap().push(issue);
                });
                return github_error(502, "Server Error");
            }
            if nevers.fetch_add(1, Ordering::SeqCst) == 0 {
                return github_error(503, "Service Unavailable");
            }
            kept.lock().unwrap().push(issue.clone());
            api_tests::providers::Canned::json(201, issue)
        })
        .await;
        let router = configured_by(&tracker, api_tests::providers::PROVIDER_TIMEOUT, &clock).await;
        let t = org().await;
        let body = json!({"title": "lands", "description": "Deliveries fail."});
        let first = open_keyed(&router, &t.key, "tracker-5xx", &body).await;
        first.expect(502, Some("support_tracker_error"));
        let held = first.header("retry-after").parse::<u64>().unwrap();
        assert_eq!(held, support::LANDS_WITHIN.as_secs());
        let asked = tracker.count();
        open_keyed(&router, &t.key, "tracker-5xx", &body)
            .await
            .expect(409, Some("idempotency_key_in_flight"));
        assert_eq!(tracker.count(), asked, "nothing asked of the tracker");
        late.open();
        api_tests::eventually(Duration::from_secs(20), || {
            issues.lock().unwrap().len() == 1
        })
        .await;
        clock.advance(support::LANDS_WITHIN + Duration::from_secs(1));
        let retry = open_keyed(&router, &t.key, "tracker-5xx", &body).await;
        retry.expect(201, None);
        assert_eq!(retry.body["data"]["reference"], "3000");
        assert_eq!(retry.body["data"]["quota_remaining"], 4, "one slot");
        let opened = issues
            .lock()
            .unwrap()
            .iter()
            .filter(|i| i["title"] == "lands")
            .count();
        assert_eq!(opened, 1, "no second issue");

        // A 503 that opened nothing: the retry finds none and opens it, on
        // the slot the first attempt kept.
        let body = json!({"title": "never", "description": "Still failing."});
        open_keyed(&router, &t.key, "tracker-503", &body)
            .await
            .expect(502, Some("support_tracker_error"));
        clock.advance(support::LANDS_WITHIN + Duration::from_secs(1));
        let retry = open_keyed(&router, &t.key, "tracker-503", &body).await;
        retry.expect(201, None);
        assert_eq!(retry.body["data"]["quota_remaining"], 3, "one slot each");
        let opened = issues
            .lock()
            .unwrap()
            .iter()
            .filter(|i| i["title"] == "never")
            .count();
        assert_eq!(opened, 1);
    });
}

#[test]
fn a_tracker_that_opens_the_issue_after_the_timeout_gets_no_second_one() {
    use std::sync::{Arc, Mutex};
    run(async {
        let clock = shared::clock::Clock::frozen_at(shared::clock::now());
        // Opens each issue it is asked for, visible in its list from the
        // moment it answers: once `late` opens, after the service stopped
        // waiting.
        let issues: Arc<Mutex<Vec<Value>>> = Arc::default();
        let late = api_tests::providers::Gate::default();
        let (kept, gate) = (issues.clone(), late.clone());
        let tracker = StandIn::start(move |seen, _| {
            if seen.method == Method::GET {
                let newest_first: Vec<Value> = kept.lock().unwrap().iter().rev().cloned().collect();
                return api_tests::providers::Canned::json(200, Value::Array(newest_first));
            }
            let number = 2000 + kept.lock().unwrap().len() as u64;
            let sent = seen.json();
            let issue = json!({
                "number": number, "title": sent["title"], "body": sent["body"],
                "created_at": chrono::Utc::now().to_rfc3339(),
            });
            let (kept, opened, landing) = (kept.clone(), gate.clone(), issue.clone());
            tokio::spawn(async move {
                opened.passed().await;
                kept.lock().unwrap().push(landing);
            });
            api_tests::providers::Canned::json(201, issue).held(&gate)
        })
        .await;
        let router = configured_by(&tracker, api_tests::providers::PROVIDER_TIMEOUT, &clock).await;
        let t = org().await;
        let body = ticket(9);
        let first = open_keyed(&router, &t.key, "slow-tracker", &body).await;
        first.expect(504, Some("support_tracker_timeout"));
        let held = first.header("retry-after").parse::<u64>().unwrap();
        assert_eq!(held, support::LANDS_WITHIN.as_secs());
        // An immediate retry, before the issue is in the tracker's list,
        // waits: the call could still land.
        let asked = tracker.count();
        let early = open_keyed(&router, &t.key, "slow-tracker", &body).await;
        early.expect(409, Some("idempotency_key_in_flight"));
        assert_eq!(early.header("retry-after"), held.to_string());
        assert_eq!(tracker.count(), asked, "nothing asked of the tracker");
        // The late call lands.
        late.open();
        api_tests::eventually(Duration::from_secs(20), || {
            issues.lock().unwrap().len() == 1
        })
        .await;
        // Once the call can no longer land: the retry finds the issue.
        clock.advance(support::LANDS_WITHIN + Duration::from_secs(1));
        let retry = open_keyed(&router, &t.key, "slow-tracker", &body).await;
        retry.expect(201, None);
        assert_eq!(retry.body["data"]["reference"], "2000");
        assert_eq!(retry.body["data"]["quota_remaining"], 4, "one slot");
        assert_eq!(issues.lock().unwrap().len(), 1, "no second issue");
        let again = open_keyed(&router, &t.key, "slow-tracker", &body).await;
        assert_eq!((again.status.as_u16(), &again.text), (201, &retry.text));
    });
}

/// A ticket whose attempt opened the issue but whose answer was never
/// kept (its write failed), retried more than an hour later (past the
/// quota's window, within the key's retention): the retry finds the issue
/// the dead attempt opened and answers it, opening none, and the slot it
/// took to look is given back.
#[test]
fn a_ticket_retried_past_the_quotas_hour_after_its_answer_was_lost_finds_its_issue() {
    use api_tests::cuts::{Cut, Cuts};
    run(async {
        let (tracker, issues) = crate::exactly_once::remembering_tracker().await;
        let mut plain = crate::exactly_once::with_tracker(&tracker).await;
        plain.clock = shared::clock::Clock::frozen_at(shared::clock::now());
        let cuts = Cuts::default();
        let mut faulty =
            shared::state::AppState::new((*plain.config).clone(), &cuts.sdk(&harness().await.sdk));
        faulty.clock = plain.clock.clone();
        let (plain_router, faulty_router) = (
            shared::http::app(local::routes(), plain.clone()),
            shared::http::app(local::routes(), faulty),
        );
        let t = org().await;
        let body = ticket(3);
        // Its answer never kept (the write never leaves): the issue is
        // open, the attempt answers 500, and the key's claim lapses.
        cuts.arm_on(Cut::Fail, "UpdateItem", "#body");
        let lost = open_keyed(&faulty_router, &t.key, "died", &body).await;
        cuts.disarm();
        lost.expect(500, Some("internal_error"));
        assert_eq!(issues.lock().unwrap().len(), 1);
        plain.clock.advance(Duration::from_secs(3600 + 60));
        let retry = open_keyed(&plain_router, &t.key, "died", &body).await;
        retry.expect(201, None);
        assert_eq!(
            retry.body["data"]["reference"],
            issues.lock().unwrap()[0]["number"].to_string()
        );
        assert_eq!(issues.lock().unwrap().len(), 1, "no second issue");
        assert_eq!(
            retry.body["data"]["quota_remaining"], 5,
            "the dead attempt's slot is past the hour; the one taken to look, given back"
        );
    });
}

/// A tracker that opened the issue twice and answered 502: the retry
/// finds both by the lines the service wrote, answers with the first and
/// closes the second as its duplicate, with a comment that names the
/// first (`state_reason: duplicate`); a tracker that refuses to close it
/// leaves it open, the answer naming the first all the same, and the
/// metric line says which (`TicketDuplicatesFound`, `...Closed`,
/// `...Unclosed`: the alarm's).
#[test]
fn a_retry_that_finds_two_issues_of_its_ticket_keeps_the_first_and_closes_the_other() {
    use std::sync::{Arc, Mutex};
    run(async {
        for (case, closes) in [("closing", true), ("refusing", false)] {
            let clock = shared::clock::Clock::frozen_at(shared::clock::now());
            let issues: Arc<Mutex<Vec<Value>>> = Arc::default();
            let base = if closes { 7000 } else { 8000 };
            let kept = issues.clone();
            let tracker = StandIn::start(move |seen, _| {
                let path = seen.uri.path().to_owned();
                if seen.method == Method::GET {
                    let newest_first: Vec<Value> =
                        kept.lock().unwrap().iter().rev().cloned().collect();
                    return api_tests::providers::Canned::json(200, Value::Array(newest_first));
                }
                if path.ends_with("/comments") {
                    return api_tests::providers::Canned::json(201, json!({"id": 1}));
                }
                if seen.method == Method::PATCH {
                    return if closes {
                        api_tests::providers::Canned::json(200, json!({"state": "closed"}))
                    } else {
                        github_error(403, "Resource not accessible by integration")
                    };
                }
                // Opened twice, answered 502.
                let sent = seen.json();
                let mut kept = kept.lock().unwrap();
                for number in [base, base + 1] {
                    kept.push(json!({
                        "number": number, "title": sent["title"], "body": sent["body"],
                        "created_at": chrono::Utc::now().to_rfc3339(),
                    }));
                }
                github_error(502, "Server Error")
            })
            .await;
            let router =
                configured_by(&tracker, api_tests::providers::PROVIDER_TIMEOUT, &clock).await;
            let t = org().await;
            let body = json!({"title": case, "description": "Deliveries fail."});
            open_keyed(&router, &t.key, "twice", &body)
                .await
                .expect(502, Some("support_tracker_error"));
            clock.advance(support::LANDS_WITHIN + Duration::from_secs(1));
            let retry = open_keyed(&router, &t.key, "twice", &body).await;
            retry.expect(201, None);
            assert_eq!(
                retry.body["data"]["reference"],
                base.to_string(),
                "the first"
            );
            assert_eq!(retry.body["data"]["quota_remaining"], 4, "one slot");

            let asked: Vec<(Method, String, Value)> = tracker
                .requests()
                .into_iter()
                .filter(|s| s.method != Method::GET)
                .skip(1)
                .map(|s| {
                    let body = if s.body.is_empty() {
                        Value::Null
                    } else {
                        s.json()
                    };
                    (s.method.clone(), s.uri.path().to_owned(), body)
                })
                .collect();
            let second = format!("/repos/{REPOSITORY}/issues/{}", base + 1);
            assert_eq!(asked.len(), 2, "{asked:?}");
            assert_eq!(
                (&asked[0].0, &asked[0].1),
                (&Method::POST, &format!("{second}/comments"))
            );
            let comment = asked[0].2["body"].as_str().unwrap();
            assert!(
                comment.starts_with(&format!("Duplicate of #{base}")),
                "{comment}"
            );
            assert_eq!(
                (&asked[1].0, &asked[1].1, &asked[1].2),
                (
                    &Method::PATCH,
                    &second,
                    &json!({"state": "closed", "state_reason": "duplicate"})
                )
            );
            let lines: Vec<Value> = api_tests::metrics::lines()
                .into_iter()
                .filter(|l| l["message"] == "ticket duplicates" && l["first"] == base)
                .collect();
            assert_eq!(lines.len(), 1, "{lines:?}");
            let closed = u64::from(closes);
            assert_eq!(
                (
                    &lines[0]["TicketDuplicatesFound"],
                    &lines[0]["TicketDuplicatesClosed"],
                    &lines[0]["TicketDuplicatesUnclosed"]
                ),
                (&json!(1), &json!(closed), &json!(1 - closed)),
                "{case}"
            );

            // Replayed, the answer is the one kept: the first, once more
            // nothing asked of the tracker.
            let count = tracker.count();
            let replay = open_keyed(&router, &t.key, "twice", &body).await;
            replay.expect(201, None);
            assert_eq!(replay.body["data"]["reference"], base.to_string());
            assert_eq!(tracker.count(), count);
        }
    });
}
