//! Warm reads: once an instance admitted a key, a read's own query starts
//! with the key's admission (`http::lifecycle`, `auth::memory`): one round
//! trip instead of two. Admission still decides every request, so a key
//! that may no longer read is refused on its very next request, with none
//! of the record in the answer; and two organizations' keys on one
//! instance never see each other's records.

use std::time::Duration;

use api_tests::{Reply, TestOrg, call, harness, new_key, org, run};
use axum::Router;
use http::Method;
use serde_json::json;
use shared::auth::Scope;
use shared::auth::key::KeyHash;

use crate::sites::new_site;

async fn get(router: &Router, t: &TestOrg, path: &str) -> Reply {
    call(Method::GET, path).key(&t.key).send_to(router).await
}

/// A fresh instance (no key remembered), and `t`'s key made warm on it.
async fn warm_instance(t: &TestOrg) -> Router {
    let router = harness().await.router_with(|_| {});
    get(&router, t, "/api/v1/orgs").await.expect(200, None);
    router
}

/// `warm_instance` on a clock of its own, which the test moves.
async fn warm_instance_on(t: &TestOrg, clock: &shared::clock::Clock) -> Router {
    let (_, mut state) = harness().await.instance_with(|_| {});
    state.clock = clock.clone();
    let router = shared::http::app(local::routes(), state);
    get(&router, t, "/api/v1/orgs").await.expect(200, None);
    router
}

/// The fewest round trips `path` took in a few tries (calls made at once
/// overlap on a busy debug build most of the time, not always).
async fn fewest_round_trips(router: &Router, t: &TestOrg, path: &str) -> u32 {
    let mut fewest = u32::MAX;
    for _ in 0..12 {
        let reply = get(router, t, path).await;
        reply.expect(200, None);
        fewest = fewest.min(reply.round_trips);
        if fewest <= 1 {
            break;
        }
    }
    fewest
}

/// A refusal carries the contract's error body and nothing of the record,
/// and no log line of the run holds the record's `secret` (its name).
fn refused_without_data(reply: &Reply, status: u16, code: &str, secret: &str) {
    reply.expect(status, Some(code));
    assert!(reply.body.get("data").is_none(), "{}", reply.text);
    assert!(!reply.text.contains(secret), "{}", reply.text);
    assert!(
        !api_tests::logs::logs().contains(secret),
        "a log line holds {secret:?}"
    );
}

#[test]
fn a_warm_read_takes_one_round_trip_and_a_cold_one_two() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Warm yard"})).await;
        let path = format!("/api/v1/sites/{site}");
        // Cold: every read on a fresh instance.
        let cold = harness().await.router_with(|_| {});
        let first = get(&cold, &t, &path).await;
        first.expect(200, None);
        assert_eq!(first.round_trips, 2, "the key, then the site");
        // Warm: the key's admission and the site's read at once.
        let warm = warm_instance(&t).await;
        for path in [
            path.clone(),
            "/api/v1/orgs".into(),
            "/api/v1/sites".into(),
            "/api/v1/surpluses?limit=100".into(),
            "/api/v1/reports/summary".into(),
            "/api/v1/webhooks".into(),
            "/api/v1/places/nearby?lat=60.2&lng=24.9".into(),
        ] {
            assert_eq!(fewest_round_trips(&warm, &t, &path).await, 1, "{path}");
        }
        // The answer is the cold one's, at the cold one's cost: a strongly
        // consistent read of the key and of the site (a unit each, under
        // 4 KB), and the count's write (a unit), where no lease is taken
        // (`rate_limit::a_busy_key_is_admitted_from_its_lease`).
        let counted = harness().await.router_with(|c| c.http.rate_limit.lease = 1);
        get(&counted, &t, "/api/v1/orgs").await.expect(200, None);
        let again = get(&counted, &t, &path).await;
        assert!(!first.warm && again.warm);
        assert_eq!(again.body, first.body);
        let units = |r: &Reply| (r.units.read, r.units.write);
        assert_eq!(units(&first), (2.0, 1.0));
        assert_eq!(units(&again), (2.0, 1.0));
    });
}

#[test]
fn with_warm_requests_off_every_request_waits_for_its_admission() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Cold yard"})).await;
        let path = format!("/api/v1/sites/{site}");
        let off = harness()
            .await
            .router_with(|config| config.http.warm_requests = false);
        let mut answers = Vec::new();
        for _ in 0..3 {
            let reply = get(&off, &t, &path).await;
            reply.expect(200, None);
            assert_eq!(reply.round_trips, 2, "the key, then the site");
            assert!(!reply.warm);
            answers.push(reply.body);
        }
        let reply = patch(&off, &t, &path, json!({"city": "Oulu"})).await;
        reply.expect(200, None);
        assert_eq!(reply.round_trips, 3, "the key, the site, the write");
        assert_eq!(answers[0], answers[2]);
        assert_eq!(reply.body["data"]["city"], "Oulu");
    });
}

#[test]
fn a_key_that_may_no_longer_read_is_refused_on_its_next_warm_request() {
    run(async {
        let h = harness().await;
        let store = h.store();
        // Revoked.
        let t = org().await;
        let site = new_site(&t, json!({"name": "Secret yard R"})).await;
        let path = format!("/api/v1/sites/{site}");
        let router = warm_instance(&t).await;
        get(&router, &t, &path).await.expect(200, None);
        let key_id = store.api_keys().list(t.id()).await.unwrap()[0].key_id;
        store.api_keys().revoke(t.id(), key_id).await.unwrap();
        let reply = get(&router, &t, &path).await;
        refused_without_data(&reply, 401, "api_key_revoked", "Secret yard R");

        // Organization deactivated.
        let t = org().await;
        let site = new_site(&t, json!({"name": "Secret yard D"})).await;
        let path = format!("/api/v1/sites/{site}");
        let router = warm_instance(&t).await;
        get(&router, &t, &path).await.expect(200, None);
        store.orgs().deactivate(t.id()).await.unwrap();
        let reply = get(&router, &t, &path).await;
        refused_without_data(&reply, 403, "org_inactive", "Secret yard D");

        // Entitlement switched off.
        let t = org().await;
        let site = new_site(&t, json!({"name": "Secret yard E"})).await;
        let path = format!("/api/v1/sites/{site}");
        let router = warm_instance(&t).await;
        get(&router, &t, &path).await.expect(200, None);
        store
            .api_keys()
            .set_entitlement(t.id(), false)
            .await
            .unwrap();
        let reply = get(&router, &t, &path).await;
        refused_without_data(&reply, 403, "feature_not_enabled", "Secret yard E");

        // Expired while warm.
        let t = org().await;
        let site = new_site(&t, json!({"name": "Secret yard X"})).await;
        let path = format!("/api/v1/sites/{site}");
        // An hour from now, by the instance's clock, which then passes it.
        let expires = chrono::Utc::now() + chrono::Duration::hours(1);
        let (key, _) = store
            .api_keys()
            .create(
                t.id(),
                vec![Scope::All],
                Some(expires.into()),
                None,
                "svc_app_",
            )
            .await
            .unwrap();
        let short = TestOrg {
            org: t.org.clone(),
            key,
        };
        let clock = shared::clock::Clock::default();
        let router = warm_instance_on(&short, &clock).await;
        get(&router, &short, &path).await.expect(200, None);
        clock.advance(Duration::from_secs(3601));
        let reply = get(&router, &short, &path).await;
        refused_without_data(&reply, 401, "api_key_expired", "Secret yard X");

        // A scope the key lacks.
        let t = org().await;
        let site = new_site(&t, json!({"name": "Secret yard S"})).await;
        let orgs_only = TestOrg {
            org: t.org.clone(),
            key: new_key(t.id(), &[Scope::ReadOrgs]).await,
        };
        let router = warm_instance(&orgs_only).await;
        let reply = get(&router, &orgs_only, &format!("/api/v1/sites/{site}")).await;
        refused_without_data(&reply, 403, "insufficient_scope", "Secret yard S");
    });
}

#[test]
fn a_spent_budget_is_refused_at_once_and_its_refusals_read_nothing() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Secret yard B"})).await;
        let path = format!("/api/v1/sites/{site}");
        // The key's budget (3) is spent by the site's creation and the
        // reads below, on an instance that remembers the key.
        let router = harness().await.router_with(|c| c.http.rate_limit.limit = 3);
        let mut admitted = 0;
        while get(&router, &t, &path).await.status.is_success() {
            admitted += 1;
            assert!(admitted <= 3, "more reads admitted than the budget");
        }
        for _ in 0..3 {
            let reply = get(&router, &t, &path).await;
            refused_without_data(&reply, 429, "rate_limited", "Secret yard B");
            // The key's read and count, nothing more: no read of the site
            // for a key remembered at its limit.
            assert_eq!(
                reply.ddb_calls, 2,
                "a refusal cost {} calls",
                reply.ddb_calls
            );
        }
    });
}

#[test]
fn two_organizations_on_one_warm_instance_never_see_each_others_records() {
    run(async {
        let a = org().await;
        let b = org().await;
        let a_site = new_site(&a, json!({"name": "A's yard"})).await;
        let b_site = new_site(&b, json!({"name": "B's yard"})).await;
        let router = harness().await.router_with(|_| {});
        for _ in 0..3 {
            for (t, own, other, other_name) in [
                (&a, &a_site, &b_site, "B's yard"),
                (&b, &b_site, &a_site, "A's yard"),
            ] {
                get(&router, t, &format!("/api/v1/sites/{own}"))
                    .await
                    .expect(200, None);
                let theirs = get(&router, t, &format!("/api/v1/sites/{other}")).await;
                refused_without_data(&theirs, 404, "site_not_found", other_name);
                let list = get(&router, t, "/api/v1/sites?status=all").await;
                assert!(!list.text.contains(other_name), "{}", list.text);
            }
        }
    });
}

async fn patch(router: &Router, t: &TestOrg, path: &str, body: serde_json::Value) -> Reply {
    call(Method::PATCH, path)
        .key(&t.key)
        .json(&body)
        .send_to(router)
        .await
}

#[test]
fn a_warm_patch_reads_beside_its_admission_and_writes_after_it() {
    run(async {
        let t = org().await;
        let site = new_site(&t, json!({"name": "Patched yard"})).await;
        let path = format!("/api/v1/sites/{site}");
        // Cold: the key, the site, then the write.
        let cold = harness().await.router_with(|_| {});
        let first = patch(&cold, &t, &path, json!({"city": "Oulu"})).await;
        first.expect(200, None);
        assert_eq!(first.round_trips, 3, "the key, the site, the write");
        // Warm: the key and the site at once, then the write.
        let warm = warm_instance(&t).await;
        let mut fewest = u32::MAX;
        for n in 0..12 {
            let city = format!("Town {n}");
            let reply = patch(&warm, &t, &path, json!({"city": city})).await;
            reply.expect(200, None);
            assert_eq!(reply.body["data"]["city"], json!(city));
            fewest = fewest.min(reply.round_trips);
            if fewest <= 2 {
                break;
            }
        }
        assert_eq!(fewest, 2);
        // What was written is what a read shows.
        let stored = harness()
            .await
            .store()
            .sites()
            .require(t.id(), site.parse().unwrap())
            .await
            .unwrap();
        assert!(
            stored
                .city
                .as_deref()
                .is_some_and(|c| c.starts_with("Town "))
        );
    });
}

#[test]
fn a_warm_patch_of_a_key_that_may_no_longer_write_writes_nothing() {
    run(async {
        let h = harness().await;
        let store = h.store();
        for (code, status) in [
            ("api_key_revoked", 401),
            ("org_inactive", 403),
            ("feature_not_enabled", 403),
        ] {
            let t = org().await;
            let site = new_site(&t, json!({"name": format!("Kept yard {code}")})).await;
            let id = site.parse().unwrap();
            let path = format!("/api/v1/sites/{site}");
            let router = warm_instance(&t).await;
            patch(&router, &t, &path, json!({"city": "Before"}))
                .await
                .expect(200, None);
            let before = store.sites().require(t.id(), id).await.unwrap();
            match code {
                "api_key_revoked" => {
                    let key_id = store.api_keys().list(t.id()).await.unwrap()[0].key_id;
                    store.api_keys().revoke(t.id(), key_id).await.unwrap();
                }
                "org_inactive" => store.orgs().deactivate(t.id()).await.unwrap(),
                _ => store
                    .api_keys()
                    .set_entitlement(t.id(), false)
                    .await
                    .unwrap(),
            }
            let reply = patch(&router, &t, &path, json!({"city": "After"})).await;
            refused_without_data(&reply, status, code, "Kept yard");
            let after = store.sites().require(t.id(), id).await.unwrap();
            assert_eq!(after.city.as_deref(), Some("Before"), "{code}: written");
            assert_eq!(after.version, before.version, "{code}: written");
        }
    });
}

#[test]
fn a_write_waits_for_its_admission_and_a_write_that_does_not_wait_fails() {
    use shared::gate::{WriteGate, writes_may_go};
    use shared::store::exactly_once::quotas::{Counted, WindowQuota};
    run(async {
        let store = harness().await.store();
        let quota = WindowQuota {
            pk: format!("TEST#gate#{}", uuid::Uuid::now_v7()),
            uses: 5,
            period: Duration::from_secs(60),
        };
        let now = shared::model::now().unix_millis();
        let gate = WriteGate::default();
        gate.scope(async {
            let admission = WriteGate::hold().expect("inside a gate");
            // A write that does not wait is refused while the gate holds,
            // and nothing is counted.
            assert!(store.quotas().count(&quota, now).await.is_err());
            let waiting = writes_may_go();
            admission.decide(true);
            waiting.await.expect("let in");
            assert_eq!(
                store.quotas().count(&quota, now).await.unwrap(),
                Counted::Within { remaining: 4 },
                "the refused write counted nothing"
            );
        })
        .await;
    });
}

#[test]
fn a_key_remembered_for_another_organization_runs_again_cold_and_writes_nothing() {
    run(async {
        let a = org().await;
        let b = org().await;
        let a_site = new_site(&a, json!({"name": "A's own yard"})).await;
        let b_site: uuid::Uuid = new_site(&b, json!({"name": "B's own yard"}))
            .await
            .parse()
            .unwrap();
        let h = harness().await;
        let (router, instance) = h.instance_with(|_| {});
        // The instance takes A's key for B's (a guard: a key never changes
        // organization, so only a fault could make it so).
        let mut mistaken = h.store().api_keys().list(a.id()).await.unwrap().remove(0);
        mistaken.org_id = b.id();
        let mistake = || {
            instance
                .key_memory
                .remember(&KeyHash::of(&a.key), &mistaken, true)
        };

        // A read of A's site runs first as B's (no such site there), is
        // dropped, and runs again cold, as A's.
        mistake();
        let reply = get(&router, &a, &format!("/api/v1/sites/{a_site}")).await;
        reply.expect(200, None);
        assert_eq!(reply.body["data"]["name"], "A's own yard");
        assert!(!reply.warm);
        // Corrected: the next read is warm, as A's.
        let reply = get(&router, &a, &format!("/api/v1/sites/{a_site}")).await;
        reply.expect(200, None);
        assert!(reply.warm);

        // A PATCH of B's site with A's key: run first as B's, it finds the
        // site and its write waits for the admission, which names A:
        // nothing is written, and the cold run answers as A's.
        mistake();
        let before = h.store().sites().require(b.id(), b_site).await.unwrap();
        let path = format!("/api/v1/sites/{b_site}");
        let reply = patch(&router, &a, &path, json!({"city": "Taken"})).await;
        refused_without_data(&reply, 404, "site_not_found", "B's own yard");
        let after = h.store().sites().require(b.id(), b_site).await.unwrap();
        assert_eq!(after, before, "B's site was written");
    });
}
