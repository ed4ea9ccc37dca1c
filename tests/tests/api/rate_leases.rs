//! Rate-limit leases (`ratelimit::lease`): a busy key's admission counts a
//! few slots at once and the instance admits the key's next requests from
//! them, reading instead of writing. The budget headers stay exact, a
//! revoked key is refused on its very next request, and instances leasing
//! together never admit more than the limit in a window.

use std::time::Duration;

use api_tests::{Reply, TestOrg, call, harness, key_id, org, run};
use aws_sdk_dynamodb::types::AttributeValue;
use axum::Router;
use http::Method;
use shared::clock::Clock;

const MINUTE_MS: u64 = 60_000;

/// An instance with limit `limit` and leases of up to `lease` slots, on a
/// clock frozen 10 s into the next minute: the instance and the window
/// index it counts in.
async fn instance(clock: &Clock, limit: u32, lease: u32) -> Router {
    let (_, mut state) = harness().await.instance_with(|c| {
        c.http.rate_limit.limit = limit;
        c.http.rate_limit.lease = lease;
        c.http.rate_limit.window = Duration::from_secs(60);
    });
    state.clock = clock.clone();
    shared::http::app(local::routes(), state)
}

fn frozen() -> (Clock, u64) {
    let start = shared::clock::unix_ms() / MINUTE_MS * MINUTE_MS + MINUTE_MS + 10_000;
    let at = chrono::DateTime::from_timestamp_millis(i64::try_from(start).unwrap()).unwrap();
    (Clock::frozen_at(at), start / MINUTE_MS)
}

async fn orgs(router: &Router, t: &TestOrg) -> Reply {
    call(Method::GET, "/api/v1/orgs")
        .key(&t.key)
        .send_to(router)
        .await
}

/// What the key's counters hold for window `window`.
async fn stored(t: &TestOrg, window: u64) -> u64 {
    let h = harness().await;
    let hash = shared::auth::key::KeyHash::of(&t.key).to_hex();
    let item = aws_sdk_dynamodb::Client::new(&h.sdk)
        .get_item()
        .table_name(h.store().table())
        .key("pk", AttributeValue::S(format!("RATE#{hash}")))
        .key("sk", AttributeValue::S("RATE".into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .unwrap_or_default();
    item.get(&format!("c{window}"))
        .and_then(|v| v.as_n().ok())
        .map_or(0, |n| n.parse().unwrap())
}

#[test]
fn a_busy_key_is_admitted_from_its_lease() {
    run(async {
        let (clock, window) = frozen();
        let router = instance(&clock, 100, 8).await;
        let t = org().await;
        let mut counted = Vec::new();
        for i in 0..40u32 {
            let reply = orgs(&router, &t).await;
            reply.expect(200, None);
            // The budget is exact whether the request was counted or leased.
            assert_eq!(
                reply.header("x-ratelimit-remaining"),
                (99 - i).to_string(),
                "request {i}"
            );
            if reply.units.write > 0.0 {
                assert_eq!(reply.units.write, 1.0, "one counting write");
                counted.push(i);
            } else {
                // The key (strongly consistent) and its counters
                // (eventually) instead of the count's write.
                assert_eq!(reply.units.read, 2.5, "request {i}");
            }
        }
        // 1, 1, 2, 4, then 8 slots at a time.
        assert_eq!(counted, [0, 1, 2, 4, 8, 16, 24, 32]);
        // The counters hold what was admitted and the lease's last slots.
        assert_eq!(stored(&t, window).await, 40);
        let last = orgs(&router, &t).await;
        last.expect(200, None);
        assert_eq!(last.units.write, 1.0, "the lease is used up");
        assert_eq!(stored(&t, window).await, 48, "7 slots held");
        assert_eq!(last.header("x-ratelimit-remaining"), "59");
    });
}

#[test]
fn a_key_near_its_limit_is_counted_one_request_at_a_time() {
    run(async {
        let (clock, window) = frozen();
        let router = instance(&clock, 20, 8).await;
        let t = org().await;
        for _ in 0..20 {
            orgs(&router, &t).await.expect(200, None);
        }
        // Exactly the limit: no slot is left leased and unused.
        orgs(&router, &t).await.expect(429, Some("rate_limited"));
        assert_eq!(stored(&t, window).await, 20);
    });
}

#[test]
fn a_revoked_key_holding_a_lease_is_refused_on_its_next_request() {
    run(async {
        let (clock, _) = frozen();
        let router = instance(&clock, 100, 8).await;
        let t = org().await;
        for _ in 0..6 {
            orgs(&router, &t).await.expect(200, None);
        }
        let store = harness().await.store();
        store
            .api_keys()
            .revoke(t.id(), key_id(&t).await)
            .await
            .unwrap();
        let refused = orgs(&router, &t).await;
        refused.expect(401, Some("api_key_revoked"));
        assert!(refused.body.get("data").is_none());
    });
}

#[test]
fn instances_leasing_together_never_admit_more_than_the_limit() {
    run(async {
        let (clock, window) = frozen();
        let limit = 30;
        let instances = [
            instance(&clock, limit, 8).await,
            instance(&clock, limit, 8).await,
            instance(&clock, limit, 8).await,
        ];
        let t = org().await;
        let replies = futures::future::join_all(instances.iter().map(|router| async {
            let mut mine = Vec::new();
            for _ in 0..25 {
                mine.push(orgs(router, &t).await);
            }
            mine
        }))
        .await;
        let replies: Vec<&Reply> = replies.iter().flatten().collect();
        let admitted = replies.iter().filter(|r| r.status == 200).count();
        for refused in replies.iter().filter(|r| r.status != 200) {
            refused.expect(429, Some("rate_limited"));
        }
        let held = stored(&t, window).await;
        assert!(held <= u64::from(limit), "counted {held}");
        assert!(
            admitted as u64 <= held,
            "admitted {admitted}, counted {held}"
        );
        // What the instances held and did not use: at most a quarter of
        // the budget each near the limit.
        assert!(admitted as u64 + 3 * 8 >= held, "admitted {admitted}");
        // Every instance is refused now, leases or not.
        for router in &instances {
            let reply = orgs(router, &t).await;
            if reply.status == 200 {
                assert!(admitted < limit as usize);
            } else {
                reply.expect(429, Some("rate_limited"));
            }
        }
        assert!(stored(&t, window).await <= u64::from(limit));
    });
}
