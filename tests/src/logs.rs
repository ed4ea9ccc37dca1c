//! The log lines of the whole test run, and the secrets it handled.
//!
//! Every line the service logs during the tests (its crates at trace
//! level, the HTTP layers and clients at debug) goes to memory, for `logs`,
//! and to `<state dir>/test-logs/logs-<pid>`. Every API key a test
//! sends and every secret an answer carries (a field named `secret` or
//! `api_key`) goes to `secrets-<pid>` beside it.
//! After `cargo test`, `tests/secrets_in_logs.py` searches every log of the
//! run for every secret of the run (`make test` counts it in the totals).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use serde_json::Value;

static LOGS: LazyLock<Mutex<Vec<u8>>> = LazyLock::new(Mutex::default);

/// `<state dir>/<sub>`, made if missing.
fn dir(sub: &str) -> PathBuf {
    let state = std::env::var("STATE_DIR").unwrap_or_else(|_| ".local".into());
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(state)
        .join(sub);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// Writes `text` to `<state dir>/<sub>/<name>`.
pub(crate) fn write_in(sub: &str, name: &str, text: &str) {
    let path = dir(sub).join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn append(name: &str) -> Mutex<File> {
    append_in("test-logs", name)
}

/// `<state dir>/<sub>/<name>-<pid>`, opened to append (each test binary
/// writes its own file).
pub(crate) fn append_in(sub: &str, name: &str) -> Mutex<File> {
    let path = dir(sub).join(format!("{name}-{}", std::process::id()));
    Mutex::new(
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display())),
    )
}

static LOG_FILE: LazyLock<Mutex<File>> = LazyLock::new(|| append("logs"));
static SECRETS_FILE: LazyLock<Mutex<File>> = LazyLock::new(|| append("secrets"));

struct Capture;

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(bytes);
        // Unbuffered: the test process exits without running destructors.
        LOG_FILE.lock().unwrap().write_all(bytes)?;
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sends every log line of the test run to memory and to the run's log
/// file, and its traces to its collector (`traces`).
pub fn capture_logs() {
    let filter = tracing_subscriber::EnvFilter::new(
        "info,shared=trace,local=trace,orgs=trace,sites=trace,receiving_points=trace,\
         factories=trace,grants=trace,trucks=trace,members=trace,surpluses=trace,\
         reports=trace,places=trace,geocode=trace,support=trace,webhooks=trace,\
         webhook_dispatcher=trace,docs=trace,tower_http=trace,reqwest=debug,hyper_util=debug",
    );
    // And the run's traces to its collector, as a function's go to the
    // collector extension (`shared::telemetry::init`).
    let traces =
        shared::telemetry::traces::Traces::new(&crate::traces::collector().base, "api-tests")
            .expect("traces");
    let traces = shared::telemetry::traces::install(traces);
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(|| Capture)
                .with_ansi(false)
                .with_filter(filter),
        )
        .with(traces.map(shared::telemetry::traces::Traces::layer))
        .try_init();
}

/// The log lines written so far in this test run.
pub fn logs() -> String {
    String::from_utf8_lossy(&LOGS.lock().unwrap()).into_owned()
}

/// Records a secret of this run: no log line may hold it.
pub fn remember(secret: &str) {
    if secret.len() >= 16 {
        let _ = writeln!(SECRETS_FILE.lock().unwrap(), "{secret}");
    }
}

/// Records the secrets an answer carries, at any depth.
pub fn remember_answer(body: &Value) {
    match body {
        Value::Object(fields) => {
            for (name, value) in fields {
                match value {
                    Value::String(secret) if matches!(name.as_str(), "secret" | "api_key") => {
                        remember(secret)
                    }
                    _ => remember_answer(value),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(remember_answer),
        _ => {}
    }
}
