//! The role check's record (`infra/checks/iam_calls.py`, run by `make
//! test`): with `AWS_CALLS_FILE` set (the tests, the dev server, the
//! watch smoke; never in AWS), every distinct call a caller makes is one
//! JSON line appended there: the caller (a request's route, `POST
//! /api/v1/sites`, or a job's name, `webhook-dispatcher`), the service
//! and operation, and each IAM action the call needs (`needed`). A call
//! with no caller (a test's own setup) is written with none and left
//! unjudged. Each line goes out in one append, so processes writing one
//! file side by side (the tests, the dev server) do not mix their lines.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use super::needed::Needed;

struct Recorder {
    file: std::fs::File,
    /// The lines this process wrote already.
    seen: HashSet<String>,
}

static RECORDER: OnceLock<Option<Mutex<Recorder>>> = OnceLock::new();

/// Each resource's name (a table's, a queue's URL, a secret's ARN) and
/// the setting that names it in AWS (`Config::named_resources`).
static NAMED: Mutex<BTreeMap<String, &'static str>> = Mutex::new(BTreeMap::new());

/// Notes which setting names each resource (an instance's configuration
/// does, as it starts).
pub fn named(resources: Vec<(&'static str, String)>) {
    if enabled() {
        let mut named = NAMED.lock().unwrap_or_else(|e| e.into_inner());
        named.extend(resources.into_iter().map(|(setting, name)| (name, setting)));
    }
}

/// `needed` as written: each resource with the setting that names it.
fn with_settings(needed: &[Needed]) -> Vec<serde_json::Value> {
    let named = NAMED.lock().unwrap_or_else(|e| e.into_inner());
    needed
        .iter()
        .map(|n| {
            let mut value = serde_json::json!(n);
            let resource = &mut value["resource"];
            let name = ["table", "bucket", "queue", "secret"]
                .iter()
                .find_map(|field| resource[*field].as_str());
            if let Some(setting) = name.and_then(|name| named.get(name)) {
                resource["setting"] = serde_json::json!(setting);
            }
            value
        })
        .collect()
}

fn recorder() -> Option<&'static Mutex<Recorder>> {
    RECORDER
        .get_or_init(|| {
            let path = std::env::var_os("AWS_CALLS_FILE")?;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .ok()?;
            Some(Mutex::new(Recorder {
                file,
                seen: HashSet::new(),
            }))
        })
        .as_ref()
}

/// Whether calls are recorded (`AWS_CALLS_FILE` is set).
pub fn enabled() -> bool {
    recorder().is_some()
}

/// Records a call `caller` made to `service`'s `operation` (under its
/// function's role), once per distinct line.
pub fn record(caller: Option<&str>, service: &str, operation: &str, needed: &[Needed]) {
    write(caller, None, service, operation, needed);
}

/// Records a request `caller` signed for someone else to send, under
/// `signer`'s policy (a presigned link: the template's `LinkSignerUser`).
pub fn record_signed(signer: &str, caller: Option<&str>, operation: &str, needed: &[Needed]) {
    write(caller, Some(signer), "S3", operation, needed);
}

fn write(
    caller: Option<&str>,
    signer: Option<&str>,
    service: &str,
    operation: &str,
    needed: &[Needed],
) {
    let Some(recorder) = recorder() else {
        return;
    };
    let line = serde_json::json!({
        "caller": caller,
        "signer": signer,
        "service": service,
        "operation": operation,
        "needed": with_settings(needed),
    })
    .to_string();
    let mut recorder = recorder.lock().unwrap_or_else(|e| e.into_inner());
    if recorder.seen.insert(line.clone()) {
        let _ = recorder.file.write_all(format!("{line}\n").as_bytes());
    }
}
