//! An `Idempotency-Key` used again after its 24 hours' retention, for each
//! `POST` that causes something outside the API's records (a file, a
//! provider's call, a delivery attempt): the second use is a new request.
//! It runs anew, under names of its own, and never touches what the first
//! one made: a delivered load's waybill stays where its record says, a
//! ticket opens a second issue, a retry makes a second attempt. Time is
//! moved by each test's own clock, not waited for.

use std::time::Duration;

use api_tests::{Reply, TestOrg, call, harness, http, multipart, org, run, unique};
use axum::Router;
use http::Method;
use serde_json::{Value, json};
use shared::http::idempotency::RETENTION;
use shared::state::AppState;

use crate::waybills::{PNG, post_form};

const BOUNDARY: &str = "reused-key";

/// An API of its own (its own clock), and an organization.
async fn api() -> (Router, AppState, TestOrg) {
    let (router, state) = harness().await.instance_with(|_| {});
    (router, state, org().await)
}

async fn send(router: &Router, t: &TestOrg, method: Method, path: &str, body: Value) -> Reply {
    call(method, path)
        .key(&t.key)
        .json(&body)
        .send_to(router)
        .await
}

/// A new load of `t`'s, at a new site.
async fn load(router: &Router, t: &TestOrg) -> String {
    let site = send(
        router,
        t,
        Method::POST,
        "/api/v1/sites",
        json!({"name": "Origin"}),
    )
    .await;
    site.expect(201, None);
    let body = json!({"site_id": site.body["data"]["id"], "volume_m3": 2});
    let load = send(router, t, Method::POST, "/api/v1/surpluses", body).await;
    load.expect(201, None);
    load.body["data"]["id"].as_str().unwrap().to_owned()
}

async fn upload(router: &Router, t: &TestOrg, load: &str, key: &str) -> Reply {
    call(Method::POST, &format!("/api/v1/surpluses/{load}/waybill"))
        .key(&t.key)
        .header("idempotency-key", key)
        .body(
            &format!("multipart/form-data; boundary={BOUNDARY}"),
            multipart(BOUNDARY, &[], Some(("w.png", "image/png", PNG))),
        )
        .send_to(router)
        .await
}

async fn deliver(router: &Router, t: &TestOrg, load: &str) {
    let path = format!("/api/v1/surpluses/{load}");
    let body = json!({"status": "delivered"});
    send(router, t, Method::PATCH, &path, body)
        .await
        .expect(200, None);
}

/// The load's waybill: its `storage_path`, and what a fresh link to it
/// downloads.
async fn waybill(router: &Router, t: &TestOrg, load: &str) -> (String, u16, Vec<u8>) {
    let path = format!("/api/v1/surpluses/{load}");
    let read = call(Method::GET, &path).key(&t.key).send_to(router).await;
    read.expect(200, None);
    let w = &read.body["data"]["waybill"];
    let (status, bytes) = http("GET", w["url"].as_str().unwrap(), &[], b"").await;
    (
        w["storage_path"].as_str().unwrap().to_owned(),
        status,
        bytes,
    )
}

/// Past the first request's retention.
fn a_day_later(state: &AppState) {
    state.clock.advance(RETENTION + Duration::from_secs(1));
}

#[test]
fn a_waybill_upload_reused_after_its_retention_never_touches_the_delivered_loads_waybill() {
    run(async {
        let (router, state, t) = api().await;
        let load = load(&router, &t).await;
        // Integrators derive keys from the operation.
        let key = format!("waybill-{load}");
        let first = upload(&router, &t, &load, &key).await;
        first.expect(200, None);
        let kept = first.body["data"]["waybill"]["storage_path"]
            .as_str()
            .unwrap()
            .to_owned();
        deliver(&router, &t, &load).await;
        a_day_later(&state);
        let again = upload(&router, &t, &load, &key).await;
        again.expect(409, Some("waybill_locked"));
        assert_eq!(again.header("idempotent-replayed"), "", "a new request");
        assert_eq!(waybill(&router, &t, &load).await, (kept, 200, PNG.to_vec()));
    });
}

#[test]
fn a_confirmation_reused_after_its_retention_never_touches_the_delivered_loads_waybill() {
    run(async {
        let (router, state, t) = api().await;
        let load = load(&router, &t).await;
        let form_path = format!("/api/v1/surpluses/{load}/waybill/upload");
        let form = send(
            &router,
            &t,
            Method::POST,
            &form_path,
            json!({"content_type": "image/png"}),
        )
        .await;
        form.expect(200, None);
        let status = post_form(&form.body["data"], "image/png", PNG).await;
        assert!((200..300).contains(&status), "{status}");
        let confirm = || {
            call(
                Method::POST,
                &format!("/api/v1/surpluses/{load}/waybill/confirm"),
            )
            .key(&t.key)
            .header("idempotency-key", "confirm-waybill")
            .json(&json!({"storage_path": form.body["data"]["storage_path"]}))
            .send_to(&router)
        };
        let first = confirm().await;
        first.expect(200, None);
        let kept = first.body["data"]["waybill"]["storage_path"]
            .as_str()
            .unwrap()
            .to_owned();
        deliver(&router, &t, &load).await;
        a_day_later(&state);
        // A new request: the same upload confirmed again answers the load
        // as it is; nothing is copied, replaced or deleted.
        let again = confirm().await;
        again.expect(200, None);
        assert_eq!(again.header("idempotent-replayed"), "");
        assert_eq!(again.body["data"]["waybill"]["storage_path"], kept);
        assert_eq!(waybill(&router, &t, &load).await, (kept, 200, PNG.to_vec()));
    });
}

#[test]
fn an_upload_form_reused_after_its_retention_is_a_new_form() {
    run(async {
        let (router, state, t) = api().await;
        let load = load(&router, &t).await;
        let ask = || {
            call(
                Method::POST,
                &format!("/api/v1/surpluses/{load}/waybill/upload"),
            )
            .key(&t.key)
            .header("idempotency-key", "form")
            .json(&json!({"content_type": "image/png"}))
            .send_to(&router)
        };
        let first = ask().await;
        first.expect(200, None);
        let replayed = ask().await;
        assert_eq!(replayed.header("idempotent-replayed"), "true");
        a_day_later(&state);
        let again = ask().await;
        again.expect(200, None);
        assert_eq!(again.header("idempotent-replayed"), "");
        assert_ne!(
            again.body["data"]["storage_path"], first.body["data"]["storage_path"],
            "each request's form writes an object of its own"
        );
    });
}

#[test]
fn a_ticket_reused_after_its_retention_opens_a_new_issue() {
    run(async {
        let (tracker, issues) = crate::exactly_once::remembering_tracker().await;
        let state = crate::exactly_once::with_tracker(&tracker).await;
        let router = shared::http::app(local::routes(), state.clone());
        let t = org().await;
        let open = || {
            call(Method::POST, "/api/v1/support")
                .key(&t.key)
                .header("idempotency-key", "ticket")
                .json(&json!({"title": "Deliveries fail", "description": "Since 09:00."}))
                .send_to(&router)
        };
        let first = open().await;
        first.expect(201, None);
        a_day_later(&state);
        let again = open().await;
        again.expect(201, None);
        assert_eq!(again.header("idempotent-replayed"), "");
        assert_ne!(
            again.body["data"]["reference"],
            first.body["data"]["reference"]
        );
        assert_eq!(issues.lock().unwrap().len(), 2, "one issue per request");
        assert_eq!(
            tracker
                .requests()
                .iter()
                .filter(|s| s.method == Method::GET)
                .count(),
            0,
            "no earlier attempt of either request began an issue: nothing looked for"
        );
    });
}

#[test]
fn a_geocode_reused_after_its_retention_asks_the_provider_again() {
    run(async {
        let (provider, router, state) = crate::exactly_once::geocoding().await;
        let t = org().await;
        let key = unique("geocode");
        let ask = || {
            call(Method::POST, "/api/v1/geocode")
                .key(&t.key)
                .header("idempotency-key", &key)
                .json(&json!({"address": "Mannerheimintie 1, Helsinki"}))
                .send_to(&router)
        };
        ask().await.expect(200, None);
        assert_eq!(ask().await.header("idempotent-replayed"), "true");
        assert_eq!(provider.count(), 1);
        a_day_later(&state);
        let again = ask().await;
        again.expect(200, None);
        assert_eq!(again.header("idempotent-replayed"), "");
        assert_eq!(provider.count(), 2);
    });
}

#[test]
fn a_delivery_retry_reused_after_its_retention_makes_a_second_attempt() {
    use api_tests::webhooks::{Receiver, Stack, quick_policy};
    run(async {
        let stack = Stack::new(quick_policy(8), false, |_| {}).await;
        let t = org().await;
        let receiver = Receiver::start(vec![]).await;
        let (hook, _) = crate::deliveries::webhook_and_delivered_load(&stack, &t, &receiver).await;
        let within = Duration::from_secs(20);
        stack.drain_until(within, || receiver.count() >= 1).await;
        let delivery = receiver.first_delivery();
        let retry = || {
            call(
                Method::POST,
                &format!("/api/v1/webhooks/{hook}/deliveries/{delivery}/retry"),
            )
            .key(&t.key)
            .header("idempotency-key", &format!("retry-{delivery}"))
            .send_to(&stack.router)
        };
        retry().await.expect(202, None);
        stack.drain_until(within, || receiver.count() >= 2).await;
        a_day_later(&stack.api);
        let again = retry().await;
        again.expect(202, None);
        assert_eq!(again.header("idempotent-replayed"), "");
        stack.drain_until(within, || receiver.count() >= 3).await;
        stack.drain().await;
        assert_eq!(receiver.count(), 3, "the first attempt and one per request");
    });
}
