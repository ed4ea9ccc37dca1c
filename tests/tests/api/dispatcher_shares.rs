//! An organization's share of the dispatcher (`webhook_dispatcher::share`):
//! at most `Policy::org_batches` batches make one organization's requests
//! at once, so a receiver that hangs holds no more; an attempt whose
//! organization's share is full is put off (no request, no count) and
//! made later, once; a place whose batch was killed lapses.

use std::sync::Arc;
use std::time::Duration;

use api_tests::webhooks::{Receiver, Stack, quick_policy};
use api_tests::{TestOrg, metrics, org, run};
use http::Method;
use serde_json::{Value, json};
use shared::store::records::dispatch_shares::{Place, Taken};
use uuid::Uuid;

use crate::deliveries::{deliver_load, register, send};
use crate::sites::new_site;
use crate::surpluses::new_load;

/// A delivered load of `t` (a new site's).
async fn delivered(stack: &Stack, t: &TestOrg) {
    let site = new_site(t, json!({"name": "Origin"})).await;
    let load = new_load(t, &site).await;
    deliver_load(stack, t, &load).await;
}

/// The lines of attempts put off, of organization `org`.
fn put_off_lines(org: Uuid) -> Vec<Value> {
    metrics::lines()
        .into_iter()
        .filter(|line| {
            line["message"] == "webhook attempt put off" && line["org_id"] == org.to_string()
        })
        .collect()
}

/// The attempts `hook`'s deliveries list shows.
async fn attempts(stack: &Stack, t: &TestOrg, hook: &str) -> Vec<Value> {
    let path = format!("/api/v1/webhooks/{hook}/deliveries");
    let reply = send(stack, t, Method::GET, &path, None).await;
    reply.expect(200, None);
    reply.body["data"].as_array().unwrap().clone()
}

#[test]
fn a_hanging_receiver_holds_at_most_its_organizations_share_and_the_attempts_put_off_are_made_once_later()
 {
    run(async {
        let policy = webhook_dispatcher::policy::Policy {
            org_batches: 1,
            put_off: Duration::from_secs(1),
            ..quick_policy(1)
        };
        let stack = Arc::new(Stack::new(policy, false, |_| {}).await);
        let (hostile, innocent) = (org().await, org().await);
        let (hangs, answers) = (Receiver::start(vec![]).await, Receiver::start(vec![]).await);
        hangs.answer_late(Some(Duration::from_secs(120)));
        let (hook, _) = register(
            &stack,
            &hostile,
            &format!("{}/h", hangs.base),
            "hmac_sha256",
        )
        .await;
        register(
            &stack,
            &innocent,
            &format!("{}/h", answers.base),
            "hmac_sha256",
        )
        .await;

        // A batch makes the hostile organization's first request, which
        // hangs: the batch holds the organization's one place.
        delivered(&stack, &hostile).await;
        let first = {
            let stack = stack.clone();
            tokio::spawn(async move {
                loop {
                    let polled = local::poller::poll_once(&stack.dispatcher, &stack.state.queue);
                    if polled.await.expect("poll") == 0 {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            })
        };
        let within = tokio::time::Instant::now() + Duration::from_secs(20);
        while hangs.count() == 0 {
            assert!(
                tokio::time::Instant::now() < within,
                "the first request never came"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let org_id = hostile.org.id;
        let places = stack.state.store.dispatch_shares();
        assert_eq!(places.held(org_id).await.unwrap().len(), 1);

        // Meanwhile another batch: the hostile organization's next attempt
        // is put off without a request; the innocent one's delivery goes.
        delivered(&stack, &hostile).await;
        delivered(&stack, &innocent).await;
        stack
            .drain_until(Duration::from_secs(20), || {
                answers.count() >= 1 && !put_off_lines(org_id).is_empty()
            })
            .await;
        assert_eq!(answers.count(), 1, "the innocent delivery went");
        assert_eq!(hangs.count(), 1, "no second request while the first hangs");
        let put_off = put_off_lines(org_id);
        let line = &put_off[0];
        assert_eq!(line["AttemptsPutOff"], 1, "{line}");
        assert_eq!(line["manual"], false);
        let wait = line["wait_ms"].as_u64().unwrap();
        assert!((1000..=2000).contains(&wait), "{wait} ms");
        let second = line["delivery_id"].as_str().unwrap().to_owned();
        let record = stack
            .state
            .store
            .deliveries()
            .get(second.parse().unwrap())
            .await
            .unwrap()
            .expect("the delivery");
        assert_eq!(record.attempts, 0, "putting off counts no attempt");
        assert!(
            metrics::of_delivery(&second)
                .iter()
                .all(|line| line["message"] != "webhook attempt")
        );

        // The first batch is killed where it hangs: its place stays until
        // its lease ends, and nothing of the organization goes before.
        first.abort();
        let _ = first.await;
        hangs.answer_late(None);
        stack.drain_until(Duration::from_secs(3), || false).await;
        assert_eq!(hangs.count(), 1, "the dead batch's place still holds");
        let lease = stack.dispatcher.policy().batch_lease;
        stack.state.clock.advance(lease + Duration::from_secs(1));
        stack.api.clock.advance(lease + Duration::from_secs(1));

        // After it, the attempt put off is made, once, as the delivery's
        // first; and the share is empty again.
        stack.drain_until_received(&hangs, 2).await;
        stack.drain_until(Duration::from_secs(3), || false).await;
        let made: Vec<Value> = attempts(&stack, &hostile, &hook)
            .await
            .into_iter()
            .filter(|a| a["delivery_id"] == second.as_str())
            .collect();
        assert_eq!(made.len(), 1, "{made:?}");
        assert_eq!(made[0]["attempt"], 1);
        assert_eq!(made[0]["status_code"], 204);
        assert_eq!(hangs.requests()[1].json()["id"], second.as_str());
        assert_eq!(places.held(org_id).await.unwrap(), Vec::<String>::new());
    });
}

#[test]
fn a_share_holds_its_limit_of_places_and_a_lapsed_place_gives_way() {
    run(async {
        let shares = api_tests::harness().await.store().dispatch_shares();
        let org = Uuid::now_v7();
        let now = 1_000_000;
        let place = |until: i64| Place::new(Uuid::now_v7(), until);
        let (a, b, c) = (
            place(now + 60_000),
            place(now + 30_000),
            place(now + 60_000),
        );
        assert_eq!(shares.take(org, &a, 2, now).await.unwrap(), Taken::Yes);
        // Taking again is no second place.
        assert_eq!(shares.take(org, &a, 2, now).await.unwrap(), Taken::Yes);
        assert_eq!(shares.take(org, &b, 2, now).await.unwrap(), Taken::Yes);
        assert_eq!(
            shares.take(org, &c, 2, now).await.unwrap(),
            Taken::Full {
                last_lapses: now + 60_000
            }
        );
        assert_eq!(shares.held(org).await.unwrap().len(), 2);
        // b's batch was killed: at its lease's end its place gives way.
        assert_eq!(
            shares.take(org, &c, 2, now + 30_000).await.unwrap(),
            Taken::Yes
        );
        let mut held = shares.held(org).await.unwrap();
        held.sort();
        let mut want = vec![a.as_str().to_owned(), c.as_str().to_owned()];
        want.sort();
        assert_eq!(held, want);
        // Given back, a place is free at once.
        shares.give_back(org, &a).await.unwrap();
        let d = place(now + 90_000);
        assert_eq!(
            shares.take(org, &d, 2, now + 30_000).await.unwrap(),
            Taken::Yes
        );
        shares.give_back(org, &c).await.unwrap();
        shares.give_back(org, &d).await.unwrap();
        assert!(shares.held(org).await.unwrap().is_empty());
    });
}
