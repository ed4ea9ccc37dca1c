//! Exactly once across crashes: every `POST` route is sent with an
//! `Idempotency-Key` while one of its calls (DynamoDB, S3, SQS, Secrets
//! Manager; `api_tests::cuts`) breaks, in turn the 1st, the 2nd, ... until
//! none is left, in each of three ways: the call never leaves (`Fail`),
//! it takes effect and its answer is lost (`Cut`), or it takes effect and
//! the function dies right after (`Die`: the request is dropped, nothing
//! after that call runs). Then the client retries with the same key, as it
//! would, until it gets a definite answer (a claim left by a dead request
//! is let lapse, as its lease would), and the test asserts:
//!
//! - within the lease, a retry is 409 `idempotency_key_in_flight`, never a
//!   second run;
//! - the retry's answer is 2xx, and equals the first answer byte for byte
//!   when the first one was a success;
//! - the request's effect happened exactly once (one record, one restore,
//!   one waybill object), and the answer names what it made.
//!
//! Then the same request is paused at each of its calls after its claim
//! in turn (a frozen container), time passes beyond the claim's lease,
//! and a retry with the same key runs whole; when the paused attempt
//! thaws, it answers the retry's kept answer (or 409
//! `idempotency_key_in_flight`), never an answer of its own, and its
//! effect is not made a second time (`paused_past_the_lease`).

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;

use api_tests::cuts::{Cut, Cuts};
use api_tests::{Reply, TestOrg, call, harness, multipart, org, run, unique, unique_phone};
use axum::Router;
use http::Method;
use serde_json::{Value, json};

use crate::trucks::plate;
use shared::http::idempotency::LEASE;
use std::time::Duration;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0";

/// One organization's routers: one whose calls break when armed, one
/// whose calls do not (the client's retry, the test's own reads), both
/// by one clock of their own, which the test moves.
struct Bench {
    t: TestOrg,
    plain: Router,
    faulty: Router,
    cuts: Cuts,
    clock: shared::clock::Clock,
}

impl Bench {
    async fn new() -> Bench {
        Bench::on(&harness().await.state).await
    }

    /// A bench of a new organization over `state`'s settings.
    async fn on(state: &shared::state::AppState) -> Bench {
        let h = harness().await;
        let cuts = Cuts::default();
        let sdk = cuts.sdk(&h.sdk);
        let clock = shared::clock::Clock::default();
        let mut faulty = shared::state::AppState::new((*state.config).clone(), &sdk);
        faulty.clock = clock.clone();
        let mut plain = state.clone();
        plain.clock = clock.clone();
        Bench {
            t: org().await,
            plain: shared::http::app(local::routes(), plain),
            faulty: shared::http::app(local::routes(), faulty),
            cuts,
            clock,
        }
    }

    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        let mut request = call(method, path).key(&self.t.key);
        if let Some(body) = &body {
            request = request.json(body);
        }
        request.send_to(&self.plain).await
    }

    /// A new load's id (of 2 m³, at a new site).
    async fn new_load(&self) -> String {
        let site = self
            .create("/api/v1/sites", json!({"name": "Origin"}))
            .await;
        self.create(
            "/api/v1/surpluses",
            json!({"site_id": site, "volume_m3": 2}),
        )
        .await
    }

    /// What `case`'s request changed, read by this bench's clock: the
    /// clock its requests ran by, up to a lease ahead of the system's (a
    /// read by the hour, as of the outbox's index, looks where they wrote).
    async fn effect(&self, case: &Case) -> BTreeSet<String> {
        self.clock.scope((case.effect)()).await
    }

    /// A new webhook's id (for `surplus.delivered`, at a URL of its own).
    async fn new_webhook(&self) -> uuid::Uuid {
        let url = format!("https://hooks.example.com/{}", uuid::Uuid::new_v4());
        let body = json!({"event": "surplus.delivered", "url": url});
        self.create("/api/v1/webhooks", body).await.parse().unwrap()
    }

    /// The id of a record made by `POST path` with `body`.
    async fn create(&self, path: &str, body: Value) -> String {
        let reply = self.send(Method::POST, path, Some(body)).await;
        reply.expect(201, None);
        reply.body["data"]["id"].as_str().unwrap().to_owned()
    }
}

/// What a request sends.
enum Payload {
    None,
    Json(Value),
    Form(Vec<u8>),
}

const BOUNDARY: &str = "exactly-once";

/// One request of a route, ready to send: its prerequisites made.
struct Case {
    method: Method,
    path: String,
    payload: Payload,
    /// What the request changes, read back (as a set of names).
    effect: Effect,
    /// What the retry's answer says it changed, to be found in the effect.
    named: fn(&Reply) -> BTreeSet<String>,
}

/// Makes a route's prerequisites and its request, for one bench.
type Prepare =
    Box<dyn for<'a> Fn(&'a Bench) -> Pin<Box<dyn Future<Output = Case> + Send + 'a>> + Send + Sync>;

type Effect = Box<dyn Fn() -> Pin<Box<dyn Future<Output = BTreeSet<String>> + Send>> + Send + Sync>;

impl Case {
    fn request(&self, b: &Bench, idempotency_key: &str) -> api_tests::Call {
        let request = call(self.method.clone(), &self.path)
            .key(&b.t.key)
            .header("idempotency-key", idempotency_key);
        match &self.payload {
            Payload::None => request,
            Payload::Json(body) => request.json(body),
            Payload::Form(body) => request.body(
                &format!("multipart/form-data; boundary={BOUNDARY}"),
                body.clone(),
            ),
        }
    }
}

/// The answer's `data.id`.
fn data_id(reply: &Reply) -> BTreeSet<String> {
    BTreeSet::from([reply.body["data"]["id"].as_str().unwrap_or("").to_owned()])
}

/// Nothing: the route keeps no record.
fn nothing(_: &Reply) -> BTreeSet<String> {
    BTreeSet::new()
}

/// An effect read through `GET path`'s ids.
fn listed(b: &Bench, path: &str) -> Effect {
    let (router, key, path) = (b.plain.clone(), b.t.key.clone(), path.to_owned());
    Box::new(move || {
        let (router, key, path) = (router.clone(), key.clone(), path.clone());
        Box::pin(async move {
            let reply = call(Method::GET, &path).key(&key).send_to(&router).await;
            reply.expect(200, None);
            reply.body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| row["id"].as_str().unwrap().to_owned())
                .collect()
        })
    })
}

/// An effect read as the objects under `prefix` in the bucket.
fn objects(prefix: String) -> Effect {
    Box::new(move || {
        let prefix = prefix.clone();
        Box::pin(async move {
            let h = harness().await;
            let s3 = shared::links::s3_client(&h.sdk);
            let listed = s3
                .list_objects_v2()
                .bucket(&h.state.config.files.bucket)
                .prefix(&prefix)
                .send()
                .await
                .expect("list objects");
            listed
                .contents()
                .iter()
                .filter_map(|o| o.key().map(str::to_owned))
                .collect()
        })
    })
}

/// A load's waybill objects, once a copy its request left to the
/// sweeper is made (as the sweeper would make it).
fn waybills(b: &Bench, load: &str) -> Effect {
    let prefix = format!("waybills/{}/{load}/", b.t.id());
    let (org, load) = (b.t.id(), load.parse::<uuid::Uuid>().unwrap());
    let listed = objects(prefix);
    Box::new(move || {
        let listed = listed();
        Box::pin(async move {
            let h = harness().await;
            let store = h.store();
            let named = store
                .records::<shared::model::surplus::SurplusRecord>()
                .get(org, load)
                .await
                .unwrap()
                .and_then(|l| l.waybill);
            if let Some(waybill) = named
                && let Some(staged) = store.staged().get(&waybill.storage_path).await.unwrap()
            {
                shared::files::promote::promote(&h.state.files, store, &staged)
                    .await
                    .unwrap();
            }
            listed.await
        })
    })
}

/// A waybill answer names its object.
fn waybill_name(reply: &Reply) -> BTreeSet<String> {
    let path = reply.body["data"]["waybill"]["storage_path"]
        .as_str()
        .unwrap_or("");
    BTreeSet::from([path.rsplit('/').next().unwrap_or("").to_owned()])
}

/// Sends `case` with key `idempotency_key` through the faulty router with
/// its `at`-th call broken by `cut`: the reply, or None when the request
/// died; with the broken call, or None when it made fewer calls.
async fn broken(
    b: &Bench,
    case: &Case,
    idempotency_key: &str,
    cut: Cut,
    at: usize,
) -> (Option<Reply>, Option<String>) {
    b.cuts.arm(cut, at);
    let sent = case.request(b, idempotency_key).send_to(&b.faulty);
    let reply = tokio::select! {
        reply = sent => Some(reply),
        () = b.cuts.died() => None,
    };
    b.cuts.disarm();
    (reply, b.cuts.broken())
}

/// The lease of `idempotency_key` of `b`'s key ends now, as it would in
/// `LEASE`, if it is held by a request that never answered. True when it
/// was.
async fn lapse(b: &Bench, idempotency_key: &str) -> bool {
    let table = harness().await.store().table().to_owned();
    let key_id = api_tests::key_id(&b.t).await;
    api_tests::lapse(&table, key_id, idempotency_key).await
}

/// Runs `prepare`'s request with each of its calls broken in each way, and
/// checks every outcome; the number of runs it took.
async fn exactly_once(name: &str, prepare: Prepare) -> usize {
    exactly_once_on(name, &harness().await.state, prepare).await
}

/// `exactly_once` over `state`'s settings.
async fn exactly_once_on(name: &str, state: &shared::state::AppState, prepare: Prepare) -> usize {
    let mut runs = 0;
    for cut in [Cut::Fail, Cut::Cut, Cut::Die] {
        for at in 1.. {
            let b = Bench::on(state).await;
            let case = prepare(&b).await;
            let before = b.effect(&case).await;
            let idempotency_key = unique("once");
            let (first, broken) = broken(&b, &case, &idempotency_key, cut, at).await;
            let Some(broken) = broken else {
                // No call left to break: the request ran whole.
                let first = first.expect("an answer");
                assert!(first.status.is_success(), "{name}: {}", first.text);
                break;
            };
            runs += 1;
            let context = format!("{name}, {cut:?} at {broken}");
            // Within the lease a request that never answered holds the key.
            let mut retry = case.request(&b, &idempotency_key).send_to(&b.plain).await;
            if retry.status == 409 {
                assert_eq!(retry.code(), "idempotency_key_in_flight", "{context}");
                assert!(
                    lapse(&b, &idempotency_key).await,
                    "{context}: held by no one"
                );
                retry = case.request(&b, &idempotency_key).send_to(&b.plain).await;
            }
            assert!(retry.status.is_success(), "{context}: {}", retry.text);
            if let Some(first) = first.filter(|f| f.status.is_success()) {
                assert_eq!(retry.header("idempotent-replayed"), "true", "{context}");
                assert_eq!(
                    (retry.status, &retry.text),
                    (first.status, &first.text),
                    "{context}"
                );
            }
            // Once more: the same answer, replayed.
            let again = case.request(&b, &idempotency_key).send_to(&b.plain).await;
            assert_eq!(again.header("idempotent-replayed"), "true", "{context}");
            assert_eq!(again.text, retry.text, "{context}");
            let after = b.effect(&case).await;
            let made: BTreeSet<String> = after.difference(&before).cloned().collect();
            let named = (case.named)(&retry);
            let made_names: BTreeSet<String> = made
                .iter()
                .map(|m| m.rsplit('/').next().unwrap_or(m).to_owned())
                .collect();
            assert_eq!(
                made_names, named,
                "{context}: made {made:?}, answered {named:?}"
            );
        }
    }
    runs + paused_past_the_lease(name, state, &prepare).await
}

/// Runs `prepare`'s request paused at each of its calls after its claim
/// in turn, past the claim's lease, while a retry with its key runs whole;
/// then thaws it. The thawed attempt answers what the retry's answer was
/// (replayed) or 409 `idempotency_key_in_flight`, never an answer of its
/// own, and the effect happened once. The number of pauses.
async fn paused_past_the_lease(
    name: &str,
    state: &shared::state::AppState,
    prepare: &Prepare,
) -> usize {
    let mut runs = 0;
    // Call 1 is the admission, call 2 the claim.
    for at in 3.. {
        let b = Bench::on(state).await;
        let case = prepare(&b).await;
        let before = b.effect(&case).await;
        let idempotency_key = unique("paused");
        b.cuts.arm(Cut::Stall, at);
        let mut frozen = tokio::spawn({
            let (request, faulty) = (case.request(&b, &idempotency_key), b.faulty.clone());
            async move { request.send_to(&faulty).await }
        });
        tokio::select! {
            () = b.cuts.stalled() => {}
            whole = &mut frozen => {
                // No call left to pause: the request ran whole.
                let whole = whole.unwrap();
                b.cuts.disarm();
                assert!(whole.status.is_success(), "{name}: {}", whole.text);
                break;
            }
        }
        runs += 1;
        let context = format!("{name}, paused at {}", b.cuts.broken().unwrap_or_default());
        b.clock.advance(LEASE + Duration::from_secs(1));
        let retry = case.request(&b, &idempotency_key).send_to(&b.plain).await;
        assert!(retry.status.is_success(), "{context}: {}", retry.text);
        b.cuts.go();
        let thawed = frozen.await.unwrap();
        b.cuts.disarm();
        if thawed.status == 409 {
            assert_eq!(thawed.code(), "idempotency_key_in_flight", "{context}");
        } else {
            assert_eq!(
                (thawed.status, &thawed.text),
                (retry.status, &retry.text),
                "{context}: the thawed attempt answered its own"
            );
        }
        let again = case.request(&b, &idempotency_key).send_to(&b.plain).await;
        assert_eq!(again.header("idempotent-replayed"), "true", "{context}");
        assert_eq!(again.text, retry.text, "{context}");
        let after = b.effect(&case).await;
        let made: BTreeSet<String> = after
            .difference(&before)
            .map(|m| m.rsplit('/').next().unwrap_or(m).to_owned())
            .collect();
        let named = (case.named)(&retry);
        assert_eq!(made, named, "{context}: made {made:?}, answered {named:?}");
    }
    runs
}

/// A request frozen past its claim's lease (a container frozen and thawed)
/// while a retry took the key over and ran: when it thaws, its write is
/// refused and nothing of it is stored; it answers the retry's kept
/// answer, replayed, and the key keeps it.
#[test]
fn a_request_thawed_after_its_lease_commits_nothing() {
    run(async {
        let b = Bench::new().await;
        let case = Case {
            method: Method::POST,
            path: "/api/v1/sites".into(),
            payload: Payload::Json(json!({"name": unique("Frozen")})),
            effect: listed(&b, "/api/v1/sites?status=all"),
            named: data_id,
        };
        let idempotency_key = unique("frozen");
        b.cuts.arm_first(Cut::Stall, "TransactWriteItems");
        let frozen = tokio::spawn({
            let (request, faulty) = (case.request(&b, &idempotency_key), b.faulty.clone());
            async move { request.send_to(&faulty).await }
        });
        b.cuts.stalled().await;
        b.clock.advance(LEASE + Duration::from_secs(1));
        let retry = case.request(&b, &idempotency_key).send_to(&b.plain).await;
        retry.expect(201, None);
        b.cuts.go();
        let thawed = frozen.await.unwrap();
        b.cuts.disarm();
        thawed.expect(201, None);
        assert_eq!(thawed.header("idempotent-replayed"), "true");
        assert_eq!(thawed.text, retry.text);
        assert_eq!(b.effect(&case).await, data_id(&retry));
        let again = case.request(&b, &idempotency_key).send_to(&b.plain).await;
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert_eq!(again.text, retry.text);
    });
}

/// A new load's id, and its waybill's upload (an object put in the bucket).
async fn waybill_upload(b: &Bench) -> (String, Case) {
    let load = b.new_load().await;
    let form = multipart(BOUNDARY, &[], Some(("w.png", "image/png", PNG)));
    let case = Case {
        method: Method::POST,
        path: format!("/api/v1/surpluses/{load}/waybill"),
        payload: Payload::Form(form),
        effect: waybills(b, &load),
        named: waybill_name,
    };
    (load, case)
}

/// The write that holds a claim for a new lease before an effect
/// (`store::exactly_once::idempotency::hold`, not acting): the end of its update
/// expression.
const HOLD: &str = r#""SET #until = :until, #ttl = :ttl""#;

/// The write that claims a key (`store::exactly_once::idempotency::claim`): the end of
/// its update expression.
const CLAIM: &str = "#rid = if_not_exists(#rid, :rid)";

/// A request early in its claim's lease, with more of it left than its
/// effect needs, makes the effect without a write on its claim first.
#[test]
fn an_effect_early_in_the_lease_goes_without_holding_the_key_again() {
    run(async {
        let b = Bench::new().await;
        let (_, case) = waybill_upload(&b).await;
        b.cuts.arm_on(Cut::Fail, "UpdateItem", HOLD);
        let made = case.request(&b, &unique("early")).send_to(&b.faulty).await;
        let held = b.cuts.broken();
        b.cuts.disarm();
        made.expect(200, None);
        assert_eq!(held, None, "no hold before the object");
    });
}

/// A hold renews the lease the request goes on with: after an effect held
/// its key for a new lease, the next effect of the same request goes
/// within that lease, by the same deadline, without holding it again.
#[test]
fn after_a_hold_the_next_effect_goes_within_the_new_lease() {
    use shared::store::exactly_once::idempotency::Claimed;
    use shared::store::exactly_once::outcome::{self, Outcome};
    run(async {
        let store = harness().await.state.store.clone();
        let clock = shared::clock::Clock::frozen_at(shared::clock::now());
        let key_id = uuid::Uuid::new_v4();
        let lease = shared::clock::millis(LEASE);
        let margin = shared::clock::millis(outcome::MARGIN);
        let now = u64::try_from(clock.now().timestamp_millis()).unwrap();
        let until = || async {
            let item = store.idempotency().get(key_id, "k").await.unwrap().unwrap();
            item["until"].as_n().unwrap().parse::<u64>().unwrap()
        };
        // A claim with 10 s of its lease left.
        let Claimed::Ours(claim) = store
            .idempotency()
            .claim(
                key_id,
                "k",
                &"f".to_owned().into(),
                now,
                now + 10_000,
                now + 86_400_000,
            )
            .await
            .unwrap()
        else {
            panic!("the key was free");
        };
        let scope = Outcome::default();
        let (first, second) = clock
            .scope(scope.scope(async {
                outcome::claimed(claim, &store);
                // 10 s needed and the margin: more than is left, so held.
                let first = outcome::fence(Duration::from_secs(10), false)
                    .await
                    .unwrap();
                assert_eq!(until().await, now + lease, "held for a new lease");
                clock.advance(Duration::from_secs(1));
                let second = outcome::fence(Duration::from_secs(10), false)
                    .await
                    .unwrap();
                (first, second)
            }))
            .await;
        assert_eq!(first, Some(now + lease - margin));
        assert_eq!(second, first, "the same deadline: not held again");
        assert_eq!(until().await, now + lease, "the item's lease as held");
    });
}

/// A request that reaches an effect outside the table late in its claim's
/// lease (here a waybill's object, 10 s allowed, with 10 s of the lease
/// left) holds its key for a new lease before the effect goes: a retry
/// sent after the first lease ran out, while the effect is under way,
/// finds the key in flight instead of taking it over and making the
/// effect a second time.
#[test]
fn an_effect_late_in_the_lease_holds_the_key_before_it_goes() {
    run(async {
        let b = Bench::new().await;
        let (load, case) = waybill_upload(&b).await;
        let idempotency_key = unique("late");
        // Paused at the handler's read of the load, after the claim.
        b.cuts.arm_on(
            Cut::Stall,
            "GetItem",
            Box::leak(load.clone().into_boxed_str()),
        );
        let late = tokio::spawn({
            let (request, faulty) = (case.request(&b, &idempotency_key), b.faulty.clone());
            async move { request.send_to(&faulty).await }
        });
        b.cuts.stalled().await;
        b.clock.advance(LEASE - Duration::from_secs(10));
        b.cuts.arm_first(Cut::Stall, "PUT ");
        b.cuts.go();
        // Paused as its object is written, past the first lease.
        b.cuts.stalled().await;
        b.clock.advance(Duration::from_secs(15));
        let retry = case.request(&b, &idempotency_key).send_to(&b.plain).await;
        retry.expect(409, Some("idempotency_key_in_flight"));
        b.cuts.go();
        let made = late.await.unwrap();
        b.cuts.disarm();
        made.expect(200, None);
        let objects: BTreeSet<String> = b
            .effect(&case)
            .await
            .iter()
            .map(|m| m.rsplit('/').next().unwrap_or(m).to_owned())
            .collect();
        assert_eq!(objects, waybill_name(&made), "one object, the answer's");
        let again = case.request(&b, &idempotency_key).send_to(&b.plain).await;
        assert_eq!(again.header("idempotent-replayed"), "true");
        assert_eq!(again.text, made.text);
    });
}

#[test]
fn creating_an_organization_happens_once() {
    run(async {
        exactly_once(
            "POST /orgs",
            Box::new(|b: &Bench| {
                Box::pin(async move {
                    let parent = b.t.id();
                    let (router, key) = (b.plain.clone(), b.t.key.clone());
                    Case {
                        method: Method::POST,
                        path: "/api/v1/orgs".into(),
                        payload: Payload::Json(json!({"name": unique("Child")})),
                        effect: Box::new(move || {
                            let (router, key) = (router.clone(), key.clone());
                            Box::pin(async move {
                                let reply = call(Method::GET, &format!("/api/v1/orgs/{parent}"))
                                    .key(&key)
                                    .send_to(&router)
                                    .await;
                                reply.body["data"]["children"]
                                    .as_array()
                                    .unwrap()
                                    .iter()
                                    .map(|c| c["id"].as_str().unwrap().to_owned())
                                    .collect()
                            })
                        }),
                        named: data_id,
                    }
                })
            }),
        )
        .await;
    });
}

/// A create route whose records `list` lists.
async fn creates(name: &str, path: &'static str, list: &'static str, body: fn(&Bench) -> Value) {
    let prepare: Prepare = Box::new(move |b: &Bench| {
        Box::pin(async move {
            Case {
                method: Method::POST,
                path: path.into(),
                payload: Payload::Json(body(b)),
                effect: listed(b, list),
                named: data_id,
            }
        })
    });
    let runs = exactly_once(name, prepare).await;
    assert!(runs >= 6, "{name}: {runs} runs");
}

#[test]
fn creating_a_site_happens_once() {
    run(creates(
        "POST /sites",
        "/api/v1/sites",
        "/api/v1/sites?status=all",
        |_| json!({"name": unique("Site")}),
    ));
}

#[test]
fn creating_a_factory_happens_once() {
    run(creates(
        "POST /factories",
        "/api/v1/factories",
        "/api/v1/factories?status=all",
        |_| json!({"name": unique("Plant")}),
    ));
}

#[test]
fn creating_a_member_happens_once() {
    run(creates(
        "POST /members",
        "/api/v1/members",
        "/api/v1/members?include_inactive=true",
        |_| json!({"first_name": "Dee", "last_name": "River", "phone": unique_phone(), "role": "driver"}),
    ));
}

#[test]
fn creating_a_truck_happens_once() {
    run(creates(
        "POST /trucks",
        "/api/v1/trucks",
        "/api/v1/trucks",
        |b| json!({"orgId": b.t.id(), "license": plate(), "country": "fi"}),
    ));
}

#[test]
fn creating_a_webhook_happens_once() {
    run(creates(
        "POST /webhooks",
        "/api/v1/webhooks",
        "/api/v1/webhooks",
        |_| json!({"event": "surplus.delivered", "url": format!("https://hooks.example.com/{}", uuid::Uuid::new_v4())}),
    ));
}

#[test]
fn creating_a_receiving_point_happens_once() {
    run(async {
        exactly_once(
            "POST /receiving-points",
            Box::new(|b: &Bench| {
                Box::pin(async move {
                    let site = b
                        .create("/api/v1/sites", json!({"name": "Gate site"}))
                        .await;
                    Case {
                        method: Method::POST,
                        path: "/api/v1/receiving-points".into(),
                        payload: Payload::Json(json!({"site_id": site, "name": unique("Gate")})),
                        effect: listed(b, "/api/v1/receiving-points?status=all"),
                        named: data_id,
                    }
                })
            }),
        )
        .await;
    });
}

#[test]
fn creating_a_load_happens_once() {
    run(async {
        exactly_once(
            "POST /surpluses",
            Box::new(|b: &Bench| {
                Box::pin(async move {
                    let site = b.create("/api/v1/sites", json!({"name": "Origin"})).await;
                    Case {
                        method: Method::POST,
                        path: "/api/v1/surpluses".into(),
                        payload: Payload::Json(json!({"site_id": site, "volume_m3": 3})),
                        effect: listed(b, "/api/v1/surpluses?status=all&limit=100"),
                        named: data_id,
                    }
                })
            }),
        )
        .await;
    });
}

#[test]
fn a_grant_is_made_once() {
    run(async {
        exactly_once(
            "POST /org-access-grants",
            Box::new(|b: &Bench| {
                Box::pin(async move {
                    let grantee = org().await;
                    let (router, key) = (b.plain.clone(), b.t.key.clone());
                    Case {
                        method: Method::POST,
                        path: "/api/v1/org-access-grants".into(),
                        payload: Payload::Json(
                            json!({"grantee_org_id": grantee.id(), "scope": "full"}),
                        ),
                        effect: Box::new(move || {
                            let (router, key) = (router.clone(), key.clone());
                            Box::pin(async move {
                                let reply = call(Method::GET, "/api/v1/org-access-grants")
                                    .key(&key)
                                    .send_to(&router)
                                    .await;
                                reply.body["data"]
                                    .as_array()
                                    .unwrap()
                                    .iter()
                                    .map(|g| g["id"].as_str().unwrap().to_owned())
                                    .collect()
                            })
                        }),
                        named: data_id,
                    }
                })
            }),
        )
        .await;
    });
}

/// A restore route of records made at `create` with `body`.
async fn restores(name: &str, create: &'static str, list: &'static str, body: fn(&str) -> Value) {
    let prepare: Prepare = Box::new(move |b: &Bench| {
        Box::pin(async move {
            let site = b.create("/api/v1/sites", json!({"name": "Parent"})).await;
            let id = b.create(create, body(&site)).await;
            let path = format!("{create}/{id}");
            b.send(Method::DELETE, &path, None).await.expect(200, None);
            Case {
                method: Method::POST,
                path: format!("{path}/restore"),
                payload: Payload::None,
                effect: listed(b, list),
                named: data_id,
            }
        })
    });
    exactly_once(name, prepare).await;
}

#[test]
fn a_site_is_restored_once() {
    run(restores(
        "POST /sites/{id}/restore",
        "/api/v1/sites",
        "/api/v1/sites",
        |_| json!({"name": unique("Archived")}),
    ));
}

#[test]
fn a_receiving_point_is_restored_once() {
    run(restores(
        "POST /receiving-points/{id}/restore",
        "/api/v1/receiving-points",
        "/api/v1/receiving-points",
        |site| json!({"site_id": site, "name": unique("Archived")}),
    ));
}

#[test]
fn a_factory_is_restored_once() {
    run(restores(
        "POST /factories/{id}/restore",
        "/api/v1/factories",
        "/api/v1/factories",
        |_| json!({"name": unique("Archived")}),
    ));
}

#[test]
fn a_waybill_is_uploaded_once() {
    run(async {
        exactly_once(
            "POST /surpluses/{id}/waybill",
            Box::new(|b: &Bench| Box::pin(async move { waybill_upload(b).await.1 })),
        )
        .await;
    });
}

#[test]
fn an_uploaded_waybill_is_confirmed_once() {
    run(async {
        exactly_once(
            "POST /surpluses/{id}/waybill/confirm",
            Box::new(|b: &Bench| {
                Box::pin(async move {
                    let load = b.new_load().await;
                    let granted = b
                        .send(
                            Method::POST,
                            &format!("/api/v1/surpluses/{load}/waybill/upload"),
                            Some(json!({"content_type": "image/png"})),
                        )
                        .await;
                    granted.expect(200, None);
                    let path = granted.body["data"]["storage_path"]
                        .as_str()
                        .unwrap()
                        .to_owned();
                    let h = harness().await;
                    h.state
                        .files
                        .put(&path, PNG.to_vec().into(), shared::files::ImageKind::Png)
                        .await
                        .unwrap();
                    Case {
                        method: Method::POST,
                        path: format!("/api/v1/surpluses/{load}/waybill/confirm"),
                        payload: Payload::Json(json!({"storage_path": path})),
                        effect: waybills(b, &load),
                        named: waybill_name,
                    }
                })
            }),
        )
        .await;
    });
}

#[test]
fn an_upload_form_is_answered_once() {
    run(async {
        exactly_once(
            "POST /surpluses/{id}/waybill/upload",
            Box::new(|b: &Bench| {
                Box::pin(async move {
                    let load = b.new_load().await;
                    Case {
                        method: Method::POST,
                        path: format!("/api/v1/surpluses/{load}/waybill/upload"),
                        payload: Payload::Json(json!({"content_type": "image/png"})),
                        effect: Box::new(|| Box::pin(async { BTreeSet::new() })),
                        named: nothing,
                    }
                })
            }),
        )
        .await;
    });
}

/// An integrator's retry of a delivery: its attempt is made once, however
/// often the request (or its queue message) comes.
#[test]
fn a_delivery_is_retried_once() {
    use api_tests::webhooks::{Receiver, Stack, quick_policy};
    use std::sync::Arc;
    use std::time::Duration;
    run(async {
        // A short lease, longer than an attempt may take (as in
        // production): a duplicate put off for another attempt's lease
        // comes back within seconds, and the effect waits for it.
        let policy = webhook_dispatcher::policy::Policy {
            timeout: api_tests::providers::PROVIDER_TIMEOUT,
            lease: api_tests::providers::PROVIDER_TIMEOUT + Duration::from_secs(1),
            ..quick_policy(8)
        };
        let stack = Arc::new(Stack::new(policy, false, |_| {}).await);
        let state = stack.state.clone();
        let prepare: Prepare = Box::new(move |b: &Bench| {
            let stack = stack.clone();
            Box::pin(async move {
                let receiver = Receiver::start(vec![]).await;
                let (hook, _) =
                    crate::deliveries::webhook_and_delivered_load(&stack, &b.t, &receiver).await;
                stack
                    .drain_until(Duration::from_secs(20), || receiver.count() > 0)
                    .await;
                let listed = b
                    .send(
                        Method::GET,
                        &format!("/api/v1/webhooks/{hook}/deliveries"),
                        None,
                    )
                    .await;
                let delivery = listed.body["data"][0]["delivery_id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{}", listed.text))
                    .to_owned();
                let (router, key) = (b.plain.clone(), b.t.key.clone());
                let attempts = format!("/api/v1/webhooks/{hook}/deliveries");
                Case {
                    method: Method::POST,
                    path: format!("/api/v1/webhooks/{hook}/deliveries/{delivery}/retry"),
                    payload: Payload::None,
                    // The manual attempts made, once the queue is drained.
                    effect: Box::new(move || {
                        let (stack, router, key, attempts) =
                            (stack.clone(), router.clone(), key.clone(), attempts.clone());
                        Box::pin(async move {
                            // Every message handled, a duplicate put off
                            // for the lease too.
                            stack.drain_dry(Duration::from_secs(30)).await;
                            let reply = call(Method::GET, &attempts)
                                .key(&key)
                                .send_to(&router)
                                .await;
                            reply.body["data"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .filter(|a| a["manual"] == true)
                                .map(|a| format!("attempt-{}", a["attempt"]))
                                .collect()
                        })
                    }),
                    named: |reply| {
                        let made = reply.body["data"]["attempts"].as_u64().unwrap_or(0);
                        BTreeSet::from([format!("attempt-{}", made + 1)])
                    },
                }
            })
        });
        exactly_once_on("POST /webhooks/{id}/deliveries/{id}/retry", &state, prepare).await;
    });
}

/// A recovery after an outage: the failed delivery's one more attempt is
/// made once, however often the request (or its queue message) comes.
#[test]
fn a_recovery_is_made_once() {
    use api_tests::webhooks::{Receiver, Stack, quick_policy};
    use std::sync::Arc;
    use std::time::Duration;
    run(async {
        // One attempt: the first failure fails the delivery. A short
        // lease, longer than an attempt may take (as `a_delivery_is_retried_once`).
        let policy = webhook_dispatcher::policy::Policy {
            timeout: api_tests::providers::PROVIDER_TIMEOUT,
            lease: api_tests::providers::PROVIDER_TIMEOUT + Duration::from_secs(1),
            ..quick_policy(1)
        };
        let stack = Arc::new(Stack::new(policy, false, |_| {}).await);
        let state = stack.state.clone();
        let prepare: Prepare = Box::new(move |b: &Bench| {
            let stack = stack.clone();
            Box::pin(async move {
                let receiver = Receiver::start(vec![500]).await;
                let since = (chrono::Utc::now() - chrono::TimeDelta::minutes(5)).to_rfc3339();
                let (hook, _) =
                    crate::deliveries::webhook_and_delivered_load(&stack, &b.t, &receiver).await;
                stack
                    .drain_until(Duration::from_secs(20), || receiver.count() > 0)
                    .await;
                let (router, key) = (b.plain.clone(), b.t.key.clone());
                let attempts = format!("/api/v1/webhooks/{hook}/deliveries");
                Case {
                    method: Method::POST,
                    path: format!("/api/v1/webhooks/{hook}/recover"),
                    payload: Payload::Json(json!({"since": since})),
                    // The manual attempts made, once the queue is drained.
                    effect: Box::new(move || {
                        let (stack, router, key, attempts) =
                            (stack.clone(), router.clone(), key.clone(), attempts.clone());
                        Box::pin(async move {
                            // Every message handled, a duplicate put off
                            // for the lease too.
                            stack.drain_dry(Duration::from_secs(30)).await;
                            let reply = call(Method::GET, &attempts)
                                .key(&key)
                                .send_to(&router)
                                .await;
                            reply.body["data"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .filter(|a| a["manual"] == true)
                                .map(|a| format!("attempt-{}", a["attempt"]))
                                .collect()
                        })
                    }),
                    named: |reply| {
                        (1..=reply.body["data"]["queued"].as_u64().unwrap_or(0))
                            .map(|n| format!("attempt-{}", n + 1))
                            .collect()
                    },
                }
            })
        });
        exactly_once_on("POST /webhooks/{id}/recover", &state, prepare).await;
    });
}

/// A loopback GitHub that keeps the issues it opens and lists them, newest
/// first, as "List repository issues" does.
pub(crate) async fn remembering_tracker() -> (
    api_tests::providers::StandIn,
    std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
) {
    use std::sync::{Arc, Mutex};
    let issues: Arc<Mutex<Vec<Value>>> = Arc::default();
    let kept = issues.clone();
    let tracker = api_tests::providers::StandIn::start(move |seen, _| {
        let mut issues = kept.lock().unwrap();
        if seen.method == Method::GET {
            let newest_first: Vec<Value> = issues.iter().rev().cloned().collect();
            return api_tests::providers::Canned::json(200, Value::Array(newest_first));
        }
        let number = 1000 + issues.len() as u64;
        let sent = seen.json();
        let issue = json!({
            "number": number,
            "title": sent["title"],
            "body": sent["body"],
            "created_at": chrono::Utc::now().to_rfc3339(),
        });
        issues.push(issue.clone());
        api_tests::providers::Canned::json(201, issue)
    })
    .await;
    (tracker, issues)
}

/// The API's state with the support tracker at `tracker`.
pub(crate) async fn with_tracker(
    tracker: &api_tests::providers::StandIn,
) -> shared::state::AppState {
    let base = tracker.base.clone();
    harness()
        .await
        .instance_with(|c| {
            c.support.repository = Some("acme/support".into());
            c.support.token = Some(shared::deployment_key::KeySource::Value(
                b"ghp_test".to_vec(),
            ));
            c.support.api_url = base;
            c.support.labels = vec!["support".into()];
        })
        .1
}

/// The issues `issues` holds that `org` opened.
fn opened_by(issues: &std::sync::Arc<std::sync::Mutex<Vec<Value>>>, org: uuid::Uuid) -> Effect {
    let issues = issues.clone();
    Box::new(move || {
        let issues = issues.clone();
        Box::pin(async move {
            issues
                .lock()
                .unwrap()
                .iter()
                .filter(|i| i["body"].as_str().unwrap_or("").contains(&org.to_string()))
                .map(|i| i["number"].to_string())
                .collect()
        })
    })
}

/// A ticket opens one issue: a retry after an attempt that died finds the
/// issue it opened (named by the request) instead of opening another, on
/// the slot the attempt took.
#[test]
fn a_support_ticket_is_opened_once() {
    run(async {
        let (tracker, issues) = remembering_tracker().await;
        let state = with_tracker(&tracker).await;
        let prepare: Prepare = Box::new(move |b: &Bench| {
            let issues = issues.clone();
            Box::pin(async move {
                Case {
                    method: Method::POST,
                    path: "/api/v1/support".into(),
                    payload: Payload::Json(
                        json!({"title": "Deliveries fail", "description": "Since 09:00."}),
                    ),
                    effect: opened_by(&issues, b.t.id()),
                    named: |reply| {
                        BTreeSet::from([reply.body["data"]["reference"]
                            .as_str()
                            .unwrap_or("")
                            .to_owned()])
                    },
                }
            })
        });
        exactly_once_on("POST /support", &state, prepare).await;
    });
}

/// The tracker opened the issue but answered too late (504): a retry with
/// the request's key, once the late call can no longer land (before, it
/// answers 409 with `Retry-After`), answers that issue, opens no second
/// one and takes no second slot of the quota.
#[test]
fn a_ticket_whose_tracker_answered_late_is_found_by_its_retry() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    run(async {
        let issues: Arc<Mutex<Vec<Value>>> = Arc::default();
        let slow = Arc::new(AtomicBool::new(true));
        let (kept, late) = (issues.clone(), slow.clone());
        let tracker = api_tests::providers::StandIn::start(move |seen, _| {
            let mut issues = kept.lock().unwrap();
            if seen.method == Method::GET {
                let newest_first: Vec<Value> = issues.iter().rev().cloned().collect();
                return api_tests::providers::Canned::json(200, Value::Array(newest_first));
            }
            let issue = json!({"number": 7 + issues.len(), "body": seen.json()["body"], "created_at": chrono::Utc::now().to_rfc3339()});
            issues.push(issue.clone());
            let answer = api_tests::providers::Canned::json(201, issue);
            if late.swap(false, Ordering::SeqCst) {
                // Answered after the service stopped waiting: never.
                answer.held(&api_tests::providers::Gate::default())
            } else {
                answer
            }
        })
        .await;
        let base = tracker.base.clone();
        let (_, mut state) = harness().await.instance_with(|c| {
            c.support.repository = Some("acme/support".into());
            c.support.token = Some(shared::deployment_key::KeySource::Value(
                b"ghp_test".to_vec(),
            ));
            c.support.api_url = base;
            c.support.labels = vec!["support".into()];
            c.support.timeout = api_tests::providers::PROVIDER_TIMEOUT;
        });
        let clock = shared::clock::Clock::frozen_at(shared::clock::now());
        state.clock = clock.clone();
        let router = shared::http::app(local::routes(), state);
        let t = org().await;
        let body = json!({"title": "Late", "description": "The tracker is slow."});
        let send = || {
            call(Method::POST, "/api/v1/support")
                .key(&t.key)
                .header("idempotency-key", "late-ticket")
                .json(&body)
                .send_to(&router)
        };
        let first = send().await;
        first.expect(504, Some("support_tracker_timeout"));
        send().await.expect(409, Some("idempotency_key_in_flight"));
        clock.advance(support::LANDS_WITHIN + Duration::from_secs(1));
        let retry = send().await;
        retry.expect(201, None);
        assert_eq!(retry.body["data"]["reference"], "7");
        assert_eq!(issues.lock().unwrap().len(), 1, "one issue");
        // The first attempt's slot stands for the ticket: 4 of 5 left.
        assert_eq!(retry.body["data"]["quota_remaining"], 4);
    });
}

/// Geocoding keeps no record: whatever breaks, a retry with the key gets a
/// definite answer, the first one when the first was a success.
#[test]
fn a_geocode_is_answered_once() {
    run(async {
        let (_provider, _, state) = geocoding().await;
        let prepare: Prepare = Box::new(|_: &Bench| {
            Box::pin(async {
                Case {
                    method: Method::POST,
                    path: "/api/v1/geocode".into(),
                    payload: Payload::Json(json!({"address": "Mannerheimintie 1, Helsinki"})),
                    effect: Box::new(|| Box::pin(async { BTreeSet::new() })),
                    named: nothing,
                }
            })
        });
        exactly_once_on("POST /geocode", &state, prepare).await;
    });
}

/// A geocode whose claim was made (then its container frozen) with less of
/// the lease left, when it thaws, than its provider's call may take.
/// Its `Idempotency-Key`, and the frozen attempt's handle.
async fn geocode_late_in_its_lease(b: &Bench) -> (String, tokio::task::JoinHandle<Reply>) {
    let idempotency_key = unique("late-geocode");
    b.cuts.arm_on(Cut::Freeze, "UpdateItem", CLAIM);
    let late = tokio::spawn({
        let (request, faulty) = (geocode(b, &idempotency_key), b.faulty.clone());
        async move { request.send_to(&faulty).await }
    });
    b.cuts.stalled().await;
    b.clock.advance(LEASE - Duration::from_secs(1));
    (idempotency_key, late)
}

fn geocode(b: &Bench, idempotency_key: &str) -> api_tests::Call {
    call(Method::POST, "/api/v1/geocode")
        .key(&b.t.key)
        .header("idempotency-key", idempotency_key)
        .json(&json!({"address": "Mannerheimintie 1, Helsinki"}))
}

/// Late in its lease, a geocode holds its key for a new lease and calls
/// its provider within that hold.
#[test]
fn a_geocode_late_in_its_lease_holds_its_key_and_asks_the_provider() {
    run(async {
        let (provider, _, state) = geocoding().await;
        let b = Bench::on(&state).await;
        let (_, late) = geocode_late_in_its_lease(&b).await;
        b.cuts.go();
        let answered = late.await.unwrap();
        answered.expect(200, None);
        assert_eq!(provider.count(), 1);
    });
}

/// A geocode frozen as it holds its key (the hold written), thawed after
/// that hold ran out, asks its provider nothing: another attempt may hold
/// the key by then. It answers 409 and keeps nothing; a retry runs.
#[test]
fn a_geocode_thawed_past_its_hold_asks_the_provider_nothing() {
    run(async {
        let (provider, _, state) = geocoding().await;
        let b = Bench::on(&state).await;
        let (idempotency_key, late) = geocode_late_in_its_lease(&b).await;
        b.cuts.arm_on(Cut::Freeze, "UpdateItem", HOLD);
        b.cuts.go();
        b.cuts.stalled().await;
        b.clock.advance(LEASE);
        b.cuts.go();
        let thawed = late.await.unwrap();
        b.cuts.disarm();
        thawed.expect(409, Some("idempotency_key_in_flight"));
        assert_eq!(provider.count(), 0);
        geocode(&b, &idempotency_key)
            .send_to(&b.plain)
            .await
            .expect(200, None);
        assert_eq!(provider.count(), 1);
    });
}

/// A geocoding provider on loopback that finds one address, and an API (a
/// state and clock of its own) configured against it.
pub(crate) async fn geocoding() -> (
    api_tests::providers::StandIn,
    Router,
    shared::state::AppState,
) {
    let provider = api_tests::providers::geocoder().await;
    let url = format!("{}{}", provider.base, api_tests::providers::GEOCODE_PATH);
    let (router, state) = harness().await.instance_with(|c| {
        c.geocode.api_key = Some(shared::deployment_key::KeySource::Value(
            b"AIzaTEST".to_vec(),
        ));
        c.geocode.url = url;
    });
    (provider, router, state)
}

/// Every POST route of the description is run here.
#[test]
fn every_post_route_is_crash_tested() {
    let source = include_str!("exactly_once.rs");
    for (path, item) in docs::OPENAPI["paths"].as_object().unwrap() {
        if path.starts_with("/api/v1/") && item.get("post").is_some() {
            let shape = path
                .split('/')
                .map(|s| if s.starts_with('{') { "{id}" } else { s })
                .collect::<Vec<_>>()
                .join("/");
            let named = format!("\"POST {}\"", shape.trim_start_matches("/api/v1"));
            assert!(source.contains(&named), "{named} is not crash-tested here");
        }
    }
}

/// A roll retried through every fault rolls the secret once: the secret
/// before the roll is the one the webhook was registered with (a second
/// roll would have made the first roll's secret the one before).
#[test]
fn rolling_a_webhook_secret_happens_once() {
    run(async {
        let state = harness().await.state.clone();
        let prepare: Prepare = Box::new(move |b: &Bench| {
            Box::pin(async move {
                let hook = b.new_webhook().await;
                let org = b.t.id();
                let store = harness().await.store().clone();
                let original = store
                    .webhooks()
                    .require(org, hook)
                    .await
                    .unwrap()
                    .sealed_secret;
                Case {
                    method: Method::POST,
                    path: format!("/api/v1/webhooks/{hook}/roll-secret"),
                    payload: Payload::Json(json!({"overlap_hours": 1})),
                    effect: Box::new(move || {
                        let (store, original) = (store.clone(), original.clone());
                        Box::pin(async move {
                            let record = store.webhooks().require(org, hook).await.unwrap();
                            match record.previous_sealed_secret {
                                None => BTreeSet::new(),
                                Some(previous) if previous == original => {
                                    BTreeSet::from(["rolled once".to_owned()])
                                }
                                Some(_) => BTreeSet::from(["rolled more than once".to_owned()]),
                            }
                        })
                    }),
                    named: |_| BTreeSet::from(["rolled once".to_owned()]),
                }
            })
        });
        exactly_once_on("POST /webhooks/{id}/roll-secret", &state, prepare).await;
    });
}

/// A ping retried through every fault is one ping: one outbox record of
/// the webhook's, whose delivery the answer names.
#[test]
fn a_ping_is_asked_for_once() {
    run(async {
        let state = harness().await.state.clone();
        let prepare: Prepare = Box::new(|b: &Bench| Box::pin(ping_case(b)));
        exactly_once_on("POST /webhooks/{id}/ping", &state, prepare).await;
    });
}

/// A ping of a new webhook of `b`'s organization; its effect the pings
/// asked for: the outbox records naming the webhook (nothing dispatches
/// them here), by the hour they were asked for.
async fn ping_case(b: &Bench) -> Case {
    let hook = b.new_webhook().await;
    let store = harness().await.store().clone();
    Case {
        method: Method::POST,
        path: format!("/api/v1/webhooks/{hook}/ping"),
        payload: Payload::None,
        effect: Box::new(move || {
            let store = store.clone();
            Box::pin(async move {
                store
                    .outbox()
                    .undispatched(2, chrono::TimeDelta::hours(-1))
                    .await
                    .unwrap()
                    .into_iter()
                    .filter(|record| record.webhook_id == Some(hook))
                    .map(|record| shared::model::delivery::delivery_id(record.id, hook).to_string())
                    .collect()
            })
        }),
        named: |reply| {
            BTreeSet::from([reply.body["data"]["delivery_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned()])
        },
    }
}

/// The cause of a failure seen at 23:59:35: the bench's clock runs up
/// to a lease ahead of the system's, so a ping asked for in the last
/// seconds of an hour is indexed under the next; an effect read by the
/// system's clock looked in the hour before and found nothing. Read by
/// the bench's clock, it finds what the bench's requests wrote, an hour
/// ahead or not.
#[test]
fn an_effect_is_read_by_the_clock_its_request_ran_by() {
    run(async {
        let b = Bench::new().await;
        b.clock.advance(Duration::from_secs(3600));
        let case = ping_case(&b).await;
        let before = b.effect(&case).await;
        let reply = case
            .request(&b, &unique("hour-ahead"))
            .send_to(&b.plain)
            .await;
        reply.expect(202, None);
        let after = b.effect(&case).await;
        let made: BTreeSet<String> = after.difference(&before).cloned().collect();
        assert_eq!(
            made,
            (case.named)(&reply),
            "the ping an hour ahead is found"
        );
    });
}
