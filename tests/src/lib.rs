//! Test harness: the local engines (DynamoDB Local and moto's server,
//! started if they do not answer), one table, one tokio runtime and one set
//! of SDK clients for the whole test binary. Each test makes its own
//! organizations and keys, so tests run in parallel.

use std::future::Future;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::LazyLock;
use std::time::Duration;

use axum::Router;
use http::Method;
use serde_json::Value;
use shared::auth::Scope;
use shared::config::Config;
use shared::model::org::{CreateOrg, Organization};
use shared::state::AppState;
use tokio::sync::OnceCell;

mod calls;
pub mod cuts;
pub mod logs;
pub mod metrics;
pub mod mutate;
pub mod providers;
pub mod traces;
pub mod webhooks;

pub use calls::{Call, Reply, SPREAD_LIST_QUERIES, call};

/// A debug build polls a request tens of futures deep, each frame large:
/// deeper than a thread's default 2 MiB once the SDK's connector is under
/// it. Test bodies and the runtime's workers get stacks of this size.
const STACK_BYTES: usize = 16 * 1024 * 1024;

pub(crate) static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(STACK_BYTES)
        .build()
        .expect("test runtime")
});

/// Runs a test body on the shared runtime (SDK connection pools live there),
/// from a thread of the test's own with a `STACK_BYTES` stack: it keeps the
/// test's name and captured output, and its panic is the test's.
pub fn run<F>(future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    on_large_stack(|| block(future))
}

/// Runs `body` on a thread of the test's own with a `STACK_BYTES` stack
/// (its name kept, its panic the caller's): for a test that drives the
/// shared runtime step by step with `block` (the model test's runner).
pub fn on_large_stack<R: Send>(body: impl FnOnce() -> R + Send) -> R {
    let name = std::thread::current().name().unwrap_or("test").to_owned();
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(name)
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, body)
            .expect("a thread for the test body")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Runs `future` to its end on the shared runtime, from a thread outside
/// it.
pub fn block<F: Future>(future: F) -> F::Output {
    RUNTIME.block_on(future)
}

pub struct Harness {
    pub sdk: aws_config::SdkConfig,
    pub state: AppState,
    router: Router,
}

static HARNESS: OnceCell<Harness> = OnceCell::const_new();

pub async fn harness() -> &'static Harness {
    HARNESS.get_or_init(setup).await
}

/// The local engines' endpoints: moto's (generic) and DynamoDB Local's.
fn endpoints() -> [(&'static str, String); 2] {
    ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"].map(|name| {
        let url = std::env::var(name)
            .unwrap_or_else(|_| panic!("{name} is set (by .cargo/config.toml or the environment)"));
        (name, url)
    })
}

fn authority(endpoint: &str) -> &str {
    endpoint.trim_start_matches("http://").trim_end_matches('/')
}

fn reachable(endpoint: &str) -> bool {
    authority(endpoint)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .is_some_and(|addr| TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok())
}

/// Starts the engines that do not answer (DynamoDB Local, moto's server)
/// by `tools/local/scripts/engines.sh`, as `make test` does.
fn ensure_engines() {
    let [(_, moto), (_, dynamodb)] = endpoints();
    if reachable(&moto) && reachable(&dynamodb) {
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let port = |endpoint: &str| {
        let (host, port) = authority(endpoint)
            .rsplit_once(':')
            .expect("endpoint has a port");
        (host.to_owned(), port.to_owned())
    };
    let (host, moto_port) = port(&moto);
    let (_, dynamodb_port) = port(&dynamodb);
    // Left running on purpose: later test runs reuse them (`make stop-engines`).
    let started = Command::new("bash")
        .arg(root.join("tools/local/scripts/engines.sh"))
        .arg("start")
        .env("LOCAL_HOST", host)
        .env("MOTO_PORT", moto_port)
        .env("DYNAMODB_PORT", dynamodb_port)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run engines.sh");
    assert!(
        started.status.success(),
        "the engines did not start at {moto} and {dynamodb}: run `make test` (it installs them)"
    );
}

async fn setup() -> Harness {
    logs::capture_logs();
    metrics::capture_metrics();
    tokio::task::spawn_blocking(ensure_engines)
        .await
        .expect("engines");
    // Production's limits (`shared::aws`): DynamoDB Local answers a parallel
    // test run within them.
    let mut config = Config::from_env().expect("config");
    let sdk = shared::aws::sdk_config(config.sdk_limits).await;
    // A table of this run's own: runs against reused engines stay
    // independent (nearby search reads every organization's public points).
    // A nextest run (`make mutants`: a process a test) shares one table
    // by its run's id; a `cargo test` process has one of its own.
    let run = std::env::var("NEXTEST_RUN_ID").unwrap_or_else(|_| uuid::Uuid::new_v4().to_string());
    config.store.table = format!("test-{run}");
    let db = shared::store::Store::client(&sdk);
    shared::store::engine::schema::ensure_table(&db, &config.store.table)
        .await
        .expect("table");
    let s3 = shared::links::s3_client(&sdk);
    shared::store::engine::schema::ensure_bucket(&s3, &config.files.bucket)
        .await
        .expect("bucket");
    let state = AppState::new(config, &sdk);
    let router = shared::http::app(local::routes(), state.clone());
    Harness { sdk, state, router }
}

impl Harness {
    /// The router with other settings (deployment switch, rate limit, ...).
    pub fn router_with(&self, change: impl FnOnce(&mut Config)) -> Router {
        self.instance_with(change).0
    }

    /// A fresh instance with other settings: its router and its state
    /// (what it remembers of keys, `auth::memory`).
    pub fn instance_with(&self, change: impl FnOnce(&mut Config)) -> (Router, AppState) {
        let mut config = (*self.state.config).clone();
        change(&mut config);
        let state = AppState::new(config, &self.sdk);
        (shared::http::app(local::routes(), state.clone()), state)
    }

    pub fn store(&self) -> &shared::store::Store {
        &self.state.store
    }
}

/// An organization made for one test, with an all-scopes key.
pub struct TestOrg {
    pub org: Organization,
    pub key: String,
}

impl TestOrg {
    pub fn id(&self) -> uuid::Uuid {
        self.org.id
    }
}

/// A unique name for test records.
pub fn unique(prefix: &str) -> String {
    format!("{prefix} {}", uuid::Uuid::new_v4())
}

/// A validated organization with just a name (for the store's create).
pub fn named(name: &str) -> shared::model::org::NewOrg {
    CreateOrg {
        name: name.to_owned(),
        parent_id: None,
        business_code: None,
        street_address: None,
        postal_code: None,
        city: None,
        invoice_email: None,
    }
    .validate()
    .expect("valid org")
}

/// A new top-level organization (entitled) with a key of `scopes`.
pub async fn org_with(scopes: &[Scope]) -> TestOrg {
    let store = harness().await.store();
    let new = CreateOrg {
        name: unique("Test Org"),
        parent_id: None,
        business_code: Some("1234567-8".into()),
        street_address: Some("Testikatu 1".into()),
        postal_code: Some("00100".into()),
        city: Some("Helsinki".into()),
        invoice_email: Some("billing@example.com".into()),
    }
    .validate()
    .expect("valid org");
    let org = store
        .orgs()
        .create_top_level(&new, true)
        .await
        .expect("create org");
    let key = new_key(org.id, scopes).await;
    TestOrg { org, key }
}

pub async fn org() -> TestOrg {
    org_with(&[Scope::All]).await
}

/// Another key for `org`.
pub async fn new_key(org: uuid::Uuid, scopes: &[Scope]) -> String {
    let h = harness().await;
    let prefix = h.state.config.http.short_name.key_prefix();
    let key = h
        .store()
        .api_keys()
        .create(org, scopes.to_vec(), None, None, &prefix)
        .await
        .expect("create key")
        .0;
    logs::remember(&key);
    key
}

/// An item straight from the table (a consistent read), if there is one.
pub async fn stored(pk: String, sk: &str) -> Option<shared::store::engine::item::Item> {
    let h = harness().await;
    aws_sdk_dynamodb::Client::new(&h.sdk)
        .get_item()
        .table_name(h.store().table())
        .key("pk", shared::store::engine::item::s(pk))
        .key("sk", shared::store::engine::item::s(sk.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .expect("the table answers")
        .item
}

/// The id of `t`'s key.
pub async fn key_id(t: &TestOrg) -> uuid::Uuid {
    let hash = shared::auth::key::KeyHash::of(&t.key).to_hex();
    let keys = harness().await.store().api_keys().list(t.id()).await;
    keys.expect("the keys")
        .into_iter()
        .find(|k| k.key_hash == hash)
        .expect("the key's summary")
        .key_id
}

/// Sets the uses of `t`'s key's current window of `quota` to `used`, as
/// that many requests would have. The window is one with at least
/// `QUOTA_MARGIN` left (in the last minutes of one, this waits for the
/// next): the test's requests after it count in the same window,
/// however slow the machine, and a run that straddles the hour does not
/// find a fresh window.
pub async fn use_quota(t: &TestOrg, quota: &shared::model::quota::KeyQuota, used: u32) {
    let h = harness().await;
    let period = u64::try_from(quota.period.as_millis()).unwrap();
    let margin = u64::try_from(QUOTA_MARGIN.as_millis()).unwrap();
    assert!(period > 2 * margin, "a window longer than the margin");
    let window = loop {
        let now = shared::model::now().unix_millis();
        if now % period + margin < period {
            break now / period;
        }
        tokio::time::sleep(Duration::from_millis(period - now % period + 10)).await;
    };
    let db = aws_sdk_dynamodb::Client::new(&h.sdk);
    let pk = shared::store::engine::keys::key_quota_pk(quota.kind, key_id(t).await);
    db.put_item()
        .table_name(h.store().table())
        .item("pk", shared::store::engine::item::s(pk))
        .item("sk", shared::store::engine::item::s(format!("W#{window}")))
        .item("uses", shared::store::engine::item::n(used))
        .send()
        .await
        .expect("quota item");
}

/// Moves `clock` a minute past the start of its next window of `period`
/// (an hour, a minute): a test's requests after it fall in one window
/// however slow the machine and whatever the hour.
pub fn early_in_a_window(clock: &shared::clock::Clock, period: Duration) {
    let period = u64::try_from(period.as_millis()).unwrap();
    let into = u64::try_from(clock.now().timestamp_millis()).unwrap() % period;
    let minute = 60_000.min(period / 10);
    clock.advance(Duration::from_millis(period - into + minute));
}

/// Waits for `done` to hold, looking every 20 ms, at most `within` (a
/// bound a starved machine meets): a wait for an event, never for a
/// duration. Panics when the bound passes.
pub async fn eventually(within: Duration, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "not done within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Today (UTC) by the clock the harness's routers read, with at least
/// `DAY_MARGIN` of it left: near midnight this waits for the next day,
/// so a test that names today's date (or month) beside the service's own
/// reading finds the same day however slow the machine, at any hour.
pub async fn a_day_clear_of_midnight() -> chrono::NaiveDate {
    let margin = chrono::TimeDelta::from_std(DAY_MARGIN).unwrap();
    loop {
        let now = shared::clock::now();
        let next = now
            .date_naive()
            .succ_opt()
            .unwrap()
            .and_time(chrono::NaiveTime::MIN)
            .and_utc();
        if next - now > margin {
            return now.date_naive();
        }
        tokio::time::sleep((next - now).to_std().unwrap() + Duration::from_millis(10)).await;
    }
}

/// What is left of the day at least when `a_day_clear_of_midnight`
/// answers.
pub const DAY_MARGIN: Duration = Duration::from_secs(60);

/// What a quota's window has left at least when `use_quota` fills it.
pub const QUOTA_MARGIN: Duration = Duration::from_secs(60);

/// A request with `t`'s key and, if given, a JSON body.
pub async fn send(t: &TestOrg, method: Method, path: &str, body: Option<Value>) -> Reply {
    let mut c = call(method, path).key(&t.key);
    if let Some(body) = body {
        c = c.json(&body);
    }
    c.send().await
}

/// The ids of a list response, in order.
pub fn ids(reply: &Reply) -> Vec<String> {
    reply.body["data"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| r["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// Asserts every `*_at` string in `value` (at any depth) is a UTC timestamp
/// with exactly three fractional digits: `2026-11-21T05:00:38.000Z`.
#[track_caller]
pub fn assert_millisecond_timestamps(value: &Value) {
    fn walk(value: &Value, found: &mut usize) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    if let (true, Some(text)) = (key.ends_with("_at"), v.as_str()) {
                        let shape: String = text
                            .chars()
                            .map(|c| if c.is_ascii_digit() { '9' } else { c })
                            .collect();
                        assert_eq!(shape, "9999-99-99T99:99:99.999Z", "{key}: {text}");
                        *found += 1;
                    }
                    walk(v, found);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
            _ => {}
        }
    }
    let mut found = 0;
    walk(value, &mut found);
    assert!(found > 0, "no timestamps in {value}");
}

/// A phone number no other test uses (E.164, 14 digits).
pub fn unique_phone() -> String {
    format!("+3584{}", &uuid::Uuid::new_v4().as_u128().to_string()[..10])
}

/// A person with an active membership of `role` in `org`, made in the store.
pub async fn person(
    org: uuid::Uuid,
    role: shared::model::member::Role,
) -> shared::store::records::members::Membership {
    let new = shared::model::member::NewMember {
        first_name: "Test".into(),
        last_name: unique("Person"),
        phone: unique_phone(),
        role,
        site_id: None,
        login: None,
    };
    harness()
        .await
        .store()
        .members()
        .add(org, &new, None)
        .await
        .expect("add a person")
}

/// A plain HTTP/1.1 request to a loopback URL (moto's S3), for what a
/// browser or an integrator does outside the API: follow a signed link,
/// post an upload form. Returns the status and the body.
pub async fn http(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").expect("a loopback http URL");
    let (authority, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let mut stream = tokio::net::TcpStream::connect(authority)
        .await
        .expect("connect");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    stream.write_all(body).await.expect("send body");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let mut body = answer[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = unchunk(&body);
    }
    (status, body)
}

fn unchunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&data[..line_end]).unwrap().trim(), 16)
                .unwrap();
        if size == 0 {
            break;
        }
        out.extend_from_slice(&data[line_end + 2..line_end + 2 + size]);
        data = &data[line_end + 2 + size + 2..];
    }
    out
}

/// A `multipart/form-data` body of `fields` and a `file` part last.
pub fn multipart(
    boundary: &str,
    fields: &[(&str, &str)],
    file: Option<(&str, &str, &[u8])>,
) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    if let Some((filename, content_type, bytes)) = file {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

/// Makes a 12-byte PNG at `storage_path` load `id`'s waybill straight
/// through the store (the upload routes are tested on their own): the
/// load names it; no file is stored, and nothing is left for the sweeper.
pub async fn store_waybill(
    store: &shared::store::Store,
    org: uuid::Uuid,
    id: uuid::Uuid,
    storage_path: &str,
) -> shared::ApiResult<(shared::model::surplus::SurplusRecord, Option<String>)> {
    let waybill = shared::model::surplus::StoredWaybill {
        storage_path: storage_path.to_owned(),
        content_type: "image/png".into(),
        size: 12,
        uploaded_at: shared::model::now(),
        source: None,
    };
    let staged = shared::store::exactly_once::staged::StagedFile {
        path: storage_path.to_owned(),
        upload: format!("uploads/{org}/{id}/{}.png", uuid::Uuid::now_v7()),
        version: None,
        etag: None,
        content_type: "image/png".into(),
        owner: shared::store::exactly_once::staged::Owner::Surplus { org_id: org, id },
        created_at: shared::model::now(),
    };
    let written = store
        .surpluses()
        .set_waybill(org, id, &waybill, &staged)
        .await?;
    store.staged().done(storage_path).await?;
    Ok(written)
}

/// The lease of `idempotency_key` of key `key_id` in `table` ends now, as
/// it would in `LEASE`, if it is held by a request that never answered.
/// True when it was.
pub async fn lapse(table: &str, key_id: uuid::Uuid, idempotency_key: &str) -> bool {
    use aws_sdk_dynamodb::types::AttributeValue;
    use shared::store::engine::keys::{idempotency_pk, idempotency_sk};
    let db = aws_sdk_dynamodb::Client::new(&harness().await.sdk);
    let lapsed = db
        .update_item()
        .table_name(table)
        .key("pk", AttributeValue::S(idempotency_pk(key_id)))
        .key("sk", AttributeValue::S(idempotency_sk(idempotency_key)))
        .update_expression("SET #until = :zero")
        .condition_expression("attribute_exists(#token)")
        .expression_attribute_names("#until", "until")
        .expression_attribute_names("#token", "token")
        .expression_attribute_values(":zero", AttributeValue::N("0".into()))
        .send()
        .await;
    lapsed.is_ok()
}

/// The object at `path` in `bucket`: its bytes and content type, if there
/// is one.
pub async fn object(bucket: &str, path: &str) -> Option<(Vec<u8>, String)> {
    let got = shared::links::s3_client(&harness().await.sdk)
        .get_object()
        .bucket(bucket)
        .key(path)
        .send()
        .await
        .ok()?;
    let content_type = got.content_type().unwrap_or_default().to_owned();
    let bytes = got.body.collect().await.ok()?.into_bytes().to_vec();
    Some((bytes, content_type))
}
