//! Duplicate issues found after a support request's answer was given (a
//! call that landed after the retry opened its own; a tracker whose list
//! showed an issue only later), undone by the operator's `admin tickets
//! reconcile` (`shared::tracker::duplicates::sweep`): the issue the answer named
//! stays open, every other is closed as its duplicate with a comment that
//! names it, the replayed answer still names it, and a second run finds
//! nothing more.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api_tests::providers::{Canned, Gate, PROVIDER_TIMEOUT, StandIn, github_error};
use api_tests::{Reply, call, harness, org, run};
use axum::Router;
use http::Method;
use serde_json::{Value, json};
use shared::clock::Clock;
use shared::config::Config;
use shared::deployment_key::KeySource;
use shared::state::AppState;

use crate::rotation::admin_on;

const REPOSITORY: &str = "acme/integration-support";

/// A tracker that keeps its issues as GitHub does: numbered as they land,
/// listed newest first (but for those not yet `listed`), commented on and
/// closed. "late" lands its first issue only once `late` opens, its
/// answer held as long (the service gives up first); "lagging" opens its
/// first at once, unlisted, and answers 502.
#[derive(Clone, Default)]
struct Tracker {
    issues: Arc<Mutex<Vec<Value>>>,
    unlisted: Arc<Mutex<HashSet<u64>>>,
    late: Gate,
}

impl Tracker {
    fn land(&self, sent: &Value) -> Value {
        let mut issues = self.issues.lock().unwrap();
        let issue = json!({
            "number": 100 + issues.len() as u64, "title": sent["title"], "body": sent["body"],
            "state": "open", "created_at": chrono::Utc::now().to_rfc3339(),
        });
        issues.push(issue.clone());
        issue
    }

    fn titled(&self, title: &str) -> Vec<Value> {
        let issues = self.issues.lock().unwrap();
        issues
            .iter()
            .filter(|i| i["title"] == title)
            .cloned()
            .collect()
    }

    async fn start(&self) -> StandIn {
        let this = self.clone();
        let asked: Arc<Mutex<Vec<String>>> = Arc::default();
        StandIn::start(move |seen, _| {
            let path = seen.uri.path().to_owned();
            if seen.method == Method::GET {
                let unlisted = this.unlisted.lock().unwrap().clone();
                let issues = this.issues.lock().unwrap();
                let listed: Vec<Value> = issues
                    .iter()
                    .rev()
                    .filter(|i| !unlisted.contains(&i["number"].as_u64().unwrap()))
                    .cloned()
                    .collect();
                return Canned::json(200, Value::Array(listed));
            }
            if path.ends_with("/comments") {
                return Canned::json(201, json!({"id": 1}));
            }
            if seen.method == Method::PATCH {
                let number: u64 = path.rsplit('/').next().unwrap().parse().unwrap();
                let mut issues = this.issues.lock().unwrap();
                for issue in issues.iter_mut().filter(|i| i["number"] == number) {
                    issue["state"] = json!("closed");
                }
                return Canned::json(200, json!({"state": "closed"}));
            }
            let sent = seen.json();
            let title = sent["title"].as_str().unwrap().to_owned();
            let first = {
                let mut asked = asked.lock().unwrap();
                asked.push(title.clone());
                asked.iter().filter(|t| **t == title).count() == 1
            };
            match (title.as_str(), first) {
                ("late", true) => {
                    let (landing, sent) = (this.clone(), sent.clone());
                    tokio::spawn(async move {
                        landing.late.passed().await;
                        landing.land(&sent);
                    });
                    github_error(502, "Server Error").held(&this.late)
                }
                ("lagging", true) => {
                    let issue = this.land(&sent);
                    let number = issue["number"].as_u64().unwrap();
                    this.unlisted.lock().unwrap().insert(number);
                    github_error(502, "Server Error")
                }
                _ => Canned::json(201, this.land(&sent)),
            }
        })
        .await
    }
}

async fn configured(tracker: &StandIn, clock: &Clock) -> (Router, Config) {
    let (router, state) = configured_state(tracker, clock).await;
    (router, (*state.config).clone())
}

async fn configured_state(tracker: &StandIn, clock: &Clock) -> (Router, AppState) {
    let base = tracker.base.clone();
    let (_, mut state) = harness().await.instance_with(|c| {
        c.support.repository = Some(REPOSITORY.into());
        c.support.token = Some(KeySource::Value(b"ghp_TESTreconcile0123456789".to_vec()));
        c.support.api_url = base;
        c.support.labels = vec!["support".into()];
        c.support.timeout = PROVIDER_TIMEOUT;
    });
    state.clock = clock.clone();
    (shared::http::app(local::routes(), state.clone()), state)
}

async fn open_keyed(router: &Router, key: &str, idempotency_key: &str, title: &str) -> Reply {
    call(Method::POST, "/api/v1/support")
        .key(key)
        .header("idempotency-key", idempotency_key)
        .json(&json!({"title": title, "description": "Deliveries fail."}))
        .send_to(router)
        .await
}

/// The requests to the tracker after the first `skip` that change an
/// issue: (method, path, body).
fn writes_after(tracker: &StandIn, skip: usize) -> Vec<(Method, String, Value)> {
    tracker
        .requests()
        .into_iter()
        .skip(skip)
        .filter(|s| s.method != Method::GET)
        .map(|s| (s.method.clone(), s.uri.path().to_owned(), s.json()))
        .collect()
}

#[test]
fn issues_that_landed_after_the_answer_are_closed_as_duplicates_of_the_one_it_named() {
    run(async {
        let clock = Clock::frozen_at(shared::clock::now());
        let began = clock.now();
        let fake = Tracker::default();
        let tracker = fake.start().await;
        let (router, config) = configured(&tracker, &clock).await;
        let t = org().await;

        // A call that lands after the retry opened the ticket: the retry's
        // issue is answered, the late one comes after (a higher number).
        open_keyed(&router, &t.key, "late-key", "late")
            .await
            .expect(504, Some("support_tracker_timeout"));
        // A tracker whose list shows the first issue only later: the retry
        // opens a second and answers it (a higher number: not the first).
        open_keyed(&router, &t.key, "lagging-key", "lagging")
            .await
            .expect(502, Some("support_tracker_error"));
        clock.advance(support::LANDS_WITHIN + Duration::from_secs(1));
        let late = open_keyed(&router, &t.key, "late-key", "late").await;
        late.expect(201, None);
        let lagging = open_keyed(&router, &t.key, "lagging-key", "lagging").await;
        lagging.expect(201, None);
        fake.late.open();
        api_tests::eventually(Duration::from_secs(20), || fake.titled("late").len() == 2).await;
        fake.unlisted.lock().unwrap().clear();
        let named = |reply: &Reply| -> u64 {
            reply.body["data"]["reference"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        };
        let numbers = |title: &str| -> Vec<u64> {
            fake.titled(title)
                .iter()
                .map(|i| i["number"].as_u64().unwrap())
                .collect()
        };
        let (late_kept, lagging_kept) = (named(&late), named(&lagging));
        let late_extra = *numbers("late").iter().find(|n| **n != late_kept).unwrap();
        let lagging_extra = *numbers("lagging")
            .iter()
            .find(|n| **n != lagging_kept)
            .unwrap();
        assert!(late_extra > late_kept, "the late one landed after");
        assert!(
            lagging_extra < lagging_kept,
            "the unlisted one is the first"
        );

        // A dry run says what it would close and closes nothing.
        let asked = tracker.count();
        let dry = admin_on(&config, &clock, &["tickets", "reconcile", "--dry-run"])
            .await
            .unwrap();
        assert!(writes_after(&tracker, asked).is_empty(), "nothing written");
        let total = dry.lines.last().unwrap();
        assert_eq!(
            (&total["found"], &total["closed"]),
            (&json!(2), &json!(0)),
            "{total}"
        );

        // The run: each extra issue closed, the answered one kept.
        let asked = tracker.count();
        let done = admin_on(&config, &clock, &["tickets", "reconcile"])
            .await
            .unwrap();
        let total = done.lines.last().unwrap();
        assert_eq!(
            (
                &total["found"],
                &total["closed"],
                &total["unclosed"],
                &total["requests"]
            ),
            (&json!(2), &json!(2), &json!(0), &json!(2)),
            "{total}"
        );
        for (kept, extra, request_title) in [
            (late_kept, late_extra, "late"),
            (lagging_kept, lagging_extra, "lagging"),
        ] {
            let line = done
                .lines
                .iter()
                .find(|l| l["kept"] == kept)
                .unwrap_or_else(|| panic!("{request_title}: {:?}", done.lines));
            assert_eq!(line["because"], "answered");
            assert_eq!(line["duplicates"], json!([extra]));
            let issue = format!("/repos/{REPOSITORY}/issues/{extra}");
            let writes: Vec<(Method, String, Value)> = writes_after(&tracker, asked)
                .into_iter()
                .filter(|(_, path, _)| path.starts_with(&issue))
                .collect();
            assert_eq!(writes.len(), 2, "{writes:?}");
            assert_eq!(writes[0].1, format!("{issue}/comments"));
            let comment = writes[0].2["body"].as_str().unwrap();
            assert!(
                comment.starts_with(&format!("Duplicate of #{kept}")),
                "{comment}"
            );
            assert_eq!(
                (&writes[1].0, &writes[1].2),
                (
                    &Method::PATCH,
                    &json!({"state": "closed", "state_reason": "duplicate"})
                )
            );
            let states: Vec<(u64, String)> = fake
                .titled(request_title)
                .iter()
                .map(|i| {
                    (
                        i["number"].as_u64().unwrap(),
                        i["state"].as_str().unwrap().to_owned(),
                    )
                })
                .collect();
            assert!(states.contains(&(kept, "open".into())), "{states:?}");
            assert!(states.contains(&(extra, "closed".into())), "{states:?}");
            // Its metric line: found by the sweep, the kept one named.
            let lines: Vec<Value> = api_tests::metrics::lines()
                .into_iter()
                .filter(|l| {
                    l["message"] == "ticket duplicates" && l["by"] == "sweep" && l["first"] == kept
                })
                .collect();
            assert_eq!(lines.len(), 1, "{lines:?}");
            assert_eq!(lines[0]["by"], "sweep");
            assert_eq!(
                (
                    &lines[0]["TicketDuplicatesFound"],
                    &lines[0]["TicketDuplicatesClosed"],
                    &lines[0]["TicketDuplicatesUnclosed"]
                ),
                (&json!(1), &json!(1), &json!(0))
            );
        }
        // The replayed answers name the issues kept.
        let again = open_keyed(&router, &t.key, "lagging-key", "lagging").await;
        assert_eq!((again.status.as_u16(), &again.text), (201, &lagging.text));

        // Run again: nothing more to close.
        let asked = tracker.count();
        let again = admin_on(&config, &clock, &["tickets", "reconcile"])
            .await
            .unwrap();
        let total = again.lines.last().unwrap();
        assert_eq!(
            (&total["found"], &total["closed"]),
            (&json!(0), &json!(0)),
            "{total}"
        );
        assert!(writes_after(&tracker, asked).is_empty());

        // Both runs audited, the dry run not.
        let since = began.to_rfc3339();
        let trail = admin_on(&config, &clock, &["audit", "list", "--since", &since])
            .await
            .unwrap()
            .lines;
        let runs: Vec<&Value> = trail
            .iter()
            .filter(|r| r["command"] == "tickets-reconcile" && r["outcome"] != "started")
            .collect();
        assert_eq!(runs.len(), 2, "{trail:?}");
        assert!(runs.iter().all(|r| r["target"]["hours"] == 24), "{runs:?}");
    });
}

/// The dispatcher's schedule does the same, over the last 2 hours: the
/// late issue closed as a duplicate of the answered one; a second sweep
/// writes nothing.
#[test]
fn the_dispatchers_sweep_closes_an_issue_that_landed_after_the_answer() {
    run(async {
        let clock = Clock::frozen_at(shared::clock::now());
        let fake = Tracker::default();
        let tracker = fake.start().await;
        let (router, state) = configured_state(&tracker, &clock).await;
        let t = org().await;
        open_keyed(&router, &t.key, "late-key", "late")
            .await
            .expect(504, Some("support_tracker_timeout"));
        clock.advance(support::LANDS_WITHIN + Duration::from_secs(1));
        let answered = open_keyed(&router, &t.key, "late-key", "late").await;
        answered.expect(201, None);
        fake.late.open();
        api_tests::eventually(Duration::from_secs(20), || fake.titled("late").len() == 2).await;
        let kept: u64 = answered.body["data"]["reference"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();

        let policy = api_tests::webhooks::quick_policy(1);
        let sweeper = webhook_dispatcher::Dispatcher::new(state, policy);
        let asked = tracker.count();
        clock.scope(sweeper.tickets()).await;
        let states: Vec<(u64, String)> = fake
            .titled("late")
            .iter()
            .map(|i| {
                (
                    i["number"].as_u64().unwrap(),
                    i["state"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let extra = states.iter().find(|(n, _)| *n != kept).unwrap().0;
        assert!(states.contains(&(kept, "open".into())), "{states:?}");
        assert!(states.contains(&(extra, "closed".into())), "{states:?}");
        let writes = writes_after(&tracker, asked);
        assert_eq!(writes.len(), 2, "a comment and the close: {writes:?}");
        let comment = writes[0].2["body"].as_str().unwrap();
        assert!(
            comment.starts_with(&format!("Duplicate of #{kept}")),
            "{comment}"
        );

        let asked = tracker.count();
        clock.scope(sweeper.tickets()).await;
        assert!(writes_after(&tracker, asked).is_empty(), "nothing more");
    });
}
