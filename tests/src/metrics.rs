//! The metric lines of the whole test run (`shared::metrics`): kept in
//! memory, to find a request's line, and written to
//! `<state dir>/test-logs/metrics-<pid>`, which `tests/metrics/check_emf.py`
//! checks against the embedded metric format after `cargo test` (`make
//! test` counts it in the totals).

use std::io::Write;
use std::sync::{LazyLock, Mutex};

use serde_json::Value;

static LINES: LazyLock<Mutex<Vec<String>>> = LazyLock::new(Mutex::default);

/// Sends every metric line of the test run to memory and to the run's
/// metrics file.
pub fn capture_metrics() {
    let file = crate::logs::append_in("test-logs", "metrics");
    shared::metrics::redirect(move |line| {
        LINES.lock().unwrap().push(line.to_owned());
        // Unbuffered: the test process exits without running destructors.
        let _ = writeln!(file.lock().unwrap(), "{line}");
    });
}

/// Every metric line so far, parsed.
pub fn lines() -> Vec<Value> {
    LINES
        .lock()
        .unwrap()
        .iter()
        .map(|line| serde_json::from_str(line).expect("a metric line is JSON"))
        .collect()
}

/// The metric line of the request whose `x-request-id` was `id`.
pub fn of_request(id: &str) -> Value {
    let found: Vec<Value> = lines()
        .into_iter()
        .filter(|line| line["request_id"] == id)
        .collect();
    assert_eq!(found.len(), 1, "one metric line for request {id}");
    found.into_iter().next().unwrap()
}

/// The metric lines of delivery `id`'s attempts, in order.
pub fn of_delivery(id: &str) -> Vec<Value> {
    lines()
        .into_iter()
        .filter(|line| line["delivery_id"] == id)
        .collect()
}
