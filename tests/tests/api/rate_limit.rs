use std::time::Duration;

use api_tests::{Reply, call, harness, org, run};
use aws_sdk_dynamodb::types::AttributeValue;
use axum::Router;
use http::Method;
use shared::clock::Clock;

/// A router (its settings changed by `change`) on a clock frozen 10 s
/// into a minute: the test's requests fall in one 60 s window however
/// slow the machine and whatever the hour, and time passes only when the
/// test moves the clock.
pub(crate) async fn in_a_frozen_minute(
    change: impl FnOnce(&mut shared::config::Config),
) -> (Router, Clock) {
    let minute = 60_000;
    let start = shared::clock::unix_ms() / minute * minute + minute + 10_000;
    let at = chrono::DateTime::from_timestamp_millis(i64::try_from(start).unwrap()).unwrap();
    let clock = Clock::frozen_at(at);
    let (_, mut state) = harness().await.instance_with(change);
    state.clock = clock.clone();
    (shared::http::app(local::routes(), state), clock)
}

/// The stored count of a key's window of `window_len` seconds at `clock`'s
/// time (on its counters' item).
async fn stored_count(key: &str, window_len: u64, clock: &Clock) -> u64 {
    let h = harness().await;
    let db = aws_sdk_dynamodb::Client::new(&h.sdk);
    let window = u64::try_from(clock.now().timestamp()).unwrap() / window_len;
    let hash = shared::auth::key::KeyHash::of(key).to_hex();
    let item = db
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
        .unwrap()
        .parse()
        .unwrap()
}

async fn get_orgs(router: &Router, key: &str) -> Reply {
    call(Method::GET, "/api/v1/orgs")
        .key(key)
        .send_to(router)
        .await
}

#[test]
fn remaining_counts_down_per_successful_request() {
    run(async {
        let t = org().await;
        let (router, _) = in_a_frozen_minute(|_| {}).await;
        let first = get_orgs(&router, &t.key).await;
        let second = get_orgs(&router, &t.key).await;
        assert_eq!(first.header("x-ratelimit-limit"), "100");
        assert_eq!(first.header("x-ratelimit-remaining"), "99");
        assert_eq!(second.header("x-ratelimit-remaining"), "98");
        let reset: u64 = first.header("x-ratelimit-reset").parse().unwrap();
        assert_eq!(reset % 60, 0, "resets at the window's end");
    });
}

#[test]
fn concurrent_burst_admits_exactly_the_limit() {
    run(async {
        let t = org().await;
        let (router, clock) = in_a_frozen_minute(|_| {}).await;
        let replies = futures::future::join_all((0..150).map(|_| {
            let (key, router) = (t.key.clone(), router.clone());
            tokio::spawn(async move { get_orgs(&router, &key).await })
        }))
        .await;
        let replies: Vec<Reply> = replies.into_iter().map(Result::unwrap).collect();
        let ok = replies.iter().filter(|r| r.status == 200).count();
        let limited: Vec<&Reply> = replies.iter().filter(|r| r.status == 429).collect();
        assert_eq!((ok, limited.len()), (100, 50));
        for reply in limited {
            reply.expect(429, Some("rate_limited"));
            assert_eq!(reply.body["error"], "Too Many Requests");
            assert_eq!(reply.header("x-ratelimit-remaining"), "0");
            let retry: u64 = reply.header("retry-after").parse().unwrap();
            assert!((1..=60).contains(&retry));
        }
        // Refused requests consumed nothing: the window holds exactly 100.
        assert_eq!(stored_count(&t.key, 60, &clock).await, 100);
        get_orgs(&router, &t.key)
            .await
            .expect(429, Some("rate_limited"));
        assert_eq!(stored_count(&t.key, 60, &clock).await, 100);
    });
}

#[test]
fn limit_is_configurable_and_can_be_switched_off() {
    run(async {
        let t = org().await;
        let (small, _) = in_a_frozen_minute(|c| c.http.rate_limit.limit = 3).await;
        for remaining in ["2", "1", "0"] {
            let reply = call(Method::GET, "/api/v1/orgs")
                .key(&t.key)
                .send_to(&small)
                .await;
            reply.expect(200, None);
            assert_eq!(reply.header("x-ratelimit-remaining"), remaining);
        }
        call(Method::GET, "/api/v1/orgs")
            .key(&t.key)
            .send_to(&small)
            .await
            .expect(429, Some("rate_limited"));

        let (off, _) = in_a_frozen_minute(|c| {
            c.http.rate_limit.limit = 3;
            c.http.rate_limit.enabled = false;
        })
        .await;
        for _ in 0..5 {
            let reply = call(Method::GET, "/api/v1/orgs")
                .key(&t.key)
                .send_to(&off)
                .await;
            reply.expect(200, None);
            assert_eq!(reply.header("x-ratelimit-limit"), "3");
            assert_eq!(reply.header("x-ratelimit-remaining"), "3");
        }
    });
}

#[test]
fn each_key_has_its_own_budget() {
    run(async {
        let t = org().await;
        let (small, _) = in_a_frozen_minute(|c| c.http.rate_limit.limit = 1).await;
        let other = api_tests::new_key(t.id(), &[shared::auth::Scope::All]).await;
        call(Method::GET, "/api/v1/orgs")
            .key(&t.key)
            .send_to(&small)
            .await
            .expect(200, None);
        call(Method::GET, "/api/v1/orgs")
            .key(&t.key)
            .send_to(&small)
            .await
            .expect(429, Some("rate_limited"));
        call(Method::GET, "/api/v1/orgs")
            .key(&other)
            .send_to(&small)
            .await
            .expect(200, None);
    });
}

#[test]
fn only_successful_requests_spend_budget() {
    run(async {
        let t = org().await;
        let (small, clock) = in_a_frozen_minute(|c| c.http.rate_limit.limit = 3).await;
        let send = |method: Method, path: String| {
            let small = small.clone();
            let key = t.key.clone();
            async move { call(method, &path).key(&key).send_to(&small).await }
        };
        // Accepted key, failed answers: 404, 422, 400, 403 org_id_mismatch.
        let failures = [
            (
                Method::GET,
                format!("/api/v1/orgs/{}", uuid::Uuid::now_v7()),
                404,
            ),
            (Method::GET, "/api/v1/sites?status=bogus".to_owned(), 422),
            (Method::GET, "/api/v1/sites/not-a-uuid".to_owned(), 400),
            (
                Method::PATCH,
                format!("/api/v1/orgs/{}", uuid::Uuid::now_v7()),
                400,
            ),
        ];
        for _ in 0..2 {
            for (method, path, status) in &failures {
                let reply = send(method.clone(), path.clone()).await;
                assert_eq!(reply.status.as_u16(), *status, "{path}: {}", reply.text);
                assert_eq!(reply.header("x-ratelimit-remaining"), "3", "{path}");
            }
        }
        for remaining in ["2", "1", "0"] {
            let reply = send(Method::GET, "/api/v1/orgs".to_owned()).await;
            reply.expect(200, None);
            assert_eq!(reply.header("x-ratelimit-remaining"), remaining);
        }
        send(Method::GET, "/api/v1/orgs".to_owned())
            .await
            .expect(429, Some("rate_limited"));
        assert_eq!(
            stored_count(&t.key, 60, &clock).await,
            3,
            "the window holds the successes only"
        );
    });
}

#[test]
fn a_refused_key_is_shown_its_true_remaining_budget() {
    run(async {
        let t = api_tests::org_with(&[shared::auth::Scope::ReadOrgs]).await;
        let (small, _) = in_a_frozen_minute(|c| c.http.rate_limit.limit = 2).await;
        for _ in 0..2 {
            call(Method::GET, "/api/v1/orgs")
                .key(&t.key)
                .send_to(&small)
                .await
                .expect(200, None);
        }
        // The key lacks read:data: 403, and its budget is spent.
        let refused = call(Method::GET, "/api/v1/sites")
            .key(&t.key)
            .send_to(&small)
            .await;
        refused.expect(403, Some("insufficient_scope"));
        assert_eq!(refused.header("x-ratelimit-limit"), "2");
        assert_eq!(refused.header("x-ratelimit-remaining"), "0");
    });
}

#[test]
fn a_client_that_waits_retry_after_is_admitted() {
    run(async {
        let t = org().await;
        let (small, clock) = in_a_frozen_minute(|c| {
            c.http.rate_limit.limit = 2;
            c.http.rate_limit.window = Duration::from_secs(2);
        })
        .await;
        let orgs = || get_orgs(&small, &t.key);
        for round in 0..3 {
            // Spend the budget, get refused, wait exactly what Retry-After
            // says, and be admitted: also across the sliding window's edge.
            // (At most the limit plus what the window carried over is
            // admitted first: a bounded loop, so a budget that never runs
            // out fails here instead of hanging.)
            let mut refused = None;
            for _ in 0..8 {
                let reply = orgs().await;
                if reply.status != 200 {
                    refused = Some(reply);
                    break;
                }
            }
            let refused = refused.expect("refused within 8 requests of a limit of 2");
            refused.expect(429, Some("rate_limited"));
            let wait: u64 = refused.header("retry-after").parse().unwrap();
            assert!((1..=4).contains(&wait), "{wait}");
            let reset: u64 = refused.header("x-ratelimit-reset").parse().unwrap();
            let now = u64::try_from(clock.now().timestamp()).unwrap();
            assert!(reset > now && reset <= now + 4, "reset {reset}, now {now}");
            clock.advance(Duration::from_secs(wait));
            orgs().await.expect(200, None);
            // The next round starts a little into a window, not at its edge.
            clock.advance(Duration::from_millis(300 * (round + 1)));
        }
    });
}

#[test]
fn failed_requests_have_a_ceiling_of_their_own() {
    run(async {
        let t = org().await;
        let other = org().await;
        // A limit of 2: failed requests stop at 5 x 2 = 10 a window.
        let (small, _) = in_a_frozen_minute(|c| c.http.rate_limit.limit = 2).await;
        let missing = format!("/api/v1/orgs/{}", uuid::Uuid::now_v7());
        let get = |key: &str, path: &str| call(Method::GET, path).key(key).send_to(&small);
        for _ in 0..10 {
            let reply = get(&t.key, &missing).await;
            reply.expect(404, Some("org_not_found"));
            assert_eq!(reply.header("x-ratelimit-remaining"), "2");
        }
        let refused = get(&t.key, &missing).await;
        refused.expect(429, Some("rate_limited"));
        assert!(refused.body["message"].as_str().unwrap().contains("failed"));
        assert_eq!(refused.header("x-ratelimit-remaining"), "0");
        let wait: u64 = refused.header("retry-after").parse().unwrap();
        assert!((1..=60).contains(&wait), "{wait}");
        // Until the window ends, the key makes no request at all; another
        // key is not affected.
        get(&t.key, "/api/v1/orgs")
            .await
            .expect(429, Some("rate_limited"));
        get(&other.key, "/api/v1/orgs").await.expect(200, None);
    });
}

/// The contract's numbers, pinned, on a clock frozen 10 s into a 60 s
/// window with a limit of 3: the admitted requests count
/// `X-RateLimit-Remaining` down 2, 1, 0 under `X-RateLimit-Limit: 3` and
/// `X-RateLimit-Reset` at the end of the next window (when none of them
/// counts any more); the fourth is 429 `rate_limited` with
/// `Retry-After: 51` (the three weigh 2 from the next window's first
/// millisecond); 50 s later it is still refused, `Retry-After: 1`, and
/// 51 s later admitted, with nothing left. Another key's fifteen failed
/// requests (five times the limit) close its window: the sixteenth is the
/// failed-requests 429, `Retry-After: 50` (the window's end). (Found
/// with it: a warm key's admission, in a task of its own, read the
/// system's time instead of the request's clock.)
#[test]
fn the_rate_limits_numbers_are_exact() {
    run(async {
        let h = harness().await;
        let minute = 60_000;
        let start = shared::clock::unix_ms() / minute * minute + 10_000;
        let at = chrono::DateTime::from_timestamp_millis(i64::try_from(start).unwrap()).unwrap();
        let clock = shared::clock::Clock::frozen_at(at);
        let (_, mut state) = h.instance_with(|c| {
            c.http.rate_limit.limit = 3;
            c.http.rate_limit.window = Duration::from_secs(60);
        });
        state.clock = clock.clone();
        let router = shared::http::app(local::routes(), state);
        let (t, other) = (org().await, org().await);
        let get = |key: &str, path: &str| call(Method::GET, path).key(key).send_to(&router);
        let headers = |reply: &Reply| {
            [
                "x-ratelimit-limit",
                "x-ratelimit-remaining",
                "x-ratelimit-reset",
                "retry-after",
            ]
            .map(|name| reply.header(name).to_owned())
        };
        let window_end = |windows: u64| (start / minute + windows) * 60;

        for remaining in ["2", "1", "0"] {
            let reply = get(&t.key, "/api/v1/orgs").await;
            reply.expect(200, None);
            let reset = window_end(2).to_string();
            assert_eq!(headers(&reply), ["3", remaining, reset.as_str(), ""]);
        }
        let refused = get(&t.key, "/api/v1/orgs").await;
        refused.expect(429, Some("rate_limited"));
        assert_eq!(
            refused.body["message"],
            "rate limit exceeded; retry after 51 seconds"
        );
        let reset = window_end(2).to_string();
        assert_eq!(headers(&refused), ["3", "0", reset.as_str(), "51"]);

        clock.advance(Duration::from_secs(50));
        let early = get(&t.key, "/api/v1/orgs").await;
        early.expect(429, Some("rate_limited"));
        assert_eq!(early.header("retry-after"), "1");
        clock.advance(Duration::from_secs(1));
        let admitted = get(&t.key, "/api/v1/orgs").await;
        admitted.expect(200, None);
        let reset = window_end(3).to_string();
        assert_eq!(headers(&admitted), ["3", "0", reset.as_str(), ""]);

        // The failed-requests ceiling, in the window that began at 60 s.
        clock.advance(Duration::from_secs(9));
        let missing = format!("/api/v1/orgs/{}", uuid::Uuid::now_v7());
        for _ in 0..15 {
            let reply = get(&other.key, &missing).await;
            reply.expect(404, Some("org_not_found"));
            assert_eq!(reply.header("x-ratelimit-remaining"), "3");
        }
        let closed = get(&other.key, "/api/v1/orgs").await;
        closed.expect(429, Some("rate_limited"));
        assert_eq!(
            closed.body["message"],
            "this key made too many failed requests in this minute; retry after 50 seconds"
        );
        let reset = window_end(2).to_string();
        assert_eq!(headers(&closed), ["3", "0", reset.as_str(), "50"]);
    });
}
