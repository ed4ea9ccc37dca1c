//! Webhook delivery for tests: a stack of one test's own (queue, dead-letter
//! queue, optionally a table; the router and the dispatcher using them,
//! loopback receivers allowed) and a plain-HTTP receiver on loopback with a
//! script of answers.

use std::collections::{HashSet, VecDeque};
use std::fs::File;
use std::io::Write;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use http::{HeaderMap, StatusCode, Uri};
use shared::queue::WebhookQueue;
use shared::state::AppState;
use webhook_dispatcher::Dispatcher;
use webhook_dispatcher::policy::Policy;

use crate::harness;
pub use crate::logs::logs;

/// A policy for tests: the real one with one-second waits.
pub fn quick_policy(attempts: usize) -> Policy {
    Policy {
        schedule: vec![Duration::from_secs(1); attempts.saturating_sub(1)],
        sweep_settle: Duration::ZERO,
        ..Policy::default()
    }
}

/// `ADMIN_URL_TEMPLATE` of every stack.
pub const ADMIN_URL: &str = "https://admin.example.com/surpluses/{surplusId}";

pub struct Stack {
    /// The dispatcher's state.
    pub state: AppState,
    pub router: Router,
    /// The API's state (`router`'s), whose clock a test may move.
    pub api: AppState,
    pub dispatcher: Dispatcher,
    dead_letters: WebhookQueue,
}

impl Stack {
    /// Queues of this test's own; a table of its own when `own_table`
    /// (the sweeper reads a whole table's outbox). `change` adjusts the
    /// settings (e.g. an unreachable queue for the API).
    pub async fn new(
        policy: Policy,
        own_table: bool,
        change: impl FnOnce(&mut shared::config::Config),
    ) -> Stack {
        let h = harness().await;
        let sqs = aws_sdk_sqs::Client::new(&h.sdk);
        let name = format!("test-{}", uuid::Uuid::new_v4());
        let queue = shared::store::engine::schema::ensure_queue(&sqs, &name)
            .await
            .expect("queue");
        let dlq = shared::store::engine::schema::ensure_queue(&sqs, &format!("{name}-dlq"))
            .await
            .expect("dead-letter queue");
        let mut config = (*h.state.config).clone();
        if own_table {
            config.store.table = name.clone();
            let db = shared::store::Store::client(&h.sdk);
            shared::store::engine::schema::ensure_table(&db, &name)
                .await
                .expect("table");
        }
        config.webhooks.queue_url = Some(queue);
        config.webhooks.dlq_url = Some(dlq.clone());
        config.webhooks.allow_loopback = true;
        config.webhooks.admin_url_template = Some(ADMIN_URL.into());
        let dispatcher_state = AppState::new(config.clone(), &h.sdk);
        change(&mut config);
        let state = AppState::new(config, &h.sdk);
        Stack {
            router: shared::http::app(local::routes(), state.clone()),
            api: state,
            dispatcher: Dispatcher::new(dispatcher_state.clone(), policy),
            dead_letters: WebhookQueue::new(&h.sdk, Some(dlq), None),
            state: dispatcher_state,
        }
    }

    /// A new organization and key in the stack's table (its own, when
    /// made so).
    pub async fn org(&self) -> crate::TestOrg {
        let store = &self.state.store;
        let new = crate::named(&crate::unique("Stack Org"));
        let created = store.orgs().create_top_level(&new, true).await.unwrap();
        let prefix = self.state.config.http.short_name.key_prefix();
        let scopes = vec![shared::auth::Scope::All];
        let (key, _) = store
            .api_keys()
            .create(created.id, scopes, None, None, &prefix)
            .await
            .unwrap();
        crate::logs::remember(&key);
        crate::TestOrg { org: created, key }
    }

    /// Runs the dispatcher over the queue as the event source mapping
    /// would, until `done` holds or `within` passes.
    pub async fn drain_until(&self, within: Duration, done: impl Fn() -> bool) {
        let deadline = Instant::now() + within;
        while !done() && Instant::now() < deadline {
            let taken = local::poller::poll_once(&self.dispatcher, &self.state.queue)
                .await
                .expect("poll");
            if taken == 0 {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }

    /// Runs the dispatcher until `receiver` got `count` requests, or 20 s
    /// passed.
    pub async fn drain_until_received(&self, receiver: &Receiver, count: usize) {
        self.drain_until(Duration::from_secs(20), || receiver.count() >= count)
            .await;
    }

    /// Runs the dispatcher until the queue holds no message at all, none
    /// hidden (a duplicate put off for another attempt's lease comes back
    /// and is handled): a wait for the event, at most `within`.
    pub async fn drain_dry(&self, within: Duration) {
        let h = harness().await;
        let sqs = aws_sdk_sqs::Client::new(&h.sdk);
        let url = self
            .state
            .config
            .webhooks
            .queue_url
            .clone()
            .expect("the stack's queue");
        let deadline = Instant::now() + within;
        loop {
            let taken = local::poller::poll_once(&self.dispatcher, &self.state.queue)
                .await
                .expect("poll");
            let attributes = sqs
                .get_queue_attributes()
                .queue_url(&url)
                .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
                .send()
                .await
                .expect("queue attributes");
            let held: u64 = [
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ]
            .iter()
            .filter_map(|name| {
                attributes
                    .attributes()
                    .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::from(*name)))
                    .and_then(|n| n.parse::<u64>().ok())
            })
            .sum();
            if taken == 0 && held == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{held} messages still queued after {within:?}"
            );
            if taken == 0 {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// Runs the dispatcher until the queue stays empty for a moment.
    pub async fn drain(&self) {
        drain(
            &self.dispatcher,
            &self.state.queue,
            Duration::from_millis(200),
        )
        .await;
    }

    /// Message bodies in the dead-letter queue.
    pub async fn dead_letters(&self) -> Vec<String> {
        let mut bodies = Vec::new();
        loop {
            let got = self.dead_letters.receive(10).await.expect("receive");
            if got.is_empty() {
                return bodies;
            }
            bodies.extend(got.into_iter().filter_map(|m| m.body));
        }
    }
}

/// Runs `dispatcher` over `queue` as the event source mapping would, until
/// the queue is found empty three times `pause` apart.
pub async fn drain(dispatcher: &Dispatcher, queue: &WebhookQueue, pause: Duration) {
    let mut idle = 0;
    while idle < 3 {
        let taken = local::poller::poll_once(dispatcher, queue)
            .await
            .expect("poll");
        if taken == 0 {
            idle += 1;
            tokio::time::sleep(pause).await;
        } else {
            idle = 0;
        }
    }
}

/// One request the receiver got.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    /// The request as it is kept for the checks after `cargo test`:
    /// `path`, `headers` (each value as text) and `body`.
    fn kept(&self) -> serde_json::Value {
        let headers: serde_json::Map<String, serde_json::Value> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), value.into())
            })
            .collect();
        serde_json::json!({
            "path": self.path,
            "headers": headers,
            "body": String::from_utf8_lossy(&self.body),
        })
    }

    /// Whether `secret` signed this delivery, as a receiver checks: one of
    /// `webhook-signature`'s space-separated signatures (Standard
    /// Webhooks), and one of `x-svc-signature`'s (`hmac_sha256` mode) or
    /// of `x-svc-delivery-token`'s (`bearer_token` mode).
    pub fn signed_with(&self, secret: &str) -> bool {
        use base64::Engine;
        use hmac::{Hmac, Mac};
        let mac = |key: &[u8], parts: &[&[u8]]| {
            let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).expect("any key length");
            parts.iter().for_each(|part| mac.update(part));
            mac.finalize().into_bytes().to_vec()
        };
        let b64 = base64::engine::general_purpose::STANDARD;
        let key = b64
            .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
            .expect("a whsec_ secret");
        let (id, timestamp) = (self.header("webhook-id"), self.header("webhook-timestamp"));
        let signed = [id.as_bytes(), b".", timestamp.as_bytes(), b".", &self.body];
        let standard = format!("v1,{}", b64.encode(mac(&key, &signed)));
        let standard_ok = self
            .header("webhook-signature")
            .split(' ')
            .any(|s| s == standard);
        let body = format!(
            "sha256={}",
            hex::encode(mac(secret.as_bytes(), &[&self.body]))
        );
        let body_ok = match self.header("x-svc-delivery-token") {
            "" => self.header("x-svc-signature").split(' ').any(|s| s == body),
            // Bearer mode: the secret itself.
            tokens => tokens.split(' ').any(|token| token == secret),
        };
        standard_ok && body_ok
    }
}

/// Keeps the deliveries of a webhook whose secret was rolled, by phase
/// (`before`, `during` the overlap, `after` it), with its secrets (`old`,
/// `new`) and verification mode, in `<state dir>/rolled-deliveries/`:
/// after `cargo test`, `tests/receivers.py` checks that the receivers of
/// docs/webhooks.md and the Standard Webhooks library accept each with
/// either secret during the overlap, and with the new one only after it.
pub fn keep_rolled(mode: &str, old: &str, new: &str, phases: &[(&str, &Received)]) {
    let deliveries: Vec<serde_json::Value> = phases
        .iter()
        .map(|(phase, received)| {
            let mut kept = received.kept();
            kept["phase"] = (*phase).into();
            kept
        })
        .collect();
    let kept = serde_json::json!({
        "mode": mode,
        "secrets": {"old": old, "new": new},
        "deliveries": deliveries,
    });
    let name = format!("{}.json", uuid::Uuid::new_v4());
    crate::logs::write_in("rolled-deliveries", &name, &kept.to_string());
}

/// Every request a `Receiver` gets, one JSON line each (`path`, `headers`,
/// `body`) in `<state dir>/webhook-deliveries/received-<pid>`: after
/// `cargo test`, `tools/compat/payloads.py` checks each against the
/// released baseline's webhook payload and headers (old receivers keep
/// working). Not in `test-logs`: a bearer-mode delivery carries its secret.
static RECEIVED_FILE: LazyLock<Mutex<File>> =
    LazyLock::new(|| crate::logs::append_in("webhook-deliveries", "received"));

fn keep(received: &Received) {
    let line = received.kept();
    // Unbuffered: the test process exits without running destructors.
    let mut file = RECEIVED_FILE.lock().unwrap_or_else(|e| e.into_inner());
    writeln!(file, "{line}").expect("keep a received delivery");
}

/// A plain-HTTP receiver on loopback: answers from `script` in order, then
/// 204; remembers every request (and keeps it for `payloads.py`). While
/// `answer_late` is set, it answers each delivery's first request after
/// that long, having kept it (it acted on the delivery; the dispatcher
/// may have stopped waiting).
#[derive(Clone)]
pub struct Receiver {
    pub base: String,
    pub port: u16,
    got: Arc<Mutex<Vec<Received>>>,
    late: Arc<Mutex<Late>>,
}

/// How late the receiver answers, and the deliveries it answered late.
#[derive(Default)]
struct Late {
    after: Option<Duration>,
    answered: HashSet<String>,
}

impl Receiver {
    pub async fn start(script: Vec<u16>) -> Receiver {
        let got: Arc<Mutex<Vec<Received>>> = Arc::default();
        let late: Arc<Mutex<Late>> = Arc::default();
        let answers = Arc::new(Mutex::new(VecDeque::from(script)));
        let app = {
            let (got, late) = (Arc::clone(&got), Arc::clone(&late));
            Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
                let (got, late) = (Arc::clone(&got), Arc::clone(&late));
                let answers = Arc::clone(&answers);
                async move {
                    let received = Received {
                        path: uri.path().to_owned(),
                        headers,
                        body,
                    };
                    keep(&received);
                    let delay = {
                        let mut late = late.lock().unwrap();
                        let first = late
                            .answered
                            .insert(received.header("webhook-id").to_owned());
                        late.after.filter(|_| first)
                    };
                    got.lock().unwrap().push(received);
                    let status = answers.lock().unwrap().pop_front().unwrap_or(204);
                    if let Some(delay) = delay {
                        tokio::time::sleep(delay).await;
                    }
                    StatusCode::from_u16(status).unwrap()
                }
            })
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver {
            base: format!("http://127.0.0.1:{port}"),
            port,
            got,
            late,
        }
    }

    /// From now on, each delivery's first request is answered `after`
    /// that long (`None`: every request at once, as it starts).
    pub fn answer_late(&self, after: Option<Duration>) {
        let mut late = self.late.lock().unwrap();
        late.after = after;
        late.answered.clear();
    }

    pub fn requests(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// The delivery id of the first request it got (its body's `id`).
    pub fn first_delivery(&self) -> String {
        self.requests()[0].json()["id"]
            .as_str()
            .expect("a delivery's id")
            .to_owned()
    }

    pub fn count(&self) -> usize {
        self.got.lock().unwrap().len()
    }
}
