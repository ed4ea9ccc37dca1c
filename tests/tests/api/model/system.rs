//! The system under test: three instances of the whole API (every
//! router, one table of the model's own, the local engines) on one frozen
//! clock: a plain one, one with faults at the wire and the SDK's retries
//! off, and one with faults and the retries on, as deployed; the
//! dispatcher and a webhook receiver; loopback stand-ins for the tracker
//! and the geocoding provider. Each step is sent as a client sends it
//! (`requests.rs`), and its answer is checked against the reference's;
//! the faults are in `faults.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api_tests::cuts::{Cut, Cuts};
use api_tests::providers::{Canned, StandIn};
use api_tests::webhooks::Receiver;
use api_tests::{Reply, block, call, harness};
use axum::Router;
use http::Method;
use serde_json::{Value, json};
use shared::auth::Scope;
use shared::clock::Clock;
use shared::state::AppState;
use uuid::Uuid;

mod faults;
mod late;
mod operators;
mod requests;
mod together;
mod tracker;

use super::reference::{Expect, Model, ORGS};
use super::steps::{By, Fault, Step, Wait};
use crate::waybills::{PNG, post_form};
use webhook_dispatcher::Dispatcher;

/// The schedule's wait before it finishes a staged file (its `settle`).
pub const SETTLE: Duration = Duration::from_secs(121);

pub struct System {
    pub clock: Clock,
    pub state: AppState,
    api: Router,
    faulty: Router,
    /// The plain instance's calls (never broken): what a step caused.
    seen: Cuts,
    cuts: Cuts,
    /// A third instance, whose SDK retries a broken call as deployed.
    resending: Router,
    resent: Cuts,
    pub orgs: Vec<Ids>,
    /// Each keyed request as first sent, and its last definite answer.
    sent: HashMap<String, Sent>,
    pub issues: Arc<Mutex<Vec<Value>>>,
    pub geocoder: StandIn,
    /// Every organization's webhooks' receiver (always 204).
    pub receiver: Receiver,
    dispatcher: Dispatcher,
    /// Calls to the geocoder by attempts that broke or froze after it
    /// answered: a retry must ask again (nothing of geocoding is kept
    /// until the answer is), so these come on top of one per request.
    pub lost_geocodes: usize,
    tracker: StandIn,
    /// The tracker refusing, or slow, for the next issue.
    temper: tracker::Temper,
    /// Faults for an operator's command (a reseal killed).
    killing: Cuts,
    /// The call of the step's command to take effect unheard and be sent
    /// again (`Step::Unheard`), until the command takes it.
    unheard_at: Mutex<Option<usize>>,
    unheard: Cuts,
}

/// An organization's ids, in the reference's order.
pub struct Ids {
    pub id: Uuid,
    pub keys: Vec<(String, Uuid)>,
    pub sites: Vec<Uuid>,
    pub loads: Vec<Uuid>,
    pub hooks: Vec<Uuid>,
    /// Each hook's secret, as its registration gave it.
    pub secrets: Vec<String>,
    pub points: Vec<Uuid>,
}

#[derive(Clone)]
struct Request {
    method: Method,
    path: String,
    key: String,
    idempotency_key: Option<String>,
    body: Option<(String, Vec<u8>)>,
}

struct Sent {
    request: Request,
    answer: Option<(u16, String)>,
}

/// Tables of sequences that ended (`System`'s drop), deleted when the
/// next one begins: DynamoDB Local keeps tables in memory.
static ENDED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A table of the sequence's own: its sweeps, clock moves and operators'
/// walks (`admin reseal` reads every sealed value of a table) touch
/// nothing of the other tests' or sequences', and theirs nothing of its.
async fn table() -> String {
    let h = harness().await;
    let db = shared::store::Store::client(&h.sdk);
    let ended = std::mem::take(&mut *ENDED.lock().unwrap());
    for table in ended {
        let _ = db.delete_table().table_name(table).send().await;
    }
    let name = format!("model-{}", Uuid::new_v4());
    shared::store::engine::schema::ensure_table(&db, &name)
        .await
        .expect("the model's table");
    name
}

impl Drop for System {
    fn drop(&mut self) {
        if let Ok(mut ended) = ENDED.lock() {
            ended.push(self.state.config.store.table.clone());
        }
    }
}

/// The image a step uploads: a PNG's first bytes, then its tag.
pub fn image(tag: u32) -> Vec<u8> {
    let mut bytes = PNG.to_vec();
    bytes.extend_from_slice(format!("model-{tag}").as_bytes());
    bytes
}

impl System {
    pub async fn new() -> System {
        let h = harness().await;
        let clock = Clock::frozen_at(shared::clock::now());
        let (tracker, issues, temper) = tracker::start(clock.clone()).await;
        let geocoder = tracker::geocoder(temper.slow_geocoder.clone()).await;
        let mut config = (*h.state.config).clone();
        config.store.table = table().await;
        // The model counts no rate-limit windows: the rate limit's own
        // tests do.
        config.http.rate_limit.limit = 100_000;
        config.support.repository = Some("acme/support".into());
        config.support.token = Some(shared::deployment_key::KeySource::Value(
            b"ghp_test".to_vec(),
        ));
        config.support.api_url = tracker.base.clone();
        config.support.labels = vec!["support".into()];
        config.support.timeout = tracker::TIMEOUT;
        config.geocode.api_key = Some(shared::deployment_key::KeySource::Value(
            b"AIzaTEST".to_vec(),
        ));
        config.geocode.timeout = tracker::TIMEOUT;
        config.geocode.url = format!("{}{}", geocoder.base, api_tests::providers::GEOCODE_PATH);
        // Queues of its own: the dispatcher drains what this system sent.
        let sqs = aws_sdk_sqs::Client::new(&h.sdk);
        let queue = format!("model-{}", Uuid::new_v4());
        let ensure = shared::store::engine::schema::ensure_queue;
        config.webhooks.queue_url = Some(ensure(&sqs, &queue).await.expect("a queue"));
        let dead_letters = format!("{queue}-dlq");
        config.webhooks.dlq_url = Some(ensure(&sqs, &dead_letters).await.expect("a queue"));
        config.webhooks.allow_loopback = true;
        config.webhooks.admin_url_template = Some(api_tests::webhooks::ADMIN_URL.into());
        // Keyrings of its own, in Secrets Manager, that operators rotate.
        config.webhooks.seal_key = Some(Self::secret(&h.sdk, "seal").await);
        config.http.cursor_key = Some(Self::secret(&h.sdk, "cursor").await);
        let receiver = Receiver::start(vec![]).await;
        let (seen, cuts) = (Cuts::default(), Cuts::default());
        let mut state = AppState::new(config.clone(), &seen.sdk_retrying(&h.sdk));
        state.clock = clock.clone();
        let mut faulty = AppState::new(config.clone(), &cuts.sdk(&h.sdk));
        faulty.clock = clock.clone();
        let resent = Cuts::default();
        let mut resending = AppState::new(config, &resent.sdk_retrying(&h.sdk));
        resending.clock = clock.clone();
        // The receiver is waited for as the providers are, and a failed
        // attempt is tried again after a second.
        let policy = webhook_dispatcher::policy::Policy {
            timeout: tracker::TIMEOUT,
            ..api_tests::webhooks::quick_policy(8)
        };
        let dispatcher = Dispatcher::new(state.clone(), policy);
        let mut orgs = Vec::new();
        for _ in 0..ORGS {
            orgs.push(Self::org(&state).await);
        }
        System {
            clock,
            api: shared::http::app(local::routes(), state.clone()),
            faulty: shared::http::app(local::routes(), faulty),
            resending: shared::http::app(local::routes(), resending),
            resent,
            state,
            seen,
            cuts,
            orgs,
            sent: HashMap::new(),
            issues,
            geocoder,
            receiver,
            dispatcher,
            lost_geocodes: 0,
            tracker,
            temper,
            killing: Cuts::default(),
            unheard_at: Mutex::new(None),
            unheard: Cuts::default(),
        }
    }

    /// A new secret holding a fresh key (version 1).
    async fn secret(sdk: &aws_config::SdkConfig, what: &str) -> shared::deployment_key::KeySource {
        let created = aws_sdk_secretsmanager::Client::new(sdk)
            .create_secret()
            .name(format!("model-{what}-{}", Uuid::new_v4()))
            .secret_string(Uuid::new_v4().simple().to_string())
            .send()
            .await
            .expect("a secret");
        shared::deployment_key::KeySource::Secret(created.arn.expect("an ARN"))
    }

    async fn org(state: &AppState) -> Ids {
        let store = &state.store;
        let new = api_tests::named(&api_tests::unique("Model Org"));
        let org = store
            .orgs()
            .create_top_level(&new, true)
            .await
            .expect("an org");
        let prefix = state.config.http.short_name.key_prefix();
        let mut keys = Vec::new();
        for _ in 0..super::reference::KEYS {
            let (key, record) = store
                .api_keys()
                .create(org.id, vec![Scope::All], None, None, &prefix)
                .await
                .expect("a key");
            api_tests::logs::remember(&key);
            keys.push((key, record.key_id));
        }
        Ids {
            id: org.id,
            keys,
            sites: Vec::new(),
            loads: Vec::new(),
            hooks: Vec::new(),
            secrets: Vec::new(),
            points: Vec::new(),
        }
    }

    /// Takes `step`, which the reference says must answer as `model.expect`.
    pub fn apply(&mut self, model: &Model, step: &Step) {
        block(self.take(model, step));
    }

    async fn take(&mut self, model: &Model, step: &Step) {
        let store = self.state.store.clone();
        match step {
            Step::Revoke { by } => {
                let (org, key) = (self.orgs[by.org].id, self.orgs[by.org].keys[by.key].1);
                let revoked = self.clock.scope(store.api_keys().revoke(org, key)).await;
                if let Err(error) = revoked {
                    assert_eq!(error.code(), "already_revoked", "{step}: {error}");
                }
            }
            Step::Entitle { org, on } => {
                let id = self.orgs[*org].id;
                self.clock
                    .scope(store.api_keys().set_entitlement(id, *on))
                    .await
                    .expect("entitlement switched");
            }
            Step::Deactivate { org } => {
                let id = self.orgs[*org].id;
                let done = self.clock.scope(store.orgs().deactivate(id)).await;
                if let Err(error) = done {
                    assert_eq!(error.code(), "org_not_found", "{step}: {error}");
                }
            }
            Step::AddPhoto { org, point, tag } => self.add_photo(*org, *point, *tag).await,
            Step::RotateKey { key, overlap, now } => {
                self.rotate(model, step, *key, *overlap, *now).await;
            }
            Step::DropKey { key, version } => self.drop_key(model, step, *key, *version).await,
            Step::Reseal(how) => self.reseal(step, *how).await,
            Step::Unreadable { step } => {
                let expect = model.expect.expect("a request's answer");
                self.unreadable(model, step, expect).await;
            }
            Step::Unheard { at, step } => {
                *self.unheard_at.lock().unwrap() = Some(*at);
                Box::pin(self.take(model, step)).await;
                assert!(
                    self.unheard_at.lock().unwrap().take().is_none(),
                    "{step}: the command ran through no SDK of its own"
                );
            }
            Step::Late { step, tracker } => {
                let expect = model.expect.expect("a request's answer");
                self.late(model, step, *tracker, expect).await;
            }
            Step::LateReceivers {
                by, load, url, tag, ..
            } => {
                self.set_up(model, &Step::retries_setup(*by, *load, *url, *tag))
                    .await;
                self.late_receivers().await;
            }
            Step::Retries {
                by, load, url, tag, ..
            } => self.retries(model, *by, *load, *url, *tag).await,
            Step::CopyPaused { step, tag } => {
                let expect = model.expect.expect("a request's answer");
                self.copy_paused(model, step, *tag, expect).await;
            }
            Step::Recoveries { .. } => self.recoveries(model, step).await,
            Step::Together { a, b } => self.together(model, step, a, b).await,
            Step::Wait(wait) => self.wait(*wait).await,
            Step::Dispatch => self.dispatch().await,
            Step::Faulted { fault, at, step } => {
                let expect = model.expect.expect("a request's answer");
                self.faulted(model, step, *fault, *at, expect).await;
            }
            Step::PausedTwice { at, step } => {
                let expect = model.expect.expect("a request's answer");
                self.paused_twice(model, step, *at, expect).await;
            }
            Step::Paused {
                at,
                overtaken,
                step,
            } => {
                let expect = model.expect.expect("a request's answer");
                if *overtaken {
                    self.paused(model, step, *at, expect).await;
                } else {
                    self.thawed_first(model, step, *at, expect).await;
                }
            }
            request => {
                self.before(model, request).await;
                let expect = model.expect.expect("a request's answer");
                let marks = self.mark();
                let reply = match self.prepare(model, request).await {
                    Ok(sent) => {
                        let reply = self.send(&sent, false).await;
                        self.check(request, &reply, expect, Some(&sent), marks);
                        self.record(&sent, &reply, expect);
                        reply
                    }
                    Err(answered) => {
                        self.check(request, &answered, expect, None, marks);
                        answered
                    }
                };
                self.settle(model, request, &reply);
                self.peek_change(request).await;
            }
        }
    }

    /// The requests a step sends before its last (a burst of tickets),
    /// each checked against the reference.
    async fn before(&mut self, model: &Model, step: &Step) {
        if let Step::Quoted { by, tag } = step {
            return self.quoted(model, *by, *tag).await;
        }
        let Step::Tickets { by, tag, .. } = step else {
            return;
        };
        for expect in &model.before {
            let plain = Step::Ticket {
                by: *by,
                keyed: false,
                tag: *tag,
            };
            let marks = self.mark();
            let request = self.prepare(model, &plain).await.expect("a ticket");
            let reply = self.send(&request, false).await;
            self.check(&plain, &reply, *expect, None, marks);
        }
    }

    /// `admin add-photo`, as an operator runs it against the model's table.
    async fn add_photo(&self, org: usize, point: usize, tag: u32) {
        let file = std::env::temp_dir().join(format!("model-photo-{}.png", Uuid::new_v4()));
        std::fs::write(&file, image(tag)).expect("the photo's file");
        let command = admin::cli::Command::AddPhoto {
            org: self.orgs[org].id,
            receiving_point: self.orgs[org].points[point],
            file: file.clone(),
        };
        let sdk = self.operator_sdk().await;
        let done = self
            .clock
            .scope(admin::cli::run(command, &self.state.config, &sdk))
            .await;
        self.unheard.disarm();
        let _ = std::fs::remove_file(&file);
        done.expect("admin add-photo");
    }

    /// Time passes; the schedule's sweep runs within a long wait.
    async fn wait(&self, wait: Wait) {
        if !wait.sweeps() {
            self.clock.advance(wait.duration());
            return;
        }
        self.clock.advance(SETTLE);
        self.sweep().await;
        self.clock.advance(wait.duration() - SETTLE);
        self.sweep().await;
    }

    /// `Step::Retries`: the webhook, the waybill and the delivery, then
    /// the retry requests, each with a key of its own and dispatched,
    /// every answer checked against the reference; then the first retry
    /// request's message, as SQS delivers it again, dispatched.
    async fn retries(&mut self, model: &Model, by: By, load: usize, url: usize, tag: u32) {
        let setup = Step::retries_setup(by, load, url, tag);
        self.set_up(model, &setup).await;
        self.dispatch().await;
        let Some((hook, nth)) = model.target else {
            return;
        };
        let plain = Step::Retry {
            by,
            hook,
            nth,
            keyed: false,
            tag,
        };
        let key_id = self.orgs[by.org].keys[by.key].1;
        let mut first = None;
        for (i, expect) in model.before[setup.len()..].iter().enumerate() {
            let marks = self.mark();
            let mut request = self.prepare(model, &plain).await.expect("a retry");
            let name = format!("model-{tag}-retry-{i}");
            request.idempotency_key = Some(name.clone());
            let reply = self.send(&request, false).await;
            self.check(&plain, &reply, *expect, None, marks);
            if i == 0 && reply.status == 202 {
                first = Some((name, request.path.clone()));
            }
            self.dispatch().await;
        }
        let Some((name, path)) = first else {
            return;
        };
        let item = self.state.store.idempotency().get(key_id, &name).await;
        let item = item.expect("the key's item read").expect("the key's item");
        let request = item["rid"]
            .as_s()
            .expect("its request")
            .parse()
            .expect("a UUID");
        let delivery = path
            .split('/')
            .skip_while(|part| *part != "deliveries")
            .nth(1)
            .expect("the delivery in the path")
            .parse()
            .expect("a UUID");
        let again = shared::queue::QueueMessage::Deliver {
            delivery_id: delivery,
            manual: true,
            request: Some(request),
        };
        let org = self.orgs[by.org].id;
        self.state
            .queue
            .send(org, &again)
            .await
            .expect("the message sent again");
        self.dispatch().await;
    }

    /// The requests a step sends first (`setup`), each answer checked
    /// against the reference's (`model.before`, in order).
    pub(super) async fn set_up(&mut self, model: &Model, setup: &[Step]) {
        for (step, expect) in setup.iter().zip(&model.before) {
            let marks = self.mark();
            match self.prepare(model, step).await {
                Ok(sent) => {
                    let reply = self.send(&sent, false).await;
                    self.check(step, &reply, *expect, Some(&sent), marks);
                    self.settle(model, step, &reply);
                }
                Err(answered) => self.check(step, &answered, *expect, None, marks),
            }
        }
    }

    /// Runs the dispatcher over the queue, as the event source mapping
    /// would, until it stays empty for a moment.
    pub(super) async fn dispatch(&self) {
        let pause = Duration::from_millis(30);
        api_tests::webhooks::drain(&self.dispatcher, &self.state.queue, pause).await;
    }

    async fn sweep(&self) {
        let state = &self.state;
        let settle = chrono::TimeDelta::from_std(SETTLE - Duration::from_secs(1)).unwrap();
        let swept = self
            .clock
            .scope(shared::files::promote::sweep(
                &state.files,
                &state.store,
                48,
                settle,
            ))
            .await
            .expect("the sweep");
        assert_eq!(swept.failed, 0, "the sweep failed on some files: {swept:?}");
    }

    /// What the outside world had seen before a step: the geocoder's and
    /// the tracker's requests.
    fn mark(&self) -> (usize, usize) {
        self.seen.mark();
        self.cuts.mark();
        self.resent.mark();
        (self.geocoder.count(), self.tracker.count())
    }

    /// Sends `request` as a client does (`Content-Length` and all), through
    /// the faulty instance or the plain one.
    async fn send(&self, request: &Request, faulty: bool) -> Reply {
        Self::send_to(request, if faulty { &self.faulty } else { &self.api }).await
    }

    async fn send_to(request: &Request, router: &Router) -> Reply {
        let mut c = call(request.method.clone(), &request.path).key(&request.key);
        if let Some(name) = &request.idempotency_key {
            c = c.header("idempotency-key", name);
        }
        if let Some((content_type, body)) = &request.body {
            c = c.body(content_type, body.clone());
        }
        c.send_to(router).await
    }

    /// The answer against the reference's, and the world outside.
    fn check(
        &self,
        step: &Step,
        reply: &Reply,
        expect: Expect,
        sent: Option<&Request>,
        (geocodes, tracker): (usize, usize),
    ) {
        let seen = format!("{step}: answered {} {}", reply.status, reply.text);
        assert_eq!(reply.status.as_u16(), expect.status, "{seen}");
        if let Some(code) = expect.code {
            assert_eq!(reply.code(), code, "{seen}");
        }
        let replayed = reply.header("idempotent-replayed") == "true";
        assert_eq!(replayed, expect.replayed, "{seen}: replayed?");
        if let (true, Some(sent)) = (expect.replayed, sent) {
            let name = sent.idempotency_key.as_ref();
            let kept = name
                .and_then(|n| self.sent.get(n))
                .and_then(|s| s.answer.clone());
            assert_eq!(
                Some((reply.status.as_u16(), reply.text.clone())),
                kept,
                "{seen}: a replay differs from the kept answer"
            );
        }
        if expect.quiet {
            let mut outside = self.seen.outside();
            outside.extend(self.cuts.outside());
            outside.extend(self.resent.outside());
            assert!(outside.is_empty(), "{seen}: called outside {outside:?}");
            assert_eq!(
                self.geocoder.count(),
                geocodes,
                "{seen}: asked the geocoder"
            );
            assert_eq!(self.tracker.count(), tracker, "{seen}: called the tracker");
        }
    }

    /// Keeps a keyed request and, when it ran (not refused, not
    /// replayed), its answer: what a replay must answer.
    fn record(&mut self, request: &Request, reply: &Reply, expect: Expect) {
        let Some(name) = &request.idempotency_key else {
            return;
        };
        let answer = Some((reply.status.as_u16(), reply.text.clone()));
        if !expect.quiet && !expect.replayed {
            let sent = Sent {
                request: request.clone(),
                answer,
            };
            self.sent.insert(name.clone(), sent);
        } else {
            self.sent.entry(name.clone()).or_insert(Sent {
                request: request.clone(),
                answer: None,
            });
        }
    }

    /// The ids of the records a definite answer made.
    fn settle(&mut self, model: &Model, step: &Step, reply: &Reply) {
        let by = step.by().expect("a request");
        let replay = matches!(step, Step::Replay { .. } | Step::Reuse { .. });
        if reply.status != 201 || (replay && reply.header("idempotent-replayed") == "true") {
            return;
        }
        // What ran: a replay or a reuse that ran anew is its request.
        let ran = match step {
            Step::Replay { nth, .. } | Step::Reuse { nth, .. } => {
                model.orgs[by.org].keys[by.key].keyed[*nth].step.clone()
            }
            other => other.clone(),
        };
        let id = || -> Uuid {
            let id = reply.body["data"]["id"]
                .as_str()
                .expect("a new record's id");
            id.parse().expect("a UUID")
        };
        match ran {
            Step::CreateSite { .. } => self.orgs[by.org].sites.push(id()),
            Step::CreateLoad { .. } => self.orgs[by.org].loads.push(id()),
            Step::Register { .. } => {
                let secret = reply.body["data"]["secret"]
                    .as_str()
                    .expect("a new hook's secret");
                self.orgs[by.org].secrets.push(secret.to_owned());
                self.orgs[by.org].hooks.push(id());
            }
            Step::CreatePoint { .. } => self.orgs[by.org].points.push(id()),
            _ => {}
        }
    }
}
