//! No write leaves a partial change: every write route is run again and
//! again with its 2nd, 3rd, ... DynamoDB call failed (an SDK interceptor;
//! the 1st is the key's admission), until a run meets no failure. Each
//! failed run answers 500 `internal_error` and leaves the table exactly as
//! it was (a table of this test's own, read whole before and after; only
//! the key's request counters move).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use api_tests::{Reply, call, harness, run, unique, unique_phone};
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::types::AttributeValue;
use axum::Router;
use http::Method;
use serde_json::{Value, json};
use shared::auth::Scope;
use shared::store::Store;

use crate::trucks::plate;

/// Fails the `fail_at`-th call made after it is armed.
#[derive(Debug, Default)]
struct Fault {
    calls: AtomicUsize,
    fail_at: AtomicUsize,
    failed: std::sync::Mutex<Option<String>>,
}

#[derive(Debug, Clone)]
struct FailNth(Arc<Fault>);

impl Intercept for FailNth {
    fn name(&self) -> &'static str {
        "FailNth"
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let n = self.0.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.0.fail_at.load(Ordering::SeqCst) {
            let operation = cfg
                .load::<aws_smithy_runtime_api::client::orchestrator::Metadata>()
                .map_or("?".to_owned(), |m| m.name().to_owned());
            *self.0.failed.lock().unwrap() = Some(operation);
            return Err("injected fault".into());
        }
        Ok(())
    }
}

impl Fault {
    fn arm(&self, fail_at: usize) {
        self.calls.store(0, Ordering::SeqCst);
        self.fail_at.store(fail_at, Ordering::SeqCst);
        *self.failed.lock().unwrap() = None;
    }

    /// The operation whose call was failed, if the run got that far.
    fn failed(&self) -> Option<String> {
        self.failed.lock().unwrap().clone()
    }
}

struct Bench {
    state: shared::state::AppState,
    table: String,
    db: aws_sdk_dynamodb::Client,
    plain: Router,
    faulty: Router,
    fault: Arc<Fault>,
    key: String,
    org: uuid::Uuid,
}

impl Bench {
    async fn new() -> Bench {
        let h = harness().await;
        let table = format!("test-{}", uuid::Uuid::new_v4());
        let db = Store::client(&h.sdk);
        shared::store::engine::schema::ensure_table(&db, &table)
            .await
            .expect("table");
        let mut config = (*h.state.config).clone();
        config.store.table = table.clone();
        config.http.rate_limit.limit = 100_000;
        let state = shared::state::AppState::new(config, &h.sdk);
        let org = state
            .store
            .orgs()
            .create_top_level(&api_tests::named(&unique("Partial")), true)
            .await
            .unwrap();
        let prefix = state.config.http.short_name.key_prefix();
        let (key, _) = state
            .store
            .api_keys()
            .create(org.id, vec![Scope::All], None, None, &prefix)
            .await
            .unwrap();
        api_tests::logs::remember(&key);
        let fault = Arc::new(Fault::default());
        let faulty_db = aws_sdk_dynamodb::Client::from_conf(
            aws_sdk_dynamodb::config::Builder::from(&h.sdk)
                .interceptor(FailNth(fault.clone()))
                .build(),
        );
        let mut faulty_state = state.clone();
        faulty_state.store = Store::new(faulty_db, table.as_str());
        Bench {
            plain: shared::http::app(local::routes(), state.clone()),
            state,
            faulty: shared::http::app(local::routes(), faulty_state),
            table,
            db,
            fault,
            key,
            org: org.id,
        }
    }

    async fn send(
        &self,
        router: &Router,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Reply {
        let mut request = call(method, path).key(&self.key);
        if let Some(body) = body {
            request = request.json(body);
        }
        request.send_to(router).await
    }

    /// The id of a record created without faults.
    async fn create(&self, path: &str, body: Value) -> String {
        let reply = self
            .send(&self.plain, Method::POST, path, Some(&body))
            .await;
        reply.expect(201, None);
        reply.body["data"]["id"].as_str().unwrap().to_owned()
    }

    /// Every item of the table, the key's request counters (successes and
    /// failures) left out.
    async fn snapshot(&self) -> BTreeSet<String> {
        let mut items = BTreeSet::new();
        let mut start = None;
        loop {
            let page = self
                .db
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .unwrap();
            for item in page.items() {
                // A quota's use is spent by the attempt, whatever follows
                // (`model::quota`: the recovery's, counted before its
                // work): not part of the write.
                let spent = item
                    .get("pk")
                    .and_then(|pk| pk.as_s().ok())
                    .is_some_and(|pk| pk.starts_with("QUOTA#"));
                if spent {
                    continue;
                }
                let kept: BTreeMap<&String, String> = item
                    .iter()
                    .filter(|(name, _)| {
                        !((name.starts_with('c') || name.starts_with('f'))
                            && name.len() > 1
                            && name[1..].bytes().all(|b| b.is_ascii_digit()))
                    })
                    .map(|(name, value)| (name, canonical(value)))
                    .collect();
                items.insert(format!("{kept:?}"));
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                return items;
            }
        }
    }
}

/// Writes not run here, and why.
const NOT_HERE: [(&str, &str); 7] = [
    // Their own tests: the file goes to S3 first and is deleted again
    // when the record is not kept (tests/tests/api/waybills.rs).
    ("POST", "/api/v1/surpluses/{}/waybill"),
    ("POST", "/api/v1/surpluses/{}/waybill/confirm"),
    // Writes nothing: signs a form.
    ("POST", "/api/v1/surpluses/{}/waybill/upload"),
    // One conditional write each (a quota slot), then a provider's answer.
    ("POST", "/api/v1/geocode"),
    ("POST", "/api/v1/support"),
    // Needs a failed delivery; one conditional update (deliveries.rs).
    ("POST", "/api/v1/webhooks/{}/deliveries/{}/retry"),
    // One conditional write (a use of the webhook's ping quota, spent
    // whatever follows, as the geocoding quota's), then one transaction
    // (crash-tested in exactly_once.rs).
    ("POST", "/api/v1/webhooks/{}/ping"),
];

/// Every write of the description is a case here or in `NOT_HERE`.
fn assert_covers_every_write(cases: &[(Method, String, Option<Value>)]) {
    let covered: BTreeSet<(String, String)> = cases
        .iter()
        .map(|(method, path, _)| (method.to_string(), shape(path)))
        .chain(NOT_HERE.iter().map(|(m, p)| (m.to_string(), p.to_string())))
        .collect();
    for (path, item) in docs::OPENAPI["paths"].as_object().unwrap() {
        if !path.starts_with("/api/v1/") {
            continue;
        }
        for method in ["post", "put", "patch", "delete"] {
            if item.get(method).is_some() {
                let write = (method.to_uppercase(), shape(path));
                assert!(covered.contains(&write), "{write:?} is not run with faults");
            }
        }
    }
}

/// `path` with every id, or parameter in braces, written `{}`.
fn shape(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') || uuid::Uuid::try_parse(segment).is_ok() {
                "{}"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A value written the same way whatever order its maps came in.
fn canonical(value: &AttributeValue) -> String {
    match value {
        AttributeValue::M(fields) => {
            let sorted: BTreeMap<&String, String> = fields
                .iter()
                .map(|(name, value)| (name, canonical(value)))
                .collect();
            format!("M{sorted:?}")
        }
        AttributeValue::L(items) => {
            format!("L{:?}", items.iter().map(canonical).collect::<Vec<_>>())
        }
        AttributeValue::Ss(set) | AttributeValue::Ns(set) => {
            format!("{:?}", set.iter().collect::<BTreeSet<_>>())
        }
        other => format!("{other:?}"),
    }
}

#[test]
fn a_failed_call_in_any_write_leaves_nothing_half_done() {
    run(async {
        let b = Bench::new().await;
        let org = b.org;
        let site = b.create("/api/v1/sites", json!({"name": "Origin"})).await;
        let other_site = b.create("/api/v1/sites", json!({"name": "Other"})).await;
        let point = b
            .create(
                "/api/v1/receiving-points",
                json!({"site_id": site, "name": "Gate"}),
            )
            .await;
        let factory = b
            .create("/api/v1/factories", json!({"name": "Plant"}))
            .await;
        let member = b
            .create(
                "/api/v1/members",
                json!({"first_name": "Dee", "last_name": "River", "phone": unique_phone(), "role": "driver"}),
            )
            .await;
        let truck = b
            .create(
                "/api/v1/trucks",
                json!({"orgId": org, "license": plate(), "country": "fi"}),
            )
            .await;
        let load = b
            .create(
                "/api/v1/surpluses",
                json!({"site_id": site, "volume_m3": 3}),
            )
            .await;
        let delivered = b
            .create(
                "/api/v1/surpluses",
                json!({"site_id": site, "volume_m3": 2}),
            )
            .await;
        let path = format!("waybills/{org}/{delivered}/w.png");
        let delivered_id = delivered.parse().unwrap();
        api_tests::store_waybill(&b.state.store, org, delivered_id, &path)
            .await
            .unwrap();
        let hook = b
            .create(
                "/api/v1/webhooks",
                json!({"event": "surplus.delivered", "url": "https://hooks.example.com/partial"}),
            )
            .await;
        // A grantee in this table.
        let grantee_org = b
            .create("/api/v1/orgs", json!({"name": unique("Grantee")}))
            .await;
        let cases: Vec<(Method, String, Option<Value>)> = vec![
            (
                Method::POST,
                "/api/v1/orgs".into(),
                Some(json!({"name": unique("Child")})),
            ),
            (
                Method::PATCH,
                format!("/api/v1/orgs/{org}"),
                Some(json!({"city": "Turku"})),
            ),
            (
                Method::POST,
                "/api/v1/sites".into(),
                Some(json!({"name": "New"})),
            ),
            (
                Method::PATCH,
                format!("/api/v1/sites/{other_site}"),
                Some(json!({"city": "Oulu"})),
            ),
            (Method::DELETE, format!("/api/v1/sites/{other_site}"), None),
            (
                Method::POST,
                format!("/api/v1/sites/{other_site}/restore"),
                None,
            ),
            (
                Method::POST,
                "/api/v1/receiving-points".into(),
                Some(json!({"site_id": site, "name": "North"})),
            ),
            (
                Method::PATCH,
                format!("/api/v1/receiving-points/{point}"),
                Some(json!({"name": "South"})),
            ),
            (
                Method::POST,
                "/api/v1/factories".into(),
                Some(json!({"name": "Plant 2"})),
            ),
            (Method::DELETE, format!("/api/v1/factories/{factory}"), None),
            (
                Method::POST,
                format!("/api/v1/factories/{factory}/restore"),
                None,
            ),
            (
                Method::POST,
                "/api/v1/org-access-grants".into(),
                Some(json!({"grantee_org_id": grantee_org})),
            ),
            (
                Method::DELETE,
                format!("/api/v1/org-access-grants/{grantee_org}"),
                None,
            ),
            (
                Method::POST,
                "/api/v1/trucks".into(),
                Some(json!({"orgId": org, "license": plate(), "country": "se"})),
            ),
            (
                Method::PATCH,
                format!("/api/v1/trucks/{truck}"),
                Some(json!({"driver_id": member})),
            ),
            (
                Method::POST,
                "/api/v1/members".into(),
                Some(json!({"first_name": "A", "last_name": "B", "phone": unique_phone()})),
            ),
            (
                Method::PATCH,
                format!("/api/v1/members/{member}"),
                Some(json!({"first_name": "Dora"})),
            ),
            (
                Method::PUT,
                format!("/api/v1/members/{member}/role"),
                Some(json!({"role": "site_manager"})),
            ),
            (
                Method::DELETE,
                format!("/api/v1/members/{member}/role"),
                None,
            ),
            (
                Method::POST,
                "/api/v1/surpluses".into(),
                Some(
                    json!({"site_id": site, "volume_m3": 4, "to_receiving_point_id": point, "truck_id": truck}),
                ),
            ),
            (
                Method::PATCH,
                format!("/api/v1/surpluses/{load}"),
                Some(json!({"volume_m3": 5, "to_receiving_point_id": point})),
            ),
            (
                Method::DELETE,
                format!("/api/v1/receiving-points/{point}"),
                None,
            ),
            (
                Method::POST,
                format!("/api/v1/receiving-points/{point}/restore"),
                None,
            ),
            (Method::DELETE, format!("/api/v1/members/{member}"), None),
            (
                Method::POST,
                "/api/v1/webhooks".into(),
                Some(
                    json!({"event": "surplus.delivered", "url": "https://hooks.example.com/partial2"}),
                ),
            ),
            (
                Method::POST,
                format!("/api/v1/webhooks/{hook}/roll-secret"),
                Some(json!({})),
            ),
            (
                Method::POST,
                format!("/api/v1/webhooks/{hook}/recover"),
                Some(
                    json!({"since": (chrono::Utc::now() - chrono::TimeDelta::hours(1)).to_rfc3339()}),
                ),
            ),
            (Method::DELETE, format!("/api/v1/webhooks/{hook}"), None),
        ];
        assert_covers_every_write(&cases);
        let mut half_done = Vec::new();
        for (method, path, body) in &cases {
            for fail_at in 2.. {
                let before = b.snapshot().await;
                b.fault.arm(fail_at);
                let reply = b.send(&b.faulty, method.clone(), path, body.as_ref()).await;
                let Some(operation) = b.fault.failed() else {
                    // No call left to fail: the write ran to its end.
                    assert!(reply.status.is_success(), "{method} {path}: {}", reply.text);
                    break;
                };
                b.fault.arm(0);
                assert_eq!(
                    (reply.status.as_u16(), reply.code()),
                    (500, "internal_error"),
                    "{method} {path}, call {fail_at} ({operation}) failed: {}",
                    reply.text
                );
                if b.snapshot().await != before {
                    half_done.push(format!(
                        "{method} {path}: call {fail_at} ({operation}) failed"
                    ));
                }
            }
        }
        assert!(
            half_done.is_empty(),
            "changes left half done:\n{}",
            half_done.join("\n")
        );
    });
}
